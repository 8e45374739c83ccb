"""What a debate bench's agent does, whatever carries its calls: set up a topic's roles and
make it ACTIVE, post to a role, wait on its inbox and advance past what came.

A `Call` is how a tool is called: ``debate_store.tool`` bound to a WebSocket client
(bench/debate_load.py, through a server) or ``debate_writer.call`` bound to a runtime (in
process, no transport). Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

#: Calls the tool named first with the keyword arguments; returns its result.
Call = Callable[..., Awaitable[dict[str, Any]]]
#: (topic_id, role, session_id): one role's place in a topic.
Seat = tuple[str, str, str]

LANE = '{"priority_lane": "P3", "priority_reason": "bench"}'


async def setup_topic(call: Call, roles: int, title: str) -> list[Seat]:
    """One ACTIVE topic of ``roles`` roles, each with its session; a seat per role."""
    sessions = [(await call("debate_session_open"))["session_id"] for _ in range(roles)]
    names = [f"ROLE_{i}" for i in range(roles)]
    roster = [{"role": r, "session_id": s} for r, s in zip(names, sessions, strict=True)]
    out = await call(
        "debate_init",
        title=title,
        created_by_role=names[0],
        roles_json=json.dumps(roster),
        metadata_json=LANE,
    )
    topic = out["topic_id"]
    await call("debate_state", topic_id=topic, role=names[0], new_state="ACTIVE")
    return [(topic, r, s) for r, s in zip(names, sessions, strict=True)]


async def post(call: Call, seat: Seat, to: str, body: str) -> None:
    """One STATUS post from ``seat``'s role addressed to the role ``to``."""
    topic, role, _ = seat
    await call(
        "debate_post_with_recipients",
        topic_id=topic,
        role=role,
        priority="M",
        kind="STATUS",
        body=body,
        addressed_to_csv=to,
    )


async def wait(call: Call, seat: Seat, timeout_ms: int) -> dict[str, Any]:
    """One ``debate_signal_wait`` of ``seat`` (up to 100 pending messages)."""
    topic, role, session = seat
    return await call(
        "debate_signal_wait",
        topic_id=topic,
        role=role,
        session_id=session,
        timeout_ms=timeout_ms,
        limit=100,
    )


async def advance(call: Call, seat: Seat, inbox: dict[str, Any]) -> None:
    """``debate_signal_advance`` of ``seat`` past the last message ``inbox`` returned."""
    topic, role, session = seat
    await call(
        "debate_signal_advance",
        topic_id=topic,
        role=role,
        session_id=session,
        last_processed_msg_id=inbox["pending"][-1]["msg_id"],
    )


def writer_split(before: dict[str, Any], after: dict[str, Any]) -> tuple[float, float, float]:
    """The SQLite writer's CPU, the wall time of its statements and of its transactions in
    all (ms) between two snapshots of the store's counters; the rest of a transaction's wall
    time is its COMMIT (WAL write, fsync, checkpoints)."""
    return (
        after["writer_cpu_ms"] - before["writer_cpu_ms"],
        after["statements_ms"] - before["statements_ms"],
        after["commit_ms"]["sum"] - before["commit_ms"]["sum"],
    )
