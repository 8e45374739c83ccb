"""Property: under any interleaving of posts, addressed posts, signal checks and advances
from several sessions, every addressed message is consumed exactly once by each recipient,
in order, and none is ever skipped.

A consumer here does what an agent should: check (a page of at most three), process the
page in order, advance to its last message. Consumed = the messages of each page that lay
past the cursor when it advanced. At the end every consumer drains its inbox.
"""

from __future__ import annotations

import json
from typing import Any

import trio
from debate_support import Desk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agora.identity import Principal
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS

ROLES = ("ALPHA", "BETA", "GAMMA")
PEOPLE = tuple(Principal(r.lower(), projects=frozenset({"ops"})) for r in ROLES)
CONDUCTOR = Principal("cora", projects=frozenset({"ops"}))

post = st.tuples(
    st.just("post"),
    st.sampled_from(range(3)),
    st.sets(st.sampled_from(range(6)), max_size=3),  # 0-2: roles, 3-5: their sessions
)
check = st.tuples(st.just("check"), st.sampled_from(range(3)), st.just(frozenset()))
advance = st.tuples(st.just("advance"), st.sampled_from(range(3)), st.just(frozenset()))
operations = st.lists(st.one_of(post, check, advance), min_size=1, max_size=40)


class Consumer:
    """One role's owner: its session, its last page and what it consumed."""

    def __init__(self, who: Principal, role: str, session: str) -> None:
        self.who, self.role, self.session = who, role, session
        self.page: list[str] = []
        self.cursor: str | None = None
        self.consumed: list[str] = []

    async def check(self, desk: Desk, topic: str) -> int:
        out = await desk.call(
            self.who,
            "debate_signal_check",
            topic_id=topic,
            role=self.role,
            session_id=self.session,
            limit=3,
        )
        self.page = [m["msg_id"] for m in out["pending"]]
        return int(out["count"])

    async def advance(self, desk: Desk, topic: str) -> None:
        if not self.page:
            return
        await desk.call(
            self.who,
            "debate_signal_advance",
            topic_id=topic,
            role=self.role,
            session_id=self.session,
            last_processed_msg_id=self.page[-1],
        )
        self.consumed.extend(self.page)
        self.page = []


async def scenario(ops: list[tuple[str, int, frozenset[int]]]) -> None:
    async with trio.open_nursery() as nursery, open_store(":memory:", MIGRATIONS) as store:
        desk = Desk(Runtime(store, nursery, clock=Clock(FakeWall())), FakeWall())
        own = await desk.session(CONDUCTOR)
        roster = [{"role": "CONDUCTOR", "session_id": own}] + [
            {"role": r, "session_id": None} for r in ROLES
        ]
        topic = (
            await desk.call(
                CONDUCTOR,
                "debate_init",
                title="t",
                created_by_role="CONDUCTOR",
                roles_json=json.dumps(roster),
                metadata_json='{"priority_lane": "P3", "priority_reason": "property"}',
            )
        )["topic_id"]
        consumers = []
        for who, role in zip(PEOPLE, ROLES, strict=True):
            session = await desk.session(who)
            await desk.call(who, "debate_bind_role", topic_id=topic, role=role, session_id=session)
            consumers.append(Consumer(who, role, session))
        await desk.call(
            CONDUCTOR, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE"
        )
        expected: dict[int, list[str]] = {i: [] for i in range(3)}
        for op, index, targets in ops:
            c = consumers[index]
            if op == "post":
                recipients = [ROLES[t] if t < 3 else consumers[t - 3].session for t in targets]
                args: dict[str, Any] = {
                    "topic_id": topic,
                    "role": c.role,
                    "priority": "M",
                    "kind": "STATUS",
                    "body": "b",
                }
                if recipients:
                    out = await desk.call(
                        c.who,
                        "debate_post_with_recipients",
                        addressed_to_csv=",".join(recipients),
                        **args,
                    )
                    for i in sorted({t % 3 for t in targets}):
                        expected[i].append(out["msg_id"])
                else:
                    await desk.call(c.who, "debate_post", **args)
            elif op == "check":
                await c.check(desk, topic)
            else:
                await c.advance(desk, topic)
        for c in consumers:
            while await c.check(desk, topic):
                await c.advance(desk, topic)
        for i, c in enumerate(consumers):
            assert c.consumed == expected[i], (c.role, c.consumed, expected[i])
        desk.runtime.begin_shutdown()
        nursery.cancel_scope.cancel()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_addressed_messages_are_consumed_exactly_once_in_order(ops):
    trio.run(scenario, ops)
