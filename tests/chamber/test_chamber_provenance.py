"""Seed provenance: a room the participant chose cannot pass for a fresh one.

The signed card says who drew the seed; a chosen seed's card carries an unsalted room id
that links every replay of that room; listings and pages mark such cards as practice.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from harness import Session

from agora.store.migrations import apply_migrations
from agora.toolsets.chamber import cards, listings, store, verify
from agora.toolsets.chamber.signing import signer_from_bytes
from agora.toolsets.chamber.web import card_html

KEY = signer_from_bytes(b"42" * 32)


async def _sealed_card(agent, **entry) -> dict:
    handle = (await agent.enter(**entry))["attempt_handle"]
    await agent.tool("chamber_action", challenge_handle=handle, op="look")
    return (await agent.tool("seal_attempt", challenge_handle=handle))["card"]


async def test_replays_of_a_chosen_seed_are_linked_and_marked_practice(agent):
    first = await _sealed_card(agent, seed="x")
    second = await _sealed_card(agent, seed="x")
    other = await _sealed_card(agent, seed="y")
    for card in (first, second, other):
        assert card["seed_source"] == "participant"
        assert card["practice"] is True
    assert first["room_id"] == second["room_id"] != other["room_id"]
    assert first["room_id"].startswith("sha256:")
    # The salted commitment still differs per attempt; only the room id links them.
    assert first["seed_commitment"] != second["seed_commitment"]


async def test_entering_on_a_chosen_seed_says_the_run_is_practice_and_will_not_rank(agent):
    """Tester finding: the entry said nothing of it; only the sealed card did."""
    for seed in ("practice-42", "none", " "):  # what a model filling in every argument sends
        entered = await agent.enter(seed=seed)
        assert entered["practice"] is True
        assert entered["note"].startswith("Practice run: you chose this room's seed")
        assert "will not rank on the board" in entered["note"]
        assert "without seed" in entered["note"]
    fresh = await agent.enter()
    assert "practice" not in fresh
    assert "note" not in fresh


async def test_server_seeds_are_not_practice_and_carry_no_room_id(agent):
    card = await _sealed_card(agent)
    assert card["seed_source"] == "server"
    assert card["practice"] is False
    assert "room_id" not in card


async def test_listings_and_pages_mark_practice_cards(agent, runtime):
    chosen = await _sealed_card(agent, seed="x")
    drawn = await _sealed_card(agent)
    rows = await runtime.read(lambda conn: listings.list_cards(conn, chosen["date"]))
    flags = {r["card_id"]: (r["seed_source"], r["practice"]) for r in rows}
    assert flags == {
        chosen["card_id"]: ("participant", True),
        drawn["card_id"]: ("server", False),
    }
    chosen_id = chosen["card_id"]
    document = await runtime.read(lambda conn: store.card_document(conn, chosen_id))
    page = card_html(document).body.decode()
    assert "Practice card" in page
    assert chosen["room_id"] in page
    drawn_id = drawn["card_id"]
    document = await runtime.read(lambda conn: store.card_document(conn, drawn_id))
    assert "Practice card" not in card_html(document).body.decode()


def test_provenance_is_inside_the_signed_body():
    s = Session(seed="chosen")
    s.entity.attempt.seed_source = "participant"
    outcome = s.seal(signer=KEY)
    document = json.loads(cards.publish(outcome.card.body, outcome.card.signature))
    assert verify.verify_document(json.dumps(document).encode()).signature == "valid"
    document["card"]["seed_source"] = "server"
    document["card"]["practice"] = False
    assert verify.verify_document(json.dumps(document).encode()).signature == "invalid"


def test_the_card_page_prints_json_values_not_python_ones():
    s = Session(seed="bools")
    outcome = s.seal()
    page = card_html(cards.publish(outcome.card.body, None)).body.decode()
    assert "True" not in page
    assert "False" not in page
    assert "<code>false</code>" in page


@pytest.mark.parametrize("signed", [False, True], ids=["pending", "signed"])
def test_migration_3_fills_the_new_columns_and_keeps_every_byte(signed):
    s = Session(seed="old")
    outcome = s.seal(signer=KEY if signed else None)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS[:2])
    # What a 0.3.0 server wrote before migration 3: the v2 columns only.
    a, card = s.entity.attempt, outcome.card
    conn.execute(
        "INSERT INTO chamber_attempts (handle, suite_id, generation, engine, seed, seed_salt,"
        " identity, assurance, principal, via_alias, created_at, expires_at, action_index,"
        " opened, hints_used, hint_level, wrong, head, quarantined)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'alice', 0, ?, ?, 0, 0, 0, 0, 0, ?, 0)",
        (a.handle, a.suite_id, a.generation, a.engine, a.seed, a.seed_salt,
         json.dumps(a.identity), a.assurance, store.stamp(a.created_at),
         store.stamp(a.expires_at), a.head),
    )  # fmt: skip
    sig = card.signature
    conn.execute(
        "INSERT INTO chamber_cards (card_id, toolset_id, sealed_date, handle, sealed_at,"
        " suite_id, outcome, body, signature, signed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (card.card_id, a.rules.toolset_id, "2026-11-30", a.handle, store.stamp(card.sealed_at),
         a.suite_id, card.outcome, card.body, json.dumps(sig) if sig else None,
         sig["signed_at"] if sig else None),
    )  # fmt: skip
    before = store.card_document(conn, card.card_id)
    apply_migrations(conn, store.MIGRATIONS)
    assert store.card_document(conn, card.card_id) == before
    row = conn.execute(
        "SELECT seed_source, principal, product, actions_used, key_id FROM chamber_cards"
    ).fetchone()
    assert row == ("server", "alice", "gpt-5.6-sol", 0, KEY.key_id if signed else None)
    keys = conn.execute("SELECT key_id FROM chamber_keys").fetchall()
    assert keys == ([(KEY.key_id,)] if signed else [])
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE chamber_cards SET seed_source = 'participant'")
