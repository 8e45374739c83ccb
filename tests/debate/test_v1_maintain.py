"""debate_protocol_maintain (phase timeouts, missing-role recovery) and the phase-timeout
background task under Trio's MockClock."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, MALLORY, STAR, Desk, v1_topic

from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.handlers.maintenance import SWEEPER, phase_timeout_task
from agora.toolsets.debate.sql import MIGRATIONS


async def maintain(desk, **args):
    return await desk.call(CONDUCTOR, "debate_protocol_maintain", **args)


async def _snapshot(desk):
    def read(conn):
        return (
            conn.execute("SELECT * FROM debate_protocol ORDER BY topic_id").fetchall(),
            conn.execute("SELECT COUNT(*) FROM debate_bindings").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM debate_history").fetchone()[0],
        )

    return await desk.runtime.read(read)


async def _in(v1, stage):
    if stage == "DEBATE":
        await v1.to_debate()
    elif stage == "ADJUDICATE":
        await v1.to_adjudicate()


@pytest.mark.parametrize("stage", ["BLIND_CLAIM", "DEBATE", "ADJUDICATE"])
async def test_an_expired_phase_times_out_to_stalemate(desk, stage):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    await _in(v1, stage)
    desk.wall.advance(29)
    assert await maintain(desk) == {"timed_out": [], "role_recoveries": []}
    # Posts' authoritative timestamps may run a few microseconds ahead of the fake wall.
    desk.wall.advance(1 if stage == "BLIND_CLAIM" else 2)
    out = await maintain(desk)
    reason = f"phase_timeout:{stage}"
    assert out == {"timed_out": [{"topic_id": v1.topic, "reason": reason}], "role_recoveries": []}
    state = await v1.state()
    assert (state["phase"], state["stalemate_reason"]) == ("STALEMATE", reason)
    assert state["phase_deadline_at"] is None
    assert await maintain(desk) == {"timed_out": [], "role_recoveries": []}
    await v1.post("PRO", "DISSENT")


@pytest.mark.parametrize("closed", ["RESOLVED", "ARCHIVED"])
async def test_a_closed_topics_phase_is_never_timed_out(desk, closed):
    # A topic resolved mid BLIND_CLAIM; when the phase's deadline passed, the sweep still
    # moved it to STALEMATE on the closed topic. (Closing it early now stops the protocol
    # itself: STOPPED, transition_version 2, no deadline; the sweep leaves that alone.)
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    for state in ("RESOLVED", "ARCHIVED")[: 1 + (closed == "ARCHIVED")]:
        await desk.call(CONDUCTOR, "debate_state", topic_id=v1.topic, role="CONDUCTOR",
                        new_state=state, reason="done")  # fmt: skip
    before = await v1.state()
    desk.wall.advance(60)
    assert await maintain(desk) == {"timed_out": [], "role_recoveries": []}
    after = await v1.state()
    assert (after["phase"], after["transition_version"]) == ("STOPPED", 2)
    assert after == before


async def test_the_timeout_sweep_is_global_and_the_csv_scopes_recovery(desk):
    first = await v1_topic(desk, phase_timeout_seconds=30)
    second = await v1_topic(desk, phase_timeout_seconds=30)
    await desk.bind(ALICE, first.topic, "PRO", first.sessions["PRO"], state="retired")
    desk.wall.advance(30)
    out = await maintain(desk, topic_ids_csv=second.topic)
    assert sorted(t["topic_id"] for t in out["timed_out"]) == sorted([first.topic, second.topic])
    assert out["role_recoveries"] == []


async def test_maintain_is_for_conductors_and_checks_every_id_first(desk):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    desk.wall.advance(60)
    before = await _snapshot(desk)
    for who in (ALICE, STAR):
        body = await desk.refused(who, "debate_protocol_maintain")
        assert body["error"] == "conductor_required"
        assert 'scopes include "conductor"' in body["message"]  # what to configure
    body = await desk.refused(
        CONDUCTOR, "debate_protocol_maintain", topic_ids_csv=f"{v1.topic},not-a-topic"
    )
    assert body["error"] == "invalid_id"
    assert await _snapshot(desk) == before


async def test_a_malformed_stored_roster_fails_the_whole_run(desk):
    good = await v1_topic(desk, phase_timeout_seconds=30)
    bad = await v1_topic(desk, phase_timeout_seconds=30)
    await desk.runtime.write(
        [("UPDATE debate_topics SET roles = ? WHERE topic_id = ?", ('{"no": 1}', bad.topic))]
    )
    desk.wall.advance(60)
    before = await _snapshot(desk)
    body = await desk.refused(CONDUCTOR, "debate_protocol_maintain")
    assert body["error"] == "malformed_topic"
    assert await _snapshot(desk) == before
    assert (await good.state())["phase"] == "BLIND_CLAIM"


async def test_a_missing_role_is_recovered_with_its_newest_cursor(desk):
    v1 = await v1_topic(desk)
    ping = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "first", to="PRO", kind="PING")
    pro_inbox = {"session_id": v1.sessions["PRO"], "role": "PRO", "topic_id": v1.topic}
    await desk.call(ALICE, "debate_signal_check", **pro_inbox)
    await desk.call(
        ALICE, "debate_signal_advance", **pro_inbox, last_processed_msg_id=ping["msg_id"]
    )
    later = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "second", to="PRO", kind="PING")
    for who, role in ((ALICE, "PRO"), (MALLORY, "HUMAN")):
        await desk.bind(who, v1.topic, role, v1.sessions[role], state="retired")
    out = await maintain(desk, topic_ids_csv=v1.topic)
    [recovered] = out["role_recoveries"]
    assert recovered["topic_id"] == v1.topic
    assert (recovered["role"], recovered["generation"]) == ("PRO", 2)
    assert recovered["reason"] == "missing_active_binding"
    session = recovered["session_id"]
    assert session in [
        s["session_id"] for s in (await desk.call(CONDUCTOR, "debate_session_list"))["sessions"]
    ]
    inbox = await desk.check(CONDUCTOR, v1.topic, "PRO", session)
    assert [m["msg_id"] for m in inbox["pending"]] == [later["msg_id"]]
    assert await maintain(desk, topic_ids_csv=v1.topic) == {"timed_out": [], "role_recoveries": []}


async def test_concurrent_runs_report_only_true_winners(desk):
    topics = [await v1_topic(desk, phase_timeout_seconds=30) for _ in range(3)]
    for v1 in topics:
        await desk.bind(BOB, v1.topic, "CON", v1.sessions["CON"], state="retired")
    desk.wall.advance(30)
    runs = []

    async def run():
        runs.append(await maintain(desk))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(run)
    timed = [t["topic_id"] for r in runs for t in r["timed_out"]]
    recovered = [(x["topic_id"], x["role"]) for r in runs for x in r["role_recoveries"]]
    assert sorted(timed) == sorted(v.topic for v in topics)
    assert sorted(recovered) == sorted((v.topic, "CON") for v in topics)
    actives = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT COUNT(*) FROM debate_bindings WHERE role = 'CON' AND state = 'active'"
        ).fetchone()[0]
    )
    assert actives == 3


async def test_a_verdict_after_the_adjudication_timed_out_loses_the_race(desk):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    pro, con = await v1.to_adjudicate()
    ab, _ = (
        await desk.call(
            CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=pro, right_msg_id=con
        )
    )["projections"]
    desk.wall.advance(31)
    await maintain(desk)
    body = await desk.refused(
        CAROL,
        "debate_judge_verdict",
        projection_id=ab["projection_id"],
        judge_role="JUDGE",
        verdict_json=json.dumps({"winner_msg_id": pro, "decision": "adopt"}),
    )
    assert body["error"] == "phase_race_lost"


class TrioWall:
    """A wall clock that moves with Trio's (mock) clock."""

    start = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        return self.start + dt.timedelta(seconds=trio.current_time())


