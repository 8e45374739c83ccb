"""debate_worker_claim and debate_worker_reclaim: derived workers of addressed triggers."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from debate_support import ALICE, BOB, CAROL, MALLORY, claim, crew, trigger

from agora.toolsets.debate.rules import stamp


@pytest.fixture
async def room(desk):
    """CONDUCTOR (alice) and EXECUTOR_1 (bob) and REVIEWER (carol) on an ACTIVE topic."""
    return await crew(desk)


async def _rows(desk):
    def read(conn):
        return (
            conn.execute("SELECT * FROM debate_worker_claims ORDER BY claimed_at").fetchall(),
            conn.execute("SELECT COUNT(*) FROM debate_history").fetchone()[0],
            conn.execute("SELECT * FROM debate_cursors ORDER BY session_id").fetchall(),
        )

    return await desk.runtime.read(read)


async def reclaim(desk, room, who=BOB, age=130, **args):
    cutoff = stamp(desk.wall.now() - dt.timedelta(seconds=age))
    return await desk.call(
        who, "debate_worker_reclaim", topic_id=room["topic"], older_than_ts=cutoff, **args
    )


async def test_a_claim_allocates_a_uuid_worker_and_repeats_heartbeat(desk, room):
    msg = await trigger(desk, room)
    first = await claim(desk, room, msg, details_json='{"pid": 7}')
    assert (first["state"], first["duplicate"], first["no_action"]) == ("active", False, False)
    assert first["worker_session_id"] not in (room["exec"], room["rev"])
    assert first["parent_cursor"] == {"ts": None, "msg_id": None}
    assert first["details"] == {"pid": 7}
    desk.wall.advance(5)
    again = await claim(desk, room, msg)
    assert again["worker_session_id"] == first["worker_session_id"]
    assert (again["duplicate"], again["state"]) == (True, "active")
    assert again["heartbeat_at"] > first["heartbeat_at"]
    other = await claim(desk, room, await trigger(desk, room))
    assert other["worker_session_id"] != first["worker_session_id"]


@pytest.mark.parametrize(
    ("case", "code"),
    [
        pytest.param("implementation", "implementation_requires_impl_vehicle", id="impl-vehicle"),
        pytest.param("unaddressed", "unknown_trigger", id="not-addressed-to-the-role"),
        pytest.param("unknown", "unknown_trigger", id="unknown-message"),
        pytest.param("foreign", "unknown_topic", id="foreign-caller"),
        pytest.param("inactive", "worker_parent_inactive", id="inactive-parent"),
        pytest.param("details", "invalid_json", id="details-not-an-object"),
    ],
)
async def test_claim_rejections_write_nothing(desk, room, case, code):
    msg = await trigger(desk, room, vehicle="implementation" if case == "implementation" else "")
    args, who = {}, BOB
    if case == "unaddressed":
        msg = await trigger(desk, room, to="REVIEWER")
    elif case == "unknown":
        msg = "00000000-0000-4000-8000-000000000000"
    elif case == "foreign":
        who = MALLORY
    elif case == "inactive":
        await desk.bind(BOB, room["topic"], "EXECUTOR_1", room["exec"], state="retired")
    elif case == "details":
        args = {"details_json": "[1]"}
    before = await _rows(desk)
    body = await claim(desk, room, msg, who=who, refused=True, **args)
    assert body["error"] == code, body
    assert await _rows(desk) == before


async def test_a_terminal_reply_completes_the_claim(desk, room):
    msg = await trigger(desk, room)
    taken = await claim(desk, room, msg)
    await desk.post(BOB, room["topic"], "EXECUTOR_1", "done", kind="A", reply_to=msg)
    again = await claim(desk, room, msg)
    assert (again["state"], again["duplicate"], again["no_action"]) == ("completed", True, True)
    assert again["worker_session_id"] == taken["worker_session_id"]
    assert again["ack_msg_id"] is not None


async def test_the_worker_session_answers_its_trigger_as_author(desk, room):
    msg = await trigger(desk, room)
    worker = (await claim(desk, room, msg))["worker_session_id"]
    inbox = await desk.check(BOB, room["topic"], "EXECUTOR_1", worker)
    assert [m["msg_id"] for m in inbox["pending"]] == [msg]
    # It authors its reply to its trigger, nothing else: not a fresh post, not another reply.
    fresh = await desk.post(
        BOB, room["topic"], "EXECUTOR_1", "a Q", kind="Q", refused=True, author_session_id=worker
    )
    assert fresh["error"] == "session_not_yours", fresh
    other = await desk.post(BOB, room["topic"], "EXECUTOR_1", "unrelated")
    elsewhere = await desk.post(
        BOB, room["topic"], "EXECUTOR_1", "re", refused=True, reply_to=other["msg_id"],
        author_session_id=worker,
    )  # fmt: skip
    assert elsewhere["error"] == "session_not_yours", elsewhere
    answer = await desk.post(
        BOB, room["topic"], "EXECUTOR_1", "done", kind="A", reply_to=msg, author_session_id=worker
    )
    page = await desk.call(BOB, "debate_read", topic_id=room["topic"], role="EXECUTOR_1")
    [posted] = [m for m in page["messages"] if m["msg_id"] == answer["msg_id"]]
    assert posted["author_session_id"] == worker
    again = await claim(desk, room, msg)
    assert (again["state"], again["ack_msg_id"]) == ("completed", answer["msg_id"])
    # Its claim completed, the worker session authors nothing more; nor may another
    # principal (or another role) post as it.
    for who, role, session in (
        (BOB, "EXECUTOR_1", worker),
        (
            CAROL,
            "REVIEWER",
            (await claim(desk, room, await trigger(desk, room)))["worker_session_id"],
        ),
    ):
        body = await desk.post(who, room["topic"], role, refused=True, author_session_id=session)
        assert body["error"] == "session_not_yours", body


async def test_the_parents_receipt_completes_an_answered_claim(desk, room):
    msg = await trigger(desk, room)
    answer = await desk.post(BOB, room["topic"], "EXECUTOR_1", "already handled", reply_to=msg)
    await claim(desk, room, msg)
    out = await desk.advance(BOB, room["topic"], "EXECUTOR_1", room["exec"], msg)
    assert out["worker_claim"]["state"] == "completed"
    assert out["worker_claim"]["ack_msg_id"] == answer["msg_id"]


async def test_requeue_twice_then_exhausted_and_the_parent_cursor_never_moves(desk, room):
    msg = await trigger(desk, room)
    first = await claim(desk, room, msg)
    for requeue in (1, 2):
        desk.wall.advance(200)
        out = await reclaim(desk, room)
        [entry] = out["recovered"]
        assert (entry["state"], entry["parent_trigger_still_pending"]) == ("retired", True)
        assert out["retired_count"] == 1
        inbox = await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"])
        assert [m["msg_id"] for m in inbox["pending"]] == [msg]
        back = await claim(desk, room, msg)
        assert (back["state"], back["requeue_count"], back.get("requeued")) == (
            "active",
            requeue,
            True,
        )
        assert back["worker_session_id"] == first["worker_session_id"]
    desk.wall.advance(200)
    await reclaim(desk, room)
    done = await claim(desk, room, msg)
    assert (done["state"], done["exhausted"], done["no_action"]) == ("exhausted", True, True)
    assert (await claim(desk, room, msg))["state"] == "exhausted"
    cursors = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT last_msg_id FROM debate_cursors WHERE session_id = ?", (room["exec"],)
        ).fetchall()
    )
    assert [r[0] for r in cursors] == [None]


async def test_reclaim_completes_answered_claims_and_late_replies_still_complete(desk, room):
    answered, pending = await trigger(desk, room), await trigger(desk, room)
    # The reply is preserved before the worker takes the claim (a crash between the two).
    reply = await desk.post(
        BOB, room["topic"], "EXECUTOR_1", "done before the claim", kind="A", reply_to=answered
    )
    await claim(desk, room, answered)
    await claim(desk, room, pending)
    desk.wall.advance(200)
    out = await reclaim(desk, room)
    states = {e["trigger_msg_id"]: (e["state"], e["ack_msg_id"]) for e in out["recovered"]}
    assert states == {answered: ("completed", reply["msg_id"]), pending: ("retired", None)}
    assert (out["completed_count"], out["retired_count"]) == (1, 1)
    late = await desk.post(
        BOB, room["topic"], "EXECUTOR_1", "done after the reclaim", kind="A", reply_to=pending
    )
    after = await claim(desk, room, pending)
    assert (after["state"], after["ack_msg_id"]) == ("completed", late["msg_id"])


async def test_reclaim_floors_and_ownership(desk, room):
    msg = await trigger(desk, room)
    await claim(desk, room, msg)
    desk.wall.advance(100)
    # Younger than the 120 s floor: untouched even with a cutoff in the future.
    assert (await reclaim(desk, room, age=-60))["recovered"] == []
    desk.wall.advance(100)
    assert (await reclaim(desk, room, who=CAROL))["recovered"] == []  # not carol's claim
    for bad in ({"minimum_age_seconds": 60}, {"older_than_ts": "2026-11-30 10:00:00"}):
        body = await desk.refused(
            BOB,
            "debate_worker_reclaim",
            topic_id=room["topic"],
            **{"older_than_ts": "2026-11-30T10:00Z", **bad},
        )
        assert body["error"] == "invalid_arguments"
    body = await desk.refused(
        BOB, "debate_worker_reclaim", topic_id=room["topic"], older_than_ts="2026-13-40T00:00Z"
    )
    assert body["error"] == "invalid_timestamp"
    body = await desk.refused(
        MALLORY, "debate_worker_reclaim", topic_id=room["topic"], older_than_ts="2026-11-30T10:00Z"
    )
    assert body["error"] == "unknown_topic"
    assert (await reclaim(desk, room, minimum_age_seconds=150))["recovered_count"] == 1


async def test_replacing_the_parent_or_resolving_retires_its_worker_claims(desk, room):
    first, second = await trigger(desk, room, kind="PING"), await trigger(desk, room, kind="PING")
    await claim(desk, room, first)
    fresh = await desk.session(BOB)
    swapped = await desk.bind(BOB, room["topic"], "EXECUTOR_1", fresh, replace_active=True)
    assert swapped["retired_worker_claims"] == 1
    body = await claim(desk, room, first, refused=True)
    assert body["error"] == "worker_parent_inactive"
    await claim(desk, room, second, session=fresh)
    closed = await desk.call(
        ALICE, "debate_state", topic_id=room["topic"], role="CONDUCTOR", new_state="RESOLVED"
    )
    assert closed["retired_worker_claims"] == 1
    states = await desk.runtime.read(
        lambda c: c.execute("SELECT state FROM debate_worker_claims ORDER BY claimed_at").fetchall()
    )
    assert [r[0] for r in states] == ["retired", "retired"]


async def test_the_worker_session_reads_the_parents_inbox_with_a_cursor_of_its_own(desk, room):
    msg = await trigger(desk, room, kind="PING")
    taken = await claim(desk, room, msg)
    worker = taken["worker_session_id"]
    as_worker = {"session_id": worker, "role": "EXECUTOR_1", "topic_id": room["topic"]}
    as_parent = {**as_worker, "session_id": room["exec"]}
    inbox = await desk.call(BOB, "debate_signal_check", **as_worker)
    assert [m["msg_id"] for m in inbox["pending"]] == [msg]
    out = await desk.call(BOB, "debate_signal_advance", **as_worker, last_processed_msg_id=msg)
    assert out["worker_claim"] is None  # no terminal reply yet
    assert (await desk.call(BOB, "debate_signal_check", **as_worker))["count"] == 0
    # The parent's cursor did not move: the trigger is still waiting for the parent.
    parent = await desk.call(BOB, "debate_signal_check", **as_parent)
    assert [m["msg_id"] for m in parent["pending"]] == [msg]
    answer = await desk.post(BOB, room["topic"], "EXECUTOR_1", "done", reply_to=msg)
    done = await claim(desk, room, msg)
    assert (done["state"], done["ack_msg_id"]) == ("completed", answer["msg_id"])
    # A completed worker is no longer a signal-path identity.
    body = await desk.refused(BOB, "debate_signal_check", **as_worker)
    assert body["error"] == "unknown_topic"


async def test_a_worker_receipt_completes_an_answered_claim(desk, room):
    msg = await trigger(desk, room, kind="PING")
    await desk.post(BOB, room["topic"], "EXECUTOR_1", "answered before the claim", reply_to=msg)
    worker = (await claim(desk, room, msg))["worker_session_id"]
    as_worker = {"session_id": worker, "role": "EXECUTOR_1", "topic_id": room["topic"]}
    await desk.call(BOB, "debate_signal_check", **as_worker)
    out = await desk.call(BOB, "debate_signal_advance", **as_worker, last_processed_msg_id=msg)
    assert out["worker_claim"]["state"] == "completed"
    assert out["worker_claim"]["worker_session_id"] == worker


async def test_a_uuid_session_without_a_claim_or_of_another_caller_is_denied(desk, room):
    msg = await trigger(desk, room, kind="PING")
    worker = (await claim(desk, room, msg))["worker_session_id"]
    stranger = "00000000-0000-4000-8000-000000000000"
    for who, session in ((BOB, stranger), (CAROL, worker), (MALLORY, worker)):
        body = await desk.check(who, room["topic"], "EXECUTOR_1", session, refused=True)
        assert body["error"] == "unknown_topic"


async def test_a_trigger_the_parent_already_consumed_answers_no_action(desk, room):
    msg = await trigger(desk, room)
    await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"])
    await desk.advance(BOB, room["topic"], "EXECUTOR_1", room["exec"], msg)
    dry = await desk.call(
        ALICE,
        "debate_trigger_dry_run",
        tool_response_json=json.dumps(
            {"schema_version": "debate.trigger/v1", "topic_id": room["topic"], "msg_id": msg}
        ),
    )
    assert [e["result"] for e in dry["logs"]] == ["suppressed:already_consumed"]
    out = await claim(desk, room, msg)
    assert (out["state"], out["no_action"], out["ack_msg_id"]) == ("completed", True, None)
    # Idempotent: the repeat answers the same claim, and its session is no worker.
    again = await claim(desk, room, msg)
    assert (again["worker_session_id"], again["no_action"]) == (out["worker_session_id"], True)
    denied = await desk.check(
        BOB, room["topic"], "EXECUTOR_1", out["worker_session_id"], refused=True
    )
    assert denied["error"] == "unknown_topic"


async def test_a_consumed_and_answered_trigger_names_its_answer(desk, room):
    msg = await trigger(desk, room)
    answer = await desk.post(BOB, room["topic"], "EXECUTOR_1", "done", reply_to=msg, kind="A")
    await desk.advance(BOB, room["topic"], "EXECUTOR_1", room["exec"], msg)
    out = await claim(desk, room, msg)
    assert (out["state"], out["no_action"]) == ("completed", True)
    assert out["ack_msg_id"] == answer["msg_id"]


@pytest.mark.parametrize("standing", [False, True], ids=["one-shot", "standing"])
async def test_a_decision_the_role_already_answered_needs_no_worker(desk, room, standing):
    # The one-shot path (standing false) holds a DECISION claim the answer settled (done);
    # either way the role's A was the work, so no worker is allocated to do it again: the
    # claim is born completed with that answer, the contract's no_action (it was active).
    msg = (
        await desk.post(
            ALICE, room["topic"], "CONDUCTOR", "ship it", to="EXECUTOR_1", kind="DECISION",
            standing=standing,
        )
    )["msg_id"]  # fmt: skip
    await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"])
    answer = await desk.post(BOB, room["topic"], "EXECUTOR_1", "shipped", kind="A", reply_to=msg)
    out = await claim(desk, room, msg)
    assert (out["state"], out["no_action"], out["ack_msg_id"]) == (
        "completed", True, answer["msg_id"]
    )  # fmt: skip
    [(row_state,)] = await desk.runtime.read(
        lambda c: c.execute("SELECT state FROM debate_worker_claims").fetchall()
    )
    assert row_state == "completed"
    again = await claim(desk, room, msg)
    assert (again["state"], again["duplicate"], again["no_action"]) == ("completed", True, True)
    # An unanswered DECISION is still claimed as any trigger is.
    other = await trigger(desk, room, kind="DECISION")
    assert (await claim(desk, room, other))["state"] == "active"
