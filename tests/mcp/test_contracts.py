"""The committed contracts against their seeds, and the loader that turns them into ToolSpecs."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest

from agora.mcp.contracts import Contract, ContractError, load_contract, parse_contract

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
CONTRACTS = REPO / "src" / "agora" / "contracts"
TOOLSETS = ("chamber", "chess", "router")

needs_seeds = pytest.mark.skipif(
    not SEEDS.is_dir(), reason=f"needs: the seed documents at {SEEDS} (../shared/seeds)"
)


def _extractor():
    spec = importlib.util.spec_from_file_location(
        "extract_contracts", REPO / "scripts" / "extract_contracts.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def extracted() -> dict[str, str]:
    if not SEEDS.is_dir():
        pytest.skip(f"needs: the seed documents at {SEEDS} (../shared/seeds)")
    return _extractor().extract_all(SEEDS)


@pytest.mark.parametrize("toolset", [pytest.param(t, id=t) for t in TOOLSETS])
def test_committed_contract_is_what_its_seed_extracts_to(toolset, extracted):
    committed = (CONTRACTS / f"{toolset}.json").read_text(encoding="utf-8")
    assert committed == extracted[f"{toolset}.json"], "run scripts/extract_contracts.py"


@needs_seeds
def test_check_mode_reports_drift_and_accepts_fresh_output(tmp_path, capsys):
    script = _extractor()
    assert script.main(["--seeds", str(SEEDS), "--out", str(tmp_path), "--check"]) == 1
    assert script.main(["--seeds", str(SEEDS), "--out", str(tmp_path)]) == 0
    assert script.main(["--seeds", str(SEEDS), "--out", str(tmp_path), "--check"]) == 0
    stale = tmp_path / "chess.json"
    stale.write_text(stale.read_text(encoding="utf-8").replace("e2", "e3"), encoding="utf-8")
    assert script.main(["--seeds", str(SEEDS), "--out", str(tmp_path), "--check"]) == 1
    assert "chess.json" in capsys.readouterr().err


@needs_seeds
def test_chamber_contract_rebuilds_the_seed_document_exactly():
    contract = load_contract("chamber")
    seed = json.loads(next(SEEDS.glob("000_*.txt")).read_text(encoding="utf-8"))
    rebuilt = dict(contract.data["document"])
    rebuilt["canonical_tools"] = [
        {
            "name": tool.name,
            "purpose": tool.extra["purpose"],
            "description": tool.description,
            "aliases": list(tool.aliases),
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
        }
        for tool in contract.tools.values()
    ]
    assert rebuilt == seed
    assert contract.data["schema_bundle_hash"] == _extractor().schema_bundle_hash(seed)


@needs_seeds
def test_chess_input_schemas_are_the_seed_json_verbatim():
    text = next(SEEDS.glob("001_*.txt")).read_text(encoding="utf-8")
    decoder, seen = json.JSONDecoder(), {}
    for part in text.split("View tool JSON\n")[1:]:
        entry, _ = decoder.raw_decode(part)
        seen[entry["name"]] = entry["inputSchema"]
    contract = load_contract("chess")
    assert {name: tool.input_schema for name, tool in contract.tools.items()} == seen


def test_chess_output_schemas_come_from_the_chess_structs_when_they_exist():
    contract = load_contract("chess")
    try:
        from agora.toolsets.chess.schemas import OUTPUT_SCHEMAS
    except ModuleNotFoundError:
        assert all(tool.output_schema is None for tool in contract.tools.values())
    else:
        assert {n: t.output_schema for n, t in contract.tools.items()} == OUTPUT_SCHEMAS


@pytest.mark.parametrize(
    ("toolset", "tools", "aliases"),
    [
        pytest.param("chamber", 5, 3, id="chamber"),
        pytest.param("chess", 4, 0, id="chess"),
        pytest.param("router", 20, 0, id="router"),
    ],
)
def test_contract_counts(toolset, tools, aliases):
    contract = load_contract(toolset)
    assert (len(contract.tools), len(contract.aliases)) == (tools, aliases)
    assert len(contract.tools_list()) == tools


def test_router_availability_matches_the_seed_summary():
    contract = load_contract("router")
    counts: dict[str, int] = {}
    for tool in contract.tools.values():
        facts = tool.extra
        counts[facts["availability"]] = counts.get(facts["availability"], 0) + 1
        assert facts["risk"] in ("R0", "R1", "R2")
        assert facts["required_capabilities"]
        assert facts["fallback"]
        assert bool(facts["local_conditions"]) == (facts["availability"] == "conditional-local")
    assert counts == {
        "local-ready": 10,
        "conditional-local": 5,
        "verified-host-required": 2,
        "configured-adapter-required": 3,
    }
    assert counts == contract.data["availability_counts"]


def _schemas():
    for toolset in TOOLSETS:
        for tool in load_contract(toolset).tools.values():
            yield pytest.param(tool.input_schema, id=f"{toolset}.{tool.name}.input")
            if tool.output_schema is not None:
                yield pytest.param(tool.output_schema, id=f"{toolset}.{tool.name}.output")


@pytest.mark.parametrize("schema", list(_schemas()))
def test_every_schema_is_valid_under_its_metaschema(schema):
    # No $schema means 2020-12, the MCP default dialect.
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    assert schema["type"] == "object"


@pytest.mark.parametrize("toolset", [pytest.param(t, id=t) for t in TOOLSETS])
def test_names_are_unique_and_aliases_resolve_to_canonical_tools(toolset):
    contract = load_contract(toolset)
    listed = [entry["name"] for entry in contract.tools_list()]
    assert len(listed) == len(set(listed)) == len(contract.tools)
    assert not set(contract.aliases) & set(listed)
    for alias, canonical in contract.aliases.items():
        assert contract.resolve(alias) is contract.tools[canonical]
        assert contract.is_alias(alias)
    assert contract.resolve("no_such_tool") is None


def test_chamber_aliases_are_answered_but_not_listed():
    contract = load_contract("chamber")
    assert contract.aliases == {
        "start_challenge": "enter_open_challenge",
        "challenge_action": "chamber_action",
        "finish_challenge": "seal_attempt",
    }
    assert "start_challenge" not in {entry["name"] for entry in contract.tools_list()}
    assert contract.data["aliases_supported_until"] == "2027-02-21"


def test_tools_list_entries_are_copies():
    contract = load_contract("chess")
    entry = contract.tools_list()[0]
    entry["inputSchema"]["properties"]["mutated"] = {}
    assert "mutated" not in contract.tools_list()[0]["inputSchema"]["properties"]


def test_load_contract_is_cached_and_refuses_unknown_names():
    assert load_contract("chess") is load_contract("chess")
    with pytest.raises(ContractError, match="no contract named"):
        load_contract("nonexistent")
    with pytest.raises(ContractError, match="not a toolset name"):
        load_contract("../chess")


def _minimal(**changes) -> dict:
    data = {
        "format": 1,
        "toolset": "demo",
        "contract_id": "demo/1",
        "tools": [
            {"name": "a", "description": "A", "inputSchema": {"type": "object"}, "aliases": ["b"]},
            {"name": "c", "description": "C", "inputSchema": {"type": "object"}},
        ],
        "aliases": {"b": "a"},
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(_minimal(format=2), "format", id="format"),
        pytest.param(_minimal(toolset=""), "toolset", id="no-toolset"),
        pytest.param(_minimal(aliases={"z": "nope"}), "unknown tool", id="alias-dangling"),
        pytest.param(_minimal(aliases={"b": "c"}), "alias 'b' twice", id="alias-conflict"),
        pytest.param(_minimal(aliases={"c": "a"}), "shadow", id="alias-shadows"),
        pytest.param(
            _minimal(tools=[{"name": "a", "description": "", "inputSchema": {}}] * 2),
            "twice",
            id="duplicate-tool",
        ),
        pytest.param(
            _minimal(tools=[{"name": "a", "description": "", "inputSchema": {"type": "array"}}]),
            "type",
            id="input-not-object",
        ),
        pytest.param(
            _minimal(tools=[{"name": "a", "description": "", "input_schema": {}}]),
            "unknown keys",
            id="unknown-key",
        ),
    ],
)
def test_parse_contract_rejects_malformed_contracts(data, problem):
    with pytest.raises(ContractError, match=problem):
        parse_contract(data)


def test_parse_contract_builds_tool_specs():
    contract = parse_contract(_minimal())
    assert isinstance(contract, Contract)
    assert list(contract.tools) == ["a", "c"]
    assert contract.resolve("b") is contract.tools["a"]
    assert contract.tools["a"].aliases == ("b",)
    assert contract.tools["c"].to_mcp() == {
        "name": "c",
        "description": "C",
        "inputSchema": {"type": "object"},
    }


def _agora_imports(path: Path, seen: set[Path]) -> set[str]:
    """Every module imported by ``path`` and, transitively, by the agora modules it imports."""
    seen.add(path)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    for name in sorted(n for n in names if n.startswith("agora.")):
        target = REPO / "src" / Path(*name.split(".")).with_suffix(".py")
        if target.exists() and target not in seen:
            names |= _agora_imports(target, seen)
    return names


@pytest.mark.parametrize("module", [pytest.param(m, id=m) for m in ("contracts", "validation")])
def test_contracts_and_validation_never_import_trio(module):
    # Static, because importing any agora submodule runs agora/__init__ (the embedding API).
    imported = _agora_imports(REPO / "src" / "agora" / "mcp" / f"{module}.py", set())
    assert not {name.split(".")[0] for name in imported} & {"trio", "trio_websocket", "jsonschema"}