async def test_the_background_task_times_phases_out_on_the_mock_clock(autojump_clock):
    async with trio.open_nursery() as nursery, open_store(":memory:", MIGRATIONS) as store:
        rt = Runtime(
            store, nursery, clock=Clock(TrioWall()), options={"debate": {"phase_sweep_seconds": 10}}
        )
        desk = Desk(rt, None)  # type: ignore[arg-type]
        v1 = await v1_topic(desk, phase_timeout_seconds=30)
        nursery.start_soon(phase_timeout_task, rt)
        await trio.sleep(29)
        assert (await v1.state())["phase"] == "BLIND_CLAIM"
        await trio.sleep(12)
        state = await v1.state()
        assert (state["phase"], state["stalemate_reason"]) == (
            "STALEMATE",
            "phase_timeout:BLIND_CLAIM",
        )
        actors = await rt.read(
            lambda c: c.execute(
                "SELECT actor FROM debate_history WHERE event = 'protocol_moved'"
            ).fetchall()
        )
        assert [tuple(r) for r in actors] == [(SWEEPER,)]
        nursery.cancel_scope.cancel()


async def test_recovery_carries_a_completed_workers_newer_cursor(desk):
    v1 = await v1_topic(desk)

    async def ping(body):
        out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", body, to="PRO", kind="PING")
        return out["msg_id"]

    first, second = await ping("one"), await ping("two")
    primary = {"session_id": v1.sessions["PRO"], "role": "PRO", "topic_id": v1.topic}
    await desk.call(ALICE, "debate_signal_check", **primary)
    await desk.call(ALICE, "debate_signal_advance", **primary, last_processed_msg_id=first)
    taken = await desk.call(
        ALICE,
        "debate_worker_claim",
        topic_id=v1.topic,
        role="PRO",
        parent_session_id=v1.sessions["PRO"],
        trigger_msg_id=second,
    )
    worker = {**primary, "session_id": taken["worker_session_id"]}
    await desk.call(ALICE, "debate_signal_check", **worker)
    await desk.call(ALICE, "debate_signal_advance", **worker, last_processed_msg_id=second)
    await v1.post("PRO", "CLAIM", reply_to=second)  # the terminal reply completes the worker
    await desk.bind(ALICE, v1.topic, "PRO", v1.sessions["PRO"], state="retired")
    [recovered] = (await maintain(desk, topic_ids_csv=v1.topic))["role_recoveries"]
    inbox = await desk.check(CONDUCTOR, v1.topic, "PRO", recovered["session_id"])
    assert inbox["count"] == 0  # carried from the completed worker, past "two"


