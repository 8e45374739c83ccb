"""Evidence cards: fields, canonical bytes, signatures, offline verification, legacy bytes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from harness import START, Session
from solver import Solver

from agora.store.migrations import apply_migrations
from agora.toolsets.chamber import cards, cards_cli, listings, store, verify
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.sealing import seal_reply
from agora.toolsets.chamber.signing import SigningKeyError, load_signer, signer_from_bytes

LEGACY = Path(__file__).parent / "fixtures" / "legacy_cards"
KEY = signer_from_bytes(b"42" * 32)
CARD_FIELDS = {
    "evidence_version", "kind", "card_id", "toolset_id", "sealed_at", "date", "suite",
    "seed_commitment", "outcome", "locks", "actions_used", "action_limit", "hints_used",
    "wrong_submissions", "elapsed_seconds", "identity", "preflight", "schema_bundle_hash",
    "transcript_hash", "transcript_length", "allies", "publication_notice", "seed_source",
    "practice", "sealed_by",
}  # fmt: skip


def sealed(seed: str = "card", signer=None, solve: bool = True):
    s = Session(seed=seed)
    if solve:
        Solver(s.act).run()
    return s, s.seal(signer=signer)


def test_a_card_carries_every_field_the_issue_lists():
    s, outcome = sealed()
    card = json.loads(outcome.card.body)
    assert set(card) == CARD_FIELDS
    assert card["evidence_version"] == "0.2"
    assert card["toolset_id"] == "scoreia-chamber-tools/0.3.0"
    assert card["date"] == "2026-11-30"
    assert card["sealed_at"] == "2026-11-30T12:00:00Z"
    assert card["suite"] == {"id": "chambre-chrono-v0", "generation": "001", "engine": "chamber"}
    assert card["outcome"] == "solved"
    assert card["actions_used"] == s.entity.attempt.action_index
    assert card["identity"]["assurance"] == "participant_claimed"
    assert card["schema_bundle_hash"] == default_contract().schema_bundle_hash
    assert card["transcript_hash"] == "sha256:" + s.entity.attempt.head
    assert card["transcript_length"] == card["actions_used"]


def test_the_seed_is_committed_never_revealed():
    s, outcome = sealed(seed="a-secret-seed", solve=False)
    assert b"a-secret-seed" not in outcome.card.body
    a = s.entity.attempt
    expected = hashlib.sha256(f"{a.seed_salt}:{a.suite_id}:a-secret-seed".encode()).hexdigest()
    assert json.loads(outcome.card.body)["seed_commitment"] == "sha256:" + expected


def test_card_bodies_are_canonical_json():
    _, outcome = sealed(solve=False)
    assert rfc8785.dumps(json.loads(outcome.card.body)) == outcome.card.body


def test_a_signed_card_verifies_offline_and_tampering_is_caught():
    _, outcome = sealed(signer=KEY, solve=False)
    doc = cards.publish(outcome.card.body, outcome.card.signature)
    ok = verify.verify_document(doc, [KEY.public_key_hex])
    assert ok.ok
    assert ok.hash_ok
    assert ok.signature == "valid"
    assert ok.status_signed
    assert ok.key_id == KEY.key_id
    assert verify.verify_document(doc, [KEY.public_key_hex]).trusted is True
    assert verify.verify_document(doc, ["ed25519:0000000000000000"]).ok is False
    pretty = json.dumps(json.loads(doc), indent=2).encode()
    assert verify.verify_document(pretty, [KEY.public_key_hex]).ok  # formatting does not matter
    forged = json.loads(doc)
    forged["card"]["outcome"] = "solved"
    assert verify.verify_document(json.dumps(forged).encode()).hash_ok is False
    forged = json.loads(doc)
    forged["card_sha256"] = cards.sha256_tag(rfc8785.dumps({**forged["card"], "outcome": "x"}))
    forged["card"]["outcome"] = "x"
    assert verify.verify_document(json.dumps(forged).encode()).signature == "invalid"
    other = signer_from_bytes(b"43" * 32)
    forged = json.loads(doc)
    forged["signature"]["public_key"] = other.public_key_hex
    assert verify.verify_document(json.dumps(forged).encode()).signature == "invalid"


def test_a_document_naming_a_key_twice_is_not_a_card():
    # Python keeps the last "card" (the genuine one, which verifies); a reader keeping the
    # first sees the forged one. Neither may pass.
    _, outcome = sealed(signer=KEY, solve=False)
    doc = cards.publish(outcome.card.body, outcome.card.signature)
    forged = {**json.loads(outcome.card.body), "outcome": "solved"}
    twice = b'{"card":' + json.dumps(forged).encode() + b"," + doc[1:]
    assert json.loads(twice)["card"]["outcome"] == json.loads(outcome.card.body)["outcome"]
    with pytest.raises(cards.CardFormatError, match="'card' appears twice"):
        verify.verify_document(twice, [KEY.public_key_hex])
    inner = doc.replace(b'{"card":{', b'{"card":{"outcome":"solved",', 1)
    with pytest.raises(cards.CardFormatError, match="'outcome' appears twice"):
        verify.verify_document(inner, [KEY.public_key_hex])


def test_a_signed_statement_passed_off_as_a_card_is_not_one():
    # An unschemed (legacy) signature covers the "card" bytes: given the statement a
    # schemed signature covers as the card, the real signature would check out over it.
    _, outcome = sealed(signer=KEY, solve=False)
    sig = outcome.card.signature
    assert sig is not None
    body_hash = cards.sha256_tag(outcome.card.body)
    statement = json.loads(cards.statement(body_hash, sig["key_id"], sig["signed_at"]))
    doc = {
        "card": statement,
        "card_sha256": cards.sha256_tag(rfc8785.dumps(statement)),
        "evidence_status": "signed",
        "signature": {k: v for k, v in sig.items() if k != "scheme"},
    }
    with pytest.raises(cards.CardFormatError, match="not a card"):
        verify.verify_document(json.dumps(doc).encode(), [KEY.public_key_hex])


def test_an_unsigned_card_is_pending_and_does_not_verify():
    _, outcome = sealed(solve=False)
    doc = cards.publish(outcome.card.body, None)
    assert json.loads(doc)["evidence_status"] == "pending_signature"
    result = verify.verify_document(doc)
    assert result.hash_ok
    assert result.signature == "missing"
    assert not result.ok
    with pytest.raises(cards.CardFormatError):
        verify.verify_document(b"not json")
    with pytest.raises(cards.CardFormatError):
        verify.verify_document(b'{"no": "card"}')


def _db(upto: int | None = None) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    steps = store.MIGRATIONS if upto is None else store.MIGRATIONS[:upto]
    apply_migrations(conn, steps)
    return conn


def _commit(conn, writes):
    conn.execute("BEGIN")
    for sql, params in writes:
        conn.execute(sql, params)
    conn.execute("COMMIT")


def test_operator_signing_adds_a_signature_and_never_changes_the_body(tmp_path):
    s, outcome = sealed(solve=False)
    db = tmp_path / "agora.db"
    conn = sqlite3.connect(db, isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS)
    _commit(conn, s.writes)
    assert store.pending_cards(conn) == [(outcome.card.card_id, outcome.card.body)]
    conn.close()
    key = tmp_path / "key.hex"
    key.write_text("42" * 32 + "\n")
    lines: list[str] = []
    assert cards_cli.cmd_sign(db, key, out=lines.append) == 0
    assert lines[0] == f"signed 1 card(s) with {KEY.key_id}"
    conn = sqlite3.connect(db)
    document = store.card_document(conn, outcome.card.card_id)
    assert store.load_card(conn, outcome.card.card_id).body == outcome.card.body
    assert store.pending_cards(conn) == []
    conn.close()
    saved = tmp_path / "card.json"
    saved.write_bytes(document)
    out: list[str] = []
    assert cards_cli.cmd_verify(saved, trusted_keys=[KEY.public_key_hex], out=out.append) == 0
    assert out[2] == f"  valid signature, trusted key {KEY.key_id} via --trust"
    unknown = "0" * 64  # well formed, but not the key that signed
    assert cards_cli.cmd_verify(saved, trusted_keys=[unknown], out=out.append) == 1
    assert cards_cli.cmd_sign(db, key, out=lines.append) == 0
    assert lines[-1] == f"signed 0 card(s) with {KEY.key_id}"


def test_cli_reports_unusable_keys_and_files(tmp_path):
    out: list[str] = []
    assert cards_cli.cmd_sign(tmp_path / "x.db", tmp_path / "missing.pem", err=out.append) == 2
    assert cards_cli.cmd_verify(tmp_path / "missing.json", err=out.append) == 2
    (tmp_path / "bad.json").write_text("{}")
    assert cards_cli.cmd_verify(tmp_path / "bad.json", err=out.append) == 2
    _, outcome = sealed(solve=False)
    (tmp_path / "unsigned.json").write_bytes(cards.publish(outcome.card.body, None))
    assert cards_cli.cmd_verify(tmp_path / "unsigned.json", out=out.append) == 1


def test_signing_keys_load_from_pem_or_hex(tmp_path):
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "k.pem").write_bytes(pem)
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    (tmp_path / "k.hex").write_text(raw.hex())
    assert (
        load_signer(tmp_path / "k.pem").public_key_hex
        == load_signer(tmp_path / "k.hex").public_key_hex
    )
    (tmp_path / "short.hex").write_text("abcd")
    (tmp_path / "junk.pem").write_text("-----BEGIN NONSENSE-----")
    for name in ("short.hex", "junk.pem", "absent"):
        with pytest.raises(SigningKeyError):
            load_signer(tmp_path / name)
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(SigningKeyError, match="Ed25519"):
        signer_from_bytes(other)


def test_legacy_cards_keep_their_bytes_through_migration_and_signing():
    fixtures = sorted(LEGACY.glob("*.json"))
    assert len(fixtures) == 3
    originals = {p.stem: p.read_bytes() for p in fixtures}
    conn = _db(upto=1)  # the 0.2.0-era table
    legacy_id = default_contract().legacy_toolset_id
    imported = cards_cli.import_legacy_cards(conn, list(originals.values()), legacy_id)
    assert sorted(imported) == sorted(originals)
    apply_migrations(conn, store.MIGRATIONS)  # upgrade to the 0.3.0 schema
    s, _outcome = sealed(solve=False)
    _commit(conn, s.writes)
    cards_cli.sign_pending_cards(conn, KEY)
    assert cards_cli.import_legacy_cards(conn, list(originals.values()), legacy_id) == []
    for card_id, original in originals.items():
        stored = conn.execute(
            "SELECT document FROM chamber_cards WHERE card_id = ?", (card_id,)
        ).fetchone()[0]
        assert stored == original
        assert store.card_document(conn, card_id) == original
    listing = listings.list_cards(conn, "2026-01-14")
    assert listing == [{"card_id": "card-20260114-5d1c0e2f9a7b3c41",
                        "toolset_id": "scoreia-chamber-tools/0.2.0",
                        "evidence_status": "legacy"}]  # fmt: skip
    assert verify.verify_document(originals["card-20260114-5d1c0e2f9a7b3c41"]).hash_ok


def test_only_legacy_cards_are_imported_as_legacy():
    _, outcome = sealed(solve=False)
    with pytest.raises(cards.CardFormatError):
        cards.legacy_fields(cards.publish(outcome.card.body, None), "scoreia-chamber-tools/0.2.0")
    with pytest.raises(cards.CardFormatError):
        cards.legacy_fields(b"[]", "scoreia-chamber-tools/0.2.0")


def test_the_store_refuses_to_change_or_delete_a_card():
    s, outcome = sealed(signer=KEY, solve=False)
    conn = _db()
    _commit(conn, s.writes)
    card_id = outcome.card.card_id
    for sql in (
        "UPDATE chamber_cards SET body = x'00' WHERE card_id = ?",
        "UPDATE chamber_cards SET outcome = 'solved' WHERE card_id = ?",
        "UPDATE chamber_cards SET signature = '{}' WHERE card_id = ?",
        "DELETE FROM chamber_cards WHERE card_id = ?",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="chamber cards"):
            conn.execute(sql, (card_id,))
    assert store.load_card(conn, card_id).body == outcome.card.body


def test_a_malformed_signing_key_names_both_accepted_forms():
    with pytest.raises(SigningKeyError) as err:
        signer_from_bytes(b"-----BEGIN NONSENSE-----")
    assert "PEM" in str(err.value)
    assert "64 hex digits" in str(err.value)


@pytest.mark.parametrize("key", ["deadbeef", "ed25519:nope", "ed25519:" + "0" * 15, "g" * 64])
def test_verify_refuses_a_trusted_key_that_is_no_key(tmp_path, key):
    _, outcome = sealed(solve=False)
    saved = tmp_path / "card.json"
    saved.write_bytes(cards.publish(outcome.card.body, None))
    out: list[str] = []
    assert cards_cli.cmd_verify(saved, trusted_keys=[key], err=out.append) == 2
    assert out == [
        f"cannot verify: --trust {key!r} is not a key: give an Ed25519 public key as 64 hex digits"
    ]
    listed = tmp_path / "trusted.txt"
    listed.write_text(f"{key}\n")
    out.clear()
    assert cards_cli.cmd_verify(saved, trust_files=[str(listed)], err=out.append) == 2
    assert out[0].startswith(f"cannot verify: {listed} line 1: {key!r} is not a key")


def test_a_seal_names_its_card_by_a_url_an_agent_can_open():
    _, outcome = sealed(solve=False)
    card_id = outcome.card.card_id
    for base in ("https://cards.example", "https://cards.example/"):
        assert (
            seal_reply(outcome, None, base)["card_url"] == f"https://cards.example/cards/{card_id}"
        )
    assert seal_reply(outcome, None)["card_url"] == f"/cards/{card_id}"  # embedded: no URL


def test_cards_sealed_before_the_listing_indexes_are_listed_after_the_upgrade():
    # Migration 5 adds the listings' indexes to a table that may already hold cards: the
    # cards of a version 4 database are listed after it, in the order sealed, by the index.
    conn = _db(upto=4)
    assert [m.version for m in store.MIGRATIONS[:4] if m.component == "chamber"][-1] == 4
    sealed_order = []
    for n in range(3):  # sealed one minute apart, latest first, so the card ids decide nothing
        wall = START + dt.timedelta(minutes=3 - n)
        s = Session(seed=f"seed-{n}", handle=f"chl-{n:016x}", wall=wall)
        outcome = s.seal()
        _commit(conn, s.writes)
        sealed_order.insert(0, outcome.card.card_id)
    indexes = {row[1] for row in conn.execute("PRAGMA index_list(chamber_cards)")}
    assert "chamber_cards_in_order" not in indexes
    apply_migrations(conn, store.MIGRATIONS)
    indexes = {row[1] for row in conn.execute("PRAGMA index_list(chamber_cards)")}
    assert {"chamber_cards_in_order", "chamber_cards_board_rows"} <= indexes
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    listed = listings.list_cards(conn, "2026-11-30")
    assert sealed_order != sorted(sealed_order)  # (card ids are fixed by handle and seed)
    assert [c["card_id"] for c in listed] == sealed_order
    page = listings.list_cards(conn, "2026-11-30", after=listed[0]["card_id"], limit=1)
    assert [c["card_id"] for c in page] == [listed[1]["card_id"]]
