"""Property: under any sequence of debate/v1 posts from any seat, the micro-state only moves
along the phase machine's edges, each accepted post bumps transition_version by at most one
(exactly when the phase or round moved), a rejected post changes nothing, the round never
passes the cap, and a blind CLAIM stays hidden from every other seat until both are in."""

from __future__ import annotations

from typing import Any

import trio
from debate_support import SEATS, Desk, payload, v1_topic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agora.errors import ToolError
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS

EDGES = {
    ("BLIND_CLAIM", "DEBATE"),
    ("DEBATE", "DEBATE"),
    ("DEBATE", "ADJUDICATE"),
    ("DEBATE", "STALEMATE"),
    ("STALEMATE", "ESCALATED"),
}
KINDS = ("CLAIM", "CHALLENGE", "EVIDENCE", "REBUT", "CONCEDE", "VERIFY", "DISSENT", "ESCALATE")
ROLES = ("PRO", "CON", "JUDGE", "CONDUCTOR")
step = st.tuples(
    st.sampled_from(ROLES),
    st.sampled_from(KINDS),
    st.integers(min_value=-1, max_value=8),  # reply_to: -1 none, else an earlier post
    st.booleans(),  # VERIFY verified, ESCALATE addressed to HUMAN
)


async def _row(desk: Desk, topic: str) -> tuple[Any, int]:
    def read(conn: Any) -> tuple[Any, int]:
        state = conn.execute("SELECT * FROM debate_protocol WHERE topic_id = ?", (topic,))
        count = conn.execute("SELECT COUNT(*) FROM debate_messages").fetchone()[0]
        return tuple(state.fetchone()), count

    return await desk.runtime.read(read)


async def _visible(desk: Desk, topic: str, role: str) -> set[str]:
    page = await desk.call(SEATS[role], "debate_read", topic_id=topic, role=role, limit=1000)
    return {m["msg_id"] for m in page["messages"]}


async def scenario(steps: list[tuple[str, str, int, bool]]) -> None:
    async with trio.open_nursery() as nursery, open_store(":memory:", MIGRATIONS) as store:
        wall = FakeWall()
        desk = Desk(Runtime(store, nursery, clock=Clock(wall)), wall)
        v1 = await v1_topic(desk, max_rounds=2)
        posted: list[str] = []
        claims: dict[str, str] = {}
        state = await v1.state()
        for role, kind, target, flag in steps:
            args: dict[str, Any] = {"payload_json": payload(f"{role} {kind}")}
            if kind == "VERIFY":
                args["payload_json"] = payload("v", result="verified" if flag else "contested")
            if 0 <= target < len(posted):
                args["reply_to"] = posted[target]
            to = "HUMAN" if kind == "ESCALATE" and flag else None
            before = await _row(desk, v1.topic)
            try:
                out = await v1.post(role, kind, to=to, **args)
            except ToolError:
                assert await _row(desk, v1.topic) == before
                continue
            posted.append(out["msg_id"])
            new = out["protocol_state"]
            moved = (new["phase"], new["round_no"]) != (state["phase"], state["round_no"])
            assert new["transition_version"] - state["transition_version"] == int(moved)
            if moved:
                assert (state["phase"], new["phase"]) in EDGES, (state, new)
            assert new["round_no"] <= new["max_rounds"]
            if kind == "CLAIM" and state["phase"] == "BLIND_CLAIM":
                claims[role] = out["msg_id"]
            if new["blind_barrier_state"] == "waiting":
                for msg_role, msg_id in claims.items():
                    for viewer in ("PRO", "CON", "JUDGE", "HUMAN"):
                        seen = msg_id in await _visible(desk, v1.topic, viewer)
                        assert seen is (viewer == msg_role)
            else:
                for viewer in ("CON", "JUDGE"):
                    assert set(claims.values()) <= await _visible(desk, v1.topic, viewer)
            state = new
        desk.runtime.begin_shutdown()
        nursery.cancel_scope.cancel()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(step, min_size=1, max_size=25))
def test_the_micro_state_moves_only_along_its_edges(opened, steps):
    # Half the runs start with both blind claims, so later phases are explored too.
    prefix = [("PRO", "CLAIM", -1, False), ("CON", "CLAIM", -1, False)] if opened else []
    trio.run(scenario, prefix + steps)
