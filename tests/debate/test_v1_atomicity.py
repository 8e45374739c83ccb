"""Atomicity of the part-2 tools: each accepted change writes its history event in the same
transaction (a failed commit leaves nothing, and the topic works once the obstacle is gone);
debate_protocol_state preserves nothing."""

from __future__ import annotations

import json

import pytest
from debate_support import BOB, CAROL, CONDUCTOR, payload, v1_topic

from agora.runtime.actor import InternalError

TABLES = (
    "debate_sessions",
    "debate_bindings",
    "debate_messages",
    "debate_deliveries",
    "debate_cursors",
    "debate_history",
    "debate_protocol",
    "debate_judge_projections",
    "debate_worker_claims",
)


async def dump(desk):
    def read(conn):
        return {
            t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES
        }

    return await desk.runtime.read(read)


async def _setup(desk, name):
    """A topic ready for one accepted call of ``name``: (principal, tool, arguments)."""
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    if name == "post":
        return v1, (v1.desk, "PRO", "CLAIM")
    pro, con = await v1.to_adjudicate()
    prepare = (
        CONDUCTOR,
        "debate_judge_prepare",
        {"topic_id": v1.topic, "left_msg_id": pro, "right_msg_id": con},
    )
    if name == "judge_prepare":
        return v1, prepare
    if name == "judge_verdict":
        ab, ba = (await desk.call(prepare[0], prepare[1], **prepare[2]))["projections"]
        verdict = json.dumps({"winner_msg_id": pro, "decision": "adopt"})
        await desk.call(
            CAROL,
            "debate_judge_verdict",
            projection_id=ab["projection_id"],
            judge_role="JUDGE",
            verdict_json=verdict,
        )
        return v1, (
            CAROL,
            "debate_judge_verdict",
            {"projection_id": ba["projection_id"], "judge_role": "JUDGE", "verdict_json": verdict},
        )
    if name == "maintain":
        desk.wall.advance(60)
        return v1, (CONDUCTOR, "debate_protocol_maintain", {})
    ping = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "work", to="CON", kind="PING")
    claim = (
        BOB,
        "debate_worker_claim",
        {
            "topic_id": v1.topic,
            "role": "CON",
            "parent_session_id": v1.sessions["CON"],
            "trigger_msg_id": ping["msg_id"],
        },
    )
    if name == "worker_claim":
        return v1, claim
    if name == "worker_reclaim":
        await desk.call(claim[0], claim[1], **claim[2])
        desk.wall.advance(300)
        return v1, (
            BOB,
            "debate_worker_reclaim",
            {"topic_id": v1.topic, "older_than_ts": "2026-11-30T00:04Z"},
        )
    text = json.dumps(
        {"schema_version": "debate.trigger/v1", "topic_id": v1.topic, "msg_id": ping["msg_id"]}
    )
    return v1, (CONDUCTOR, "debate_trigger_dry_run", {"tool_response_json": text})


async def _call(desk, v1, spec):
    if spec[0] is desk:  # a structured post
        return await v1.post(spec[1], spec[2])
    who, tool, args = spec
    return await desk.call(who, tool, **args)


NAMES = [
    "post",
    "judge_prepare",
    "judge_verdict",
    "maintain",
    "worker_claim",
    "worker_reclaim",
    "trigger_dry_run",
]


@pytest.mark.parametrize("name", NAMES)
async def test_history_is_written_with_the_change_and_a_failed_commit_leaves_nothing(desk, name):
    v1, spec = await _setup(desk, name)
    seq = len([r for r in (await dump(desk))["debate_history"] if r[0] == v1.topic]) + 1
    await desk.runtime.write(
        [
            (
                "INSERT INTO debate_history (topic_id, seq, at, event, actor, detail) "
                "VALUES (?, ?, '', 'planted', '', '{}')",
                (v1.topic, seq),
            )
        ]
    )
    before = await dump(desk)
    with pytest.raises(InternalError):
        await _call(desk, v1, spec)
    assert await dump(desk) == before
    await desk.runtime.write([("DELETE FROM debate_history WHERE event = 'planted'", ())])
    await _call(desk, v1, spec)
    after = await dump(desk)
    # before holds the planted row: the change wrote at least one event of its own.
    assert len(after["debate_history"]) >= len(before["debate_history"])


async def test_protocol_state_preserves_nothing(desk):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", payload_json=payload("x"))
    before = await dump(desk)
    await v1.state()
    assert await dump(desk) == before