async def test_maintain_times_a_phase_out_on_the_mock_clock(autojump_clock):
    async with trio.open_nursery() as nursery, open_store(":memory:", MIGRATIONS) as store:
        rt = Runtime(store, nursery, clock=Clock(TrioWall()))
        desk = Desk(rt, None)  # type: ignore[arg-type]
        v1 = await v1_topic(desk, phase_timeout_seconds=45)
        await v1.to_debate()
        deadline = (await v1.state())["phase_deadline_at"]
        await trio.sleep(44)
        assert await maintain(desk) == {"timed_out": [], "role_recoveries": []}
        await trio.sleep(2)
        out = await maintain(desk)
        assert out["timed_out"] == [{"topic_id": v1.topic, "reason": "phase_timeout:DEBATE"}]
        state = await v1.state()
        assert (state["phase"], state["phase_deadline_at"]) == ("STALEMATE", None)
        assert state["updated_at"] > deadline
        rt.begin_shutdown()
        nursery.cancel_scope.cancel()


async def test_an_init_topic_is_open_to_recovery_as_the_queue_says(desk):
    # The work queue counts INIT as open and names its missing roles, so the recovery sweep
    # of "open v1 topics" rebinds them too (a seat lost while the topic is being set up).
    v1 = await v1_topic(desk, state="INIT")
    await desk.bind(CAROL, v1.topic, "JUDGE", v1.sessions["JUDGE"], state="retired")
    queue = await desk.call(CONDUCTOR, "debate_work_queue", topics_csv=v1.topic)
    [item] = queue["items"]
    assert (item["state"], item["missing_roles"]) == ("INIT", ["JUDGE"])
    out = await maintain(desk, topic_ids_csv=v1.topic)
    [recovered] = out["role_recoveries"]
    assert (recovered["topic_id"], recovered["role"]) == (v1.topic, "JUDGE")
    queue = await desk.call(CONDUCTOR, "debate_work_queue", topics_csv=v1.topic)
    assert queue["items"][0]["missing_roles"] == []


async def test_a_role_declared_unbound_waits_for_its_participant(desk):
    # The sweep bound every null role of a fresh topic to a session of the conductor: a blind
    # seat taken by the control plane, and its participant then refused as unknown_topic.
    conductor = await desk.session(CONDUCTOR)
    roles = {"CONDUCTOR": conductor, "PRO": None, "CON": None, "JUDGE": None}
    topic = await desk.topic(
        CONDUCTOR, roles, protocol_version="debate/v1", blind_roles_csv="PRO,CON"
    )
    await desk.bind(ALICE, topic, "PRO", await desk.session(ALICE))
    assert await maintain(desk, topic_ids_csv=topic) == {"timed_out": [], "role_recoveries": []}
    assert await maintain(desk) == {"timed_out": [], "role_recoveries": []}
    bob = await desk.session(BOB)
    await desk.bind(BOB, topic, "CON", bob)
    # A role that had its owner and lost it is recovered as before.
    await desk.bind(BOB, topic, "CON", bob, state="retired")
    out = await maintain(desk, topic_ids_csv=topic)
    assert [(r["role"], r["generation"]) for r in out["role_recoveries"]] == [("CON", 2)]
