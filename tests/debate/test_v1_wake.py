"""debate_trigger_dry_run: wake targets from the preserved trigger, suppression and singleton
rules, a history event on every path, and nobody woken."""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, BOB, CAROL, OUTSIDER, SEATS, claim, crew, trigger, v1_topic

SCHEMA = "debate.trigger/v1"


@pytest.fixture
async def room(desk):
    """CONDUCTOR (alice), EXECUTOR_1 (bob), REVIEWER (carol), HUMAN unbound."""
    return await crew(desk, HUMAN=None)


def response(topic, msg_id, schema=SCHEMA, **extra):
    return json.dumps({"schema_version": schema, "topic_id": topic, "msg_id": msg_id, **extra})


async def dry(desk, text, who=ALICE, **args):
    return await desk.call(who, "debate_trigger_dry_run", tool_response_json=text, **args)


async def _state(desk):
    def read(conn):
        return (
            conn.execute("SELECT * FROM debate_deliveries ORDER BY msg_id, recipient").fetchall(),
            conn.execute("SELECT * FROM debate_cursors ORDER BY session_id").fetchall(),
            conn.execute("SELECT COUNT(*) FROM debate_messages").fetchone()[0],
            conn.execute("SELECT * FROM debate_worker_claims").fetchall(),
        )

    return await desk.runtime.read(read)


async def _events(desk):
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT detail FROM debate_history WHERE event = 'wake_dry_run' ORDER BY seq"
        ).fetchall()
    )
    return [json.loads(r[0]) for r in rows]


async def test_targets_come_from_the_preserved_message_once_each(desk, room):
    msg = await trigger(desk, room, f"EXECUTOR_1,REVIEWER,{room['exec']},HUMAN,CONDUCTOR")
    before = await _state(desk)
    # What the caller claims about recipients is not the authority.
    out = await dry(desk, response(room["topic"], msg, recipients=["MALLORY"]), action="probe")
    assert out["result"] == "targets"
    assert [(t["role"], t["session_id"]) for t in out["targets"]] == [
        ("EXECUTOR_1", room["exec"]),
        ("REVIEWER", room["rev"]),
    ]
    assert all(t["action"] == "probe" and not t["redispatch"] for t in out["targets"])
    assert {e["result"] for e in out["logs"]} >= {
        "suppressed:singleton",
        "suppressed:no_active_binding",
        "suppressed:author",
    }
    assert out["suppressed"] == 3
    assert await _state(desk) == before
    [event] = await _events(desk)
    assert (event["result"], event["targets"], event["suppressed"]) == ("targets", 2, 3)


async def test_consumed_and_claimed_recipients_are_suppressed_retired_claims_redispatch(desk, room):
    msg = await trigger(desk, room, "EXECUTOR_1,REVIEWER")
    await desk.advance(CAROL, room["topic"], "REVIEWER", room["rev"], msg)
    await claim(desk, room, msg)
    out = await dry(desk, response(room["topic"], msg))
    assert out["result"] == "no_targets"
    assert [e["result"] for e in out["logs"]] == [
        "suppressed:worker_claim_active",
        "suppressed:already_consumed",
    ]
    desk.wall.advance(300)
    await desk.call(
        BOB, "debate_worker_reclaim", topic_id=room["topic"], older_than_ts="2026-11-30T00:04Z"
    )
    out = await dry(desk, response(room["topic"], msg))
    assert [(t["role"], t["redispatch"]) for t in out["targets"]] == [("EXECUTOR_1", True)]


@pytest.mark.parametrize(
    ("case", "result"),
    [
        pytest.param("schema", "schema_mismatch", id="schema-mismatch"),
        pytest.param("unknown", "unknown_trigger", id="unknown-trigger"),
        pytest.param("implementation", "implementation_requires_impl_vehicle", id="impl"),
    ],
)
async def test_every_path_records_its_history_event(desk, room, case, result):
    vehicle = "implementation" if case == "implementation" else ""
    msg = await trigger(desk, room, "EXECUTOR_1", vehicle=vehicle)
    text = {
        "schema": response(room["topic"], msg, schema="debate.trigger/v0"),
        "unknown": response(room["topic"], "00000000-0000-4000-8000-000000000000"),
        "implementation": response(room["topic"], msg),
    }[case]
    out = await dry(desk, text)
    assert out["result"] == result
    assert out["targets"] == []
    if case == "implementation":
        assert [t["role"] for t in out["notify_targets"]] == ["EXECUTOR_1"]
    else:
        assert out["notify_targets"] == []
    [event] = await _events(desk)
    assert event["result"] == result


async def test_a_blind_claim_waits_for_its_barrier(desk):
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM", to="CON,JUDGE")
    out = await dry(desk, response(v1.topic, pro["msg_id"]), who=SEATS["CONDUCTOR"])
    assert (out["result"], out["targets"]) == ("blind_barrier_wait", [])
    assert [e["result"] for e in await _events(desk)] == ["blind_barrier_wait"]
    await v1.post("CON", "CLAIM")
    out = await dry(desk, response(v1.topic, pro["msg_id"]), who=SEATS["CONDUCTOR"])
    assert [t["role"] for t in out["targets"]] == ["CON", "JUDGE"]


async def test_non_objects_fail_closed_and_unreachable_topics_disclose_nothing(desk, room):
    msg = await trigger(desk, room, "EXECUTOR_1")
    before = await _state(desk), await _events(desk)
    for text in ("[1]", "nope", '"a string"'):
        body = await desk.refused(ALICE, "debate_trigger_dry_run", tool_response_json=text)
        assert body["error"] == "invalid_tool_response"
    foreign = await desk.refused(
        OUTSIDER, "debate_trigger_dry_run", tool_response_json=response(room["topic"], msg)
    )
    unknown = await desk.refused(
        ALICE,
        "debate_trigger_dry_run",
        tool_response_json=response("00000000-0000-4000-8000-000000000000", msg),
    )
    missing = await desk.refused(
        ALICE, "debate_trigger_dry_run", tool_response_json=json.dumps({"msg_id": msg})
    )
    assert foreign == unknown == missing
    assert foreign["error"] == "unknown_topic"
    assert (await _state(desk), await _events(desk)) == before
