"""The attempt entity driven directly: states, CAS, budget, TTL, sealing, allies, persistence."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
import rfc8785
from harness import START, Session, commit_writes, memory_db
from solver import Solver

from agora.errors import ToolError
from agora.runtime.clock import Now
from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber import store
from agora.toolsets.chamber.commands import CallForHelp, Expire, Observe, Quarantine
from agora.toolsets.chamber.entity import AttemptEntity, AttemptKind, seal_reply
from agora.toolsets.chamber.invitation import token_for
from agora.toolsets.chamber.signing import signer_from_bytes
from agora.toolsets.chamber.transcript import genesis

KEY = signer_from_bytes(b"11" * 32)


def refused(session: Session, *args, **kw) -> dict:
    with pytest.raises(ToolError) as info:
        session.act(*args, **kw)
    return info.value.body


def wrong_value(session: Session):
    lock = session.room.current(session.entity.attempt.opened)
    if lock.puzzle.fmt.kind == "time":
        return "00:00" if lock.puzzle.answer != ("00:00",) else "00:01"
    if lock.puzzle.fmt.kind == "number":
        return "100" if lock.puzzle.answer != ("100",) else "101"
    if lock.puzzle.fmt.kind == "digits":
        ones = "1" * lock.puzzle.fmt.length
        return ones if lock.puzzle.answer != tuple(ones) else "2" * lock.puzzle.fmt.length
    items = list(lock.puzzle.answer)
    if lock.puzzle.fmt.kind == "order":
        return items[::-1] if items[::-1] != items else items
    raise AssertionError(lock.puzzle.fmt.kind)


def chrono_session(seed: str = "attempt") -> Session:
    """A chrono room whose first lock takes a time, number, dial or order value."""
    for n in range(100):
        s = Session(seed=f"{seed}-{n}")
        if s.room.locks[0].puzzle.fmt.kind in ("time", "number", "order"):
            return s
    raise AssertionError("no suitable room")


def test_states_go_created_active_terminal_then_pending_or_sealed():
    s = Session(seed="states")
    assert s.entered["attempt_state"] == "created"
    assert s.entered["action_index"] == 0
    assert s.entered["remaining_actions"] == 64
    assert s.entered["expires_at"] == "2026-11-30T14:00:00Z"
    assert s.act("look")["attempt_state"] == "active"
    Solver(s.act).run()
    assert s.entity.attempt.state(s.wall) == "terminal_unsealed"
    outcome = s.seal()
    assert outcome.envelope["attempt_state"] == "pending_signature"
    assert outcome.card.outcome == "solved"
    signed = Session(seed="states-signed")
    assert signed.seal(signer=KEY).envelope["attempt_state"] == "sealed"


def test_observe_is_free_and_only_for_room_objects():
    s = Session(seed="observe")
    obj = s.room.object_ids[0]
    reply = s.send(Observe(obj))
    assert reply["object"] == obj
    assert reply["observation"]
    assert reply["action_index"] == 0
    with pytest.raises(ToolError) as info:
        s.send(Observe("a-door-i-made-up"))
    assert info.value.body["code"] == "object_not_available"


def test_stale_expected_action_index_is_refused_and_retryable():
    s = Session(seed="cas")
    s.act("look", expected=0)
    body = refused(s, "look", expected=0)
    assert body["code"] == "stale_action_index"
    assert body["retryable"] is True
    assert body["current_action_index"] == 1
    assert s.act("look", expected=1)["action_index"] == 2


def test_refusals_consume_no_action():
    s = chrono_session("refusals")
    lock = s.room.locks[0]
    other = next(op for op in ("submit_bolt", "submit_sequence", "submit_time") if op != lock.op)
    assert refused(s, other, value="1111")["code"] == "op_not_allowed"
    assert refused(s, "inspect", object="nowhere")["code"] == "object_not_available"
    assert refused(s, "inspect")["code"] == "object_not_available"
    assert refused(s, lock.op, value=["not", "a", "value"] * 5)["code"] == "value_format_invalid"
    assert refused(s, lock.op)["code"] == "value_format_invalid"
    assert s.entity.attempt.action_index == 0
    assert s.writes[1:] == []


def test_wrong_answers_consume_an_action_and_are_counted():
    s = chrono_session("wrong")
    reply = s.act(s.room.locks[0].op, value=wrong_value(s))
    assert reply["observation"] == rooms.NOT_ACCEPTED
    # Full sentences, as every other reply is: a capital first, a full stop last.
    assert reply["observation"].startswith("Not accepted: a wrong submission, counted")
    assert reply["observation"].endswith("or ask for a hint.")
    assert reply["accepted"] is False
    assert reply["action_index"] == 1
    assert s.entity.attempt.wrong == 1


def test_the_action_budget_ends_play_and_demands_a_seal():
    s = Session(seed="budget")
    for _ in range(63):
        s.act("look")
    last = s.act("look")
    assert last["remaining_actions"] == 0
    assert last["terminal"]
    assert last["must_seal"]
    assert last["attempt_state"] == "terminal_unsealed"
    body = refused(s, "look")
    assert body["code"] == "action_limit_reached"
    assert body["must_seal"] is True
    assert s.seal().card.outcome == "failed"


def test_a_solved_room_refuses_further_ops():
    s = Session(seed="solved")
    Solver(s.act).run()
    assert refused(s, "look")["code"] == "op_not_allowed"


def test_ttl_expires_an_unsealed_attempt_which_then_seals_as_expired():
    s = Session(seed="ttl")
    s.wall = START + dt.timedelta(seconds=7199)
    s.act("look")
    s.wall = START + dt.timedelta(seconds=7200)
    body = refused(s, "look")
    assert body["code"] == "attempt_expired"
    assert body["attempt_state"] == "expired"
    with pytest.raises(ToolError):
        s.send(Observe(s.room.object_ids[0]))
    outcome = s.seal()
    assert outcome.card.outcome == "expired"
    assert outcome.card.sealed_at == START + dt.timedelta(seconds=7200)


@pytest.mark.parametrize("first", ["participant", "sweep"])
def test_a_room_solved_in_time_still_seals_as_solved_after_the_ttl(first):
    s = Session(seed="late-seal")
    Solver(s.act).run()
    s.wall = START + dt.timedelta(hours=3)
    if first == "sweep":
        s.send(Expire())
    card = json.loads(s.seal(next_candidate="x").card.body)
    # The same card whoever gets there first: dated at the expiry, by the expiry.
    assert (card["outcome"], card["sealed_by"]) == ("solved", "expiry")
    assert card["sealed_at"] == "2026-11-30T14:00:00Z"
    assert "next_candidate" not in card


def test_sealing_is_idempotent_and_keeps_the_first_card():
    s = Session(seed="idem")
    first = s.seal(next_candidate="gpt-5.7")
    s.wall += dt.timedelta(minutes=5)
    again = s.seal(signer=KEY)
    assert again.already_sealed
    assert not first.already_sealed
    assert again.card.body == first.card.body
    assert again.card.signature is None  # a later key never rewrites the sealed card
    assert refused(s, "look")["code"] == "attempt_already_sealed"
    reply = seal_reply(again, None)
    assert reply["already_sealed"] is True
    assert reply["card_id"] == first.card.card_id


def test_seal_checks_the_expected_action_index():
    s = Session(seed="seal-cas")
    s.act("look")
    with pytest.raises(ToolError) as info:
        s.seal(expected_action_index=0)
    assert info.value.body["code"] == "stale_action_index"
    assert s.seal(expected_action_index=1).card.outcome == "failed"


def test_quarantine_seals_the_attempt_with_the_reason_on_its_card():
    s = Session(seed="cheat")
    outcome = s.send(Quarantine("scripted answers from a leaked key", KEY))
    assert outcome.card.outcome == "quarantined"
    assert b'"quarantine":{"reason":"scripted answers from a leaked key"}' in outcome.card.body
    assert seal_reply(s.seal(), outcome.card.signature)["attempt_state"] == "quarantined"
    with pytest.raises(ToolError):
        s.send(Quarantine("again"))


def test_call_for_help_names_allies_with_fresh_seeds_and_never_lets_them_in():
    s = Session(seed="help")
    reply = s.send(CallForHelp("claude-5", "a1b2"))
    assert reply["ally_entry"]["tool"] == "enter_open_challenge"
    assert reply["ally_entry"]["arguments"] == {
        "product": "claude-5",
        "suite": s.suite,
        "seed": token_for("a1b2"),
    }
    assert "a1b2" not in json.dumps(reply)
    assert s.send(CallForHelp("claude-5", "ffff"))["invitation"] == token_for("a1b2")
    s.send(CallForHelp("gemini-4", "c3"))
    s.send(CallForHelp("grok-5", "d4"))
    with pytest.raises(ToolError) as info:
        s.send(CallForHelp("one-too-many", "e5"))
    assert info.value.body["code"] == "op_not_allowed"
    assert s.entity.attempt.action_index == 0
    card = s.seal().card.body
    assert b'"allies":["claude-5","gemini-4","grok-5"]' in card
    with pytest.raises(ToolError) as info:
        s.send(CallForHelp("late", "f6"))
    assert info.value.body["code"] == "attempt_already_sealed"


def test_unknown_handles_are_not_found():
    entity = AttemptEntity(Session().entity.rules, "chl-ffffffffffffffff", None)
    reply = entity.handle(Observe("x"), Now(0, START)).reply
    assert reply.body["code"] == "attempt_not_found"


def test_the_transcript_is_a_hash_chain_over_every_action():
    s = Session(seed="chain")
    s.act("look")
    s.act("hint")
    a = s.entity.attempt
    head = genesis(a.seed_commitment)
    for record in a.transcript:
        head = hashlib.sha256(bytes.fromhex(head) + record).hexdigest()
    assert head == a.head
    first = rfc8785.dumps({"at": "2026-11-30T12:00:00Z", "i": 0, "op": "look"})
    assert a.transcript[0] == first


def test_the_written_rows_rebuild_the_same_attempt():
    s = Session(seed="persist")
    s.act("look")
    s.act(s.room.locks[0].op, value=wrong_value(s)) if s.room.locks[0].puzzle.fmt.kind in (
        "time", "number", "order", "digits") else s.act("hint")  # fmt: skip
    s.send(CallForHelp("claude-5", "a1"))
    conn = memory_db()
    commit_writes(conn, s.writes)
    kind = AttemptKind(s.entity.rules)
    loaded = kind.load(conn, s.handle, Now(0, s.wall)).attempt
    mine = s.entity.attempt
    for name in ("action_index", "opened", "hints_used", "wrong", "head", "transcript", "allies",
                 "identity", "created_at", "expires_at", "seed", "suite_id",
                 "seed_source"):  # fmt: skip
        assert getattr(loaded, name) == getattr(mine, name), name
    before = len(s.writes)
    outcome = s.seal(signer=KEY)
    commit_writes(conn, s.writes[before:])
    reloaded = kind.load(conn, s.handle, Now(0, s.wall)).attempt
    assert reloaded.card.body == outcome.card.body
    assert reloaded.card.signature == outcome.card.signature


def test_finished_sessions_retire_after_retention_but_cards_stay():
    s = Session(seed="retire")
    s.seal()
    conn = memory_db()
    commit_writes(conn, s.writes)
    kind = AttemptKind(s.entity.rules)
    later = s.wall + dt.timedelta(seconds=86400)
    assert kind.load(conn, s.handle, Now(0, later)).attempt is not None
    gone = later + dt.timedelta(seconds=1)
    assert kind.load(conn, s.handle, Now(0, gone)).attempt is None
    commit_writes(conn, store.purge_finished(gone, s.entity.rules.retention))
    assert conn.execute("SELECT count(*) FROM chamber_attempts").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chamber_actions").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chamber_cards").fetchone()[0] == 1


def test_unsealed_sessions_never_retire_before_their_card_is_published():
    s = Session(seed="abandoned")
    conn = memory_db()
    commit_writes(conn, s.writes)
    kind = AttemptKind(s.entity.rules)
    expired = s.entity.attempt.expires_at + dt.timedelta(seconds=86401)
    assert kind.load(conn, s.handle, Now(0, expired)).attempt is not None
    commit_writes(conn, store.purge_finished(expired, s.entity.rules.retention))
    assert conn.execute("SELECT count(*) FROM chamber_attempts").fetchone()[0] == 1
