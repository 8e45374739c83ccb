"""Concurrent posters and parked waits on one topic deliver every addressed message exactly
once per recipient, in topic order, whichever path answers a wait: its own look, the post
that wakes it while parked (in the post's turn), or a later post of the same queued group.

Three roles each post to random sets of the other two while each role's owner drains its
inbox with debate_signal_wait (pages of three) + debate_signal_advance, all at once on a
real SQLite file (its writer thread commits while more commands queue, so groups form).
A lost message leaves a consumer waiting: `fail_after` catches it.
"""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing
from debate_support import Desk

from agora.identity import Principal
from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS

ROLES = ("ALPHA", "BETA", "GAMMA")
PEOPLE = tuple(Principal(r.lower(), projects=frozenset({"ops"})) for r in ROLES)
CONDUCTOR = Principal("cora", projects=frozenset({"ops"}))
POSTS = 20  # per role


async def seat(desk: Desk) -> tuple[str, list[str]]:
    """A topic with CONDUCTOR and the three roles bound; its id and the roles' sessions."""
    sessions = [await desk.session(who) for who in PEOPLE]
    roles: dict[str, object] = {"CONDUCTOR": await desk.session(CONDUCTOR)}
    roles.update(zip(ROLES, zip(PEOPLE, sessions, strict=True), strict=True))
    return await desk.topic(CONDUCTOR, roles), sessions


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_racing_posts_and_parked_waits_deliver_each_message_once_in_order(tmp_path, seed):
    rng = random.Random(seed)
    plan = {
        i: [
            sorted(rng.sample([j for j in range(3) if j != i], rng.randint(1, 2)))
            for _ in range(POSTS)
        ]
        for i in range(3)
    }
    expected = {j: sum(j in to for i in range(3) for to in plan[i]) for j in range(3)}
    sent: dict[int, set[str]] = {j: set() for j in range(3)}
    got: dict[int, list[tuple[str, str]]] = {j: [] for j in range(3)}
    async with (
        open_store(tmp_path / "race.db", MIGRATIONS) as store,
        trio.open_nursery() as nursery,
    ):
        desk = Desk(Runtime(store, nursery, clock=Clock()), None)  # type: ignore[arg-type]
        topic, sessions = await seat(desk)

        async def poster(i: int) -> None:
            for to in plan[i]:
                out = await desk.post(
                    PEOPLE[i], topic, ROLES[i], "b", to=",".join(ROLES[j] for j in to)
                )
                for j in to:
                    sent[j].add(out["msg_id"])
                if rng.random() < 0.3:  # until the waits that found nothing are parked
                    await trio.testing.wait_all_tasks_blocked()
                else:
                    await trio.lowlevel.checkpoint()

        async def consumer(j: int) -> None:
            who, role, session = PEOPLE[j], ROLES[j], sessions[j]
            while len(got[j]) < expected[j]:
                out = await desk.wait(who, topic, role, session, 55_000, limit=3)
                page = [(m["ts"], m["msg_id"]) for m in out["pending"]]
                if page:
                    got[j].extend(page)
                    await desk.advance(who, topic, role, session, page[-1][1])

        with trio.fail_after(60):
            async with trio.open_nursery() as agents:
                for k in range(3):
                    agents.start_soon(consumer, k)
                    agents.start_soon(poster, k)
        for j in range(3):
            ids = [msg_id for _, msg_id in got[j]]
            assert len(ids) == len(set(ids)) == expected[j]
            assert set(ids) == sent[j]
            assert got[j] == sorted(got[j])  # topic order: (ts, msg_id)
            rest = await desk.check(PEOPLE[j], topic, ROLES[j], sessions[j])
            assert rest["count"] == 0
        desk.runtime.begin_shutdown()
        nursery.cancel_scope.cancel()
