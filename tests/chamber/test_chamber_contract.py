"""The chamber reads its codes, limits, suites, aliases and schema bundle from the contract."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from agora.mcp.contracts import load_contract
from agora.toolsets.chamber import build_toolset, toolset
from agora.toolsets.chamber.contract import contract_from_data, default_contract
from agora.toolsets.chamber.replies import CODES

SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_40e35d97c34d900d.txt"


def test_contract_exposes_the_seed_facts():
    c = default_contract()
    assert c.toolset_id == "scoreia-chamber-tools/0.3.0"
    assert c.legacy_toolset_id == "scoreia-chamber-tools/0.2.0"
    assert c.limits.max_actions == 64
    assert c.limits.attempt_ttl_seconds == 7200
    assert [s.id for s in c.suites] == ["chambre-chrono-v0", "chambre-atelier-v0"]
    assert c.suite(None).id == "chambre-chrono-v0"
    assert c.suite("chambre-atelier-v0").engine == "atelier"
    assert c.suite("nope") is None
    assert c.aliases == {
        "start_challenge": "enter_open_challenge",
        "challenge_action": "chamber_action",
        "finish_challenge": "seal_attempt",
    }
    assert set(c.publication_notice) >= {"en", "fr"}


def test_every_code_the_toolset_answers_is_a_contract_code_and_back():
    assert default_contract().error_codes - {"evidence_pending"} == CODES


def test_schema_bundle_hash_matches_the_contract_file():
    data = load_contract("chamber").data
    assert default_contract().schema_bundle_hash == data["schema_bundle_hash"]
    assert default_contract().schema_bundle_hash.startswith("sha256:")


@pytest.mark.skipif(not SEED.exists(), reason="needs: the seed documents at ../shared/seeds")
def test_contract_file_and_seed_give_the_same_contract():
    from_seed = contract_from_data(json.loads(SEED.read_text()))
    c = default_contract()
    assert from_seed.schema_bundle_hash == c.schema_bundle_hash
    assert from_seed.error_codes == c.error_codes
    assert from_seed.aliases == c.aliases
    for name in c.tool_names:
        assert from_seed.output_schema(name) == c.output_schema(name)


def test_schema_bundle_hash_changes_with_any_payload_field():
    doc = copy.deepcopy(dict(default_contract().document))
    doc["limits"] = {**doc["limits"], "max_actions": 65}
    assert contract_from_data(doc).schema_bundle_hash != default_contract().schema_bundle_hash


def test_toolset_maps_every_canonical_name_and_alias():
    ts = toolset()
    c = default_contract()
    assert set(ts.handlers) == set(c.tool_names) | set(c.aliases)
    assert ts.aliases == dict(c.aliases)
    assert ts.name == "chamber"
    assert [m.version for m in ts.migrations] == [1, 2, 3, 4, 5, 6]
    assert {r.pattern for r in ts.routes} == {
        "/cards",
        "/cards/{card_id}",
        "/chamber/keys",
        "/chamber/pool",
        "/board",
        "/board/cards",
    }


def test_a_contract_missing_a_code_is_refused_at_build_time():
    doc = copy.deepcopy(dict(default_contract().document))
    doc["error_codes"] = [c for c in doc["error_codes"] if c != "host_required"]
    with pytest.raises(ValueError, match="host_required"):
        build_toolset(contract_from_data(doc))


def test_contract_from_data_rejects_other_documents():
    with pytest.raises(ValueError, match="document"):
        contract_from_data({"tools": []})
    with pytest.raises(ValueError, match="without tools"):
        contract_from_data({"document": {"toolset_id": "x"}})
