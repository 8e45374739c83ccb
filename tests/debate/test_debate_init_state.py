"""An INIT topic is being set up: it takes no posts, and a debate/v1 phase clock waits for
ACTIVE (before, a v1 topic left in INIT stalled on phase_timeout:BLIND_CLAIM before anyone
could play, and took blind CLAIMs and other posts while INIT)."""

from __future__ import annotations

import pytest
from debate_support import ALICE, CONDUCTOR, payload, v1_topic

from agora.toolsets.debate import INSTRUCTIONS


@pytest.mark.parametrize(
    ("role", "kind", "protocol"),
    [
        pytest.param("PRO", "CLAIM", True, id="v1-blind-claim"),
        pytest.param("CONDUCTOR", "INFO", True, id="v1-control-post"),
        pytest.param("CONDUCTOR", "STATUS", False, id="legacy-post"),
    ],
)
async def test_an_init_topic_takes_no_posts_until_it_is_active(desk, role, kind, protocol):
    if protocol:
        v1 = await v1_topic(desk, state="INIT")
        topic, lead, args = v1.topic, CONDUCTOR, {"payload_json": payload()}
    else:
        topic = await desk.topic(ALICE, {"CONDUCTOR": await desk.session(ALICE)}, state="INIT")
        lead, args = ALICE, {}
    who = ALICE if role == "PRO" else lead
    body = await desk.post(who, topic, role, kind=kind, refused=True, **args)
    assert body["error"] == "topic_not_active"
    assert "debate_state new_state ACTIVE" in body["message"]
    read = await desk.call(who, "debate_read", topic_id=topic, role=role)
    assert [m["kind"] for m in read["messages"]] == []  # nothing was kept
    # A STATE post is the lifecycle move itself, and INIT takes it.
    await desk.post(lead, topic, "CONDUCTOR", "ACTIVE", kind="STATE", priority="INFO")
    assert (await desk.post(who, topic, role, kind=kind, **args))["topic_state"] == "ACTIVE"


async def test_the_v1_phase_clock_starts_when_the_topic_becomes_active(desk):
    v1 = await v1_topic(desk, state="INIT", phase_timeout_seconds=30)
    desk.wall.advance(3600)  # an hour of setting up
    swept = await desk.call(CONDUCTOR, "debate_protocol_maintain")
    assert swept["timed_out"] == []
    state = await v1.state()
    assert (state["phase"], state["phase_deadline_at"]) == ("BLIND_CLAIM", None)
    await desk.call(
        CONDUCTOR, "debate_state", topic_id=v1.topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    desk.wall.advance(29)
    assert (await desk.call(CONDUCTOR, "debate_protocol_maintain"))["timed_out"] == []
    await v1.post("PRO", "CLAIM")  # the debate is playable
    desk.wall.advance(2)
    swept = await desk.call(CONDUCTOR, "debate_protocol_maintain")
    assert swept["timed_out"] == [{"topic_id": v1.topic, "reason": "phase_timeout:BLIND_CLAIM"}]


async def test_the_move_to_active_says_the_phase_clock_started(desk):
    # The reply of the move that starts the clock said nothing of it (nor the instructions).
    v1 = await v1_topic(desk, state="INIT")
    out = await desk.call(
        CONDUCTOR, "debate_state", topic_id=v1.topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    deadline = (await v1.state())["phase_deadline_at"]
    assert deadline is not None
    seats, clock, step = out.guidance.split("\n")
    assert seats.startswith("Note: the blind roles are held by principal (bearer token): PRO by")
    assert f"BLIND_CLAIM must be done by {deadline} (" in clock
    assert "phase_timeout_seconds, 300 s," in clock
    assert "moves the debate to STALEMATE (phase_timeout:BLIND_CLAIM)" in clock
    assert step.startswith("Next: BLIND_CLAIM waits for the CLAIM of PRO and CON (")
    told = " ".join(INSTRUCTIONS.split())
    assert "the move to ACTIVE starts the phase clock" in told
    assert "moves the debate to STALEMATE (phase_timeout)" in told
