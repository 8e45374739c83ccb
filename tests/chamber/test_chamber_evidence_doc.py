"""docs/evidence.md is enough to check a card with one's own code.

A sceptical reader had to guess what a card's signature covers (they tried the card's bytes,
its hash, and several statements before one matched). `check` below is written from the
page's words alone, with `cryptography` and `rfc8785` and no agora code; it reads the
statement's members, the scheme and the key id example from the page itself, so a page
that stops saying what the server signs fails here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from harness import Session, signed_before_the_scheme

from agora.toolsets.chamber import cards, verify
from agora.toolsets.chamber.commands import CallForHelp, Quarantine
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.signing import signer_from_bytes

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "evidence.md").read_text()
OPERATOR = signer_from_bytes(b"42" * 32)


def _statement_template() -> dict[str, str]:
    """The statement object the page shows (its one fenced JSON block)."""
    blocks = re.findall(r"```json\n(.*?)```", PAGE, re.S)
    assert len(blocks) == 1, "the page shows the signed statement as one JSON block"
    template: dict[str, str] = json.loads(blocks[0])
    return template


def _hash(card: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(card)).hexdigest()


def _key_id(public_hex: str) -> str:
    return "ed25519:" + hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()[:16]


def _ed25519_ok(public_hex: str, value: str, message: bytes) -> bool:
    signature = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex)).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def check(document: dict[str, Any], trusted_public_keys: set[str]) -> bool:
    """The page's signature checks, 1 to 7 (and its rule for blocks without a scheme)."""
    template = _statement_template()
    sig = document.get("signature")
    if set(document) != {"card", "card_sha256", "evidence_status", "signature"}:
        return False
    card_hash = _hash(document["card"])
    if document["card_sha256"] != card_hash or not isinstance(sig, dict):
        return False
    if sig["alg"] != "Ed25519" or sig["key_id"] != _key_id(sig["public_key"]):
        return False
    if "scheme" not in sig:  # signed before the scheme: over the card's bytes
        if set(sig) != {"alg", "key_id", "public_key", "signed_at", "value"}:
            return False
        message = rfc8785.dumps(document["card"])
    else:
        if set(sig) != {"alg", "evidence_status", "key_id", "public_key", "scheme",
                        "signed_at", "value"}:  # fmt: skip
            return False
        if sig["scheme"] != template["scheme"]:
            return False
        if not document["evidence_status"] == sig["evidence_status"] == "signed":
            return False
        statement = {k: card_hash if k == "card_sha256" else sig[k] for k in template}
        message = rfc8785.dumps(statement)
    if not _ed25519_ok(sig["public_key"], sig["value"], message):
        return False
    return sig["public_key"] in trusted_public_keys


def test_the_page_states_what_the_server_signs():
    template = _statement_template()
    assert sorted(template) == ["card_sha256", "evidence_status", "key_id", "scheme", "signed_at"]
    assert template["scheme"] == cards.SCHEME
    assert template["evidence_status"] == cards.SIGNED_STATUS
    public, key_id = re.search(r"public key\s+`([0-9a-f]{64})`\s+has the key id\s+`([^`]+)`",
                               PAGE).groups()  # fmt: skip
    assert (public, key_id) == (OPERATOR.public_key_hex, OPERATOR.key_id)
    assert _key_id(public) == key_id


def test_a_real_signed_card_verifies_with_code_written_from_the_page():
    outcome = Session(seed="doc").seal(signer=OPERATOR)
    document = json.loads(cards.publish(outcome.card.body, outcome.card.signature))
    assert check(document, {OPERATOR.public_key_hex})
    assert not check(document, set())  # a valid signature by a key not trusted
    stranger = signer_from_bytes(b"17" * 32)
    assert not check(document, {stranger.public_key_hex})


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: d["card"].update(outcome="solved"), id="card"),
        pytest.param(lambda d: d.update(evidence_status="pending_signature"), id="status"),
        pytest.param(lambda d: d["signature"].update(signed_at="2020-01-01T00:00:00Z"), id="at"),
        pytest.param(lambda d: d.update(note="trusted"), id="added"),
    ],
)
def test_the_pages_checks_catch_an_edit(edit):
    outcome = Session(seed="doc").seal(signer=OPERATOR)
    document = json.loads(cards.publish(outcome.card.body, outcome.card.signature))
    edit(document)
    assert not check(document, {OPERATOR.public_key_hex})


def test_a_card_signed_before_the_scheme_verifies_by_the_pages_rule():
    document = signed_before_the_scheme(OPERATOR)
    assert check(document, {OPERATOR.public_key_hex})
    assert verify.verify_document(json.dumps(document).encode(), [OPERATOR.public_key_hex]).ok


def _documented_fields() -> set[str]:
    """The fields the page's "The card's fields" table names (first column)."""
    table = PAGE.split("## The card's fields", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row)}


def test_the_page_explains_every_field_a_card_carries_and_how_to_recompute_its_hashes():
    """Tester finding: seed_commitment, room_id, publication_notice, schema_bundle_hash,
    evidence_version, allies, sealed_by, identity.assurance and quarantine went unexplained."""
    s = Session(seed="practice-42", seed_source="participant")
    s.send(CallForHelp(ally="claude-5", seed="ally-seed"))
    practice = json.loads(s.seal(next_candidate="gpt-5.7").card.body)
    stopped = Session(seed="stopped", handle="chl-00000000000000aa")
    quarantined = json.loads(stopped.send(Quarantine(reason="clues unread")).card.body)
    fields = set(practice) | set(quarantined)
    assert {"room_id", "publication_notice", "next_candidate", "allies", "quarantine"} <= fields
    assert fields <= _documented_fields()
    assert "`assurance`" in PAGE
    assert "`quarantined`" in PAGE
    # The recipes the page gives, recomputed: the room id from the seed, and the notice.
    room = hashlib.sha256(b"scoreia-chamber-room\nchambre-chrono-v0\npractice-42").hexdigest()
    assert practice["room_id"] == "sha256:" + room
    assert "scoreia-chamber-room`, newline, the suite id, newline, the seed" in PAGE
    notice = default_contract().publication_notice
    assert practice["publication_notice"] == _hash(dict(notice or {}))
    salt = s.entity.attempt.seed_salt
    commitment = hashlib.sha256(f"{salt}:chambre-chrono-v0:practice-42".encode()).hexdigest()
    assert practice["seed_commitment"] == "sha256:" + commitment
    assert "`SALT:SUITE:SEED`" in PAGE
