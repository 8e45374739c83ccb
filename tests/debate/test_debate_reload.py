"""A topic dropped as stale reloads only the messages its last copy did not load.

An operator writing one debate topic from three nodes saw each cross-node post take 40 ms at
1,000 messages and 400 ms at 19,000: the node whose copy another node's post made stale read
every message of the topic again, and while it did, the node writing fastest kept
committing, so the others' posts were told `Busy`. Messages are only ever added, in order:
`TopicKind.reload` keeps those the dropped copy loaded and reads the rest. Here a reload must
build exactly what a full load builds (never what the dropped copy's own uncommitted
commands added), and two processes on one shared SQLite file must use it.
"""

from __future__ import annotations

import dataclasses
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from debate_support import ALICE, BOB, Desk

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands.messages import Post
from agora.toolsets.debate.handlers.common import new_msg_id
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.topic import KIND, KIND_NAME, Topic

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

WAIT = 20


def state(topic: Topic) -> dict[str, Any]:
    """Everything a topic holds, comparable: each field of its data (the messages' order
    too), and its row."""
    fields = {f.name: getattr(topic.data, f.name) for f in dataclasses.fields(topic.data)}
    fields["order"] = list(topic.data.messages)
    fields["row"] = topic.row
    return fields


async def busy_topic(desk: Desk) -> tuple[str, dict[str, str]]:
    """A topic of alice (PRO) and bob (CON) with questions, answers and addressed posts."""
    sessions = {"PRO": await desk.session(ALICE), "CON": await desk.session(BOB)}
    topic = await desk.topic(ALICE, {"PRO": sessions["PRO"], "CON": (BOB, sessions["CON"])})
    await desk.post(ALICE, topic, "PRO", "why?", kind="Q", to="CON")
    return topic, sessions


async def more_posts(desk: Desk, topic: str) -> None:
    """Posts of every sort the indexes keep: an answer, a question, addressed and not."""
    asked = await desk.post(BOB, topic, "CON", "and you?", kind="Q", to="PRO")
    await desk.post(ALICE, topic, "PRO", "because", kind="A", to="CON", reply_to=asked["msg_id"])
    for i in range(5):
        await desk.post(BOB, topic, "CON", f"note {i}", to="PRO" if i % 2 else None)


async def test_a_reload_builds_what_a_load_builds_from_the_messages_it_had(desk: Desk):
    topic, _sessions = await busy_topic(desk)
    now = desk.runtime.clock.now()
    previous = await desk.runtime.read(lambda conn: KIND.load(conn, topic, now))
    kept = list(previous.data.committed)
    assert kept, "the copy loaded no message"
    await more_posts(desk, topic)
    # The dropped copy's own command, never committed, must not come back.
    extra = {"payload": None, "body_mode": None, "protocol_version": None}
    uncommitted = Post(
        Caller.of(ALICE), new_msg_id(), "PRO", "M", "STATUS", "lost", addressed=False,
        recipients=(), extra=extra, tool="debate_post",
    )  # fmt: skip
    previous.handle(uncommitted, now)
    assert uncommitted.msg_id in previous.data.messages

    reloaded = await desk.runtime.read(lambda conn: KIND.reload(conn, topic, now, previous))
    fresh = await desk.runtime.read(lambda conn: KIND.load(conn, topic, now))

    assert state(reloaded) == state(fresh)
    assert uncommitted.msg_id not in reloaded.data.messages
    assert len(reloaded.data.committed) == len(kept) + 7
    # The messages the copy had are its own objects, not read again.
    assert all(a is b for a, b in zip(kept, reloaded.data.committed, strict=False))


@asynccontextmanager
async def node(db: str, wall: FakeWall) -> AsyncIterator[Desk]:
    """One process's runtime on the database ``db``: a SQLite file opened shared, or a
    PostgreSQL URL."""
    shared = {} if db.startswith("postgresql:") else {"shared": True}
    async with open_store(db, MIGRATIONS, **shared) as store, trio.open_nursery() as nursery:
        rt = Runtime(store, nursery, clock=Clock(wall), idle_seconds=60)
        try:
            yield Desk(rt, wall)
        finally:
            rt.begin_shutdown()
            nursery.cancel_scope.cancel()


@pytest.mark.sqlite_only("two processes on one SQLite file opened shared")
async def test_two_processes_writing_one_topic_reload_it_from_what_they_had(tmp_path):
    await two_writers(str(tmp_path / "agora.db"))


async def test_two_nodes_on_postgresql_reload_a_topic_from_what_they_had(pg_url):
    await two_writers(pg_url)


async def two_writers(db: str) -> None:
    """Two nodes on ``db`` posting in turn to one topic: each post on one makes the other's
    copy stale, and the other reloads it from the messages it had."""
    wall = FakeWall()
    with trio.fail_after(WAIT):
        async with node(db, wall) as a, node(db, wall) as b:
            topic, sessions = await busy_topic(a)  # (made in a's memory: nothing loaded)
            await b.post(BOB, topic, "CON", "from b")
            await a.post(ALICE, topic, "PRO", "from a")  # a's copy is stale: a loads it
            actor = a.runtime.registry.named(KIND_NAME, topic)
            assert actor is not None
            assert actor.previous is not None
            had = list(actor.previous.data.committed)
            assert had, "a loaded no message"
            for i in range(3):  # b's posts make a's copy stale: a reloads it for its next post
                await b.post(BOB, topic, "CON", f"from b {i}", to="PRO")
                await a.post(ALICE, topic, "PRO", f"from a {i}")
            now = a.runtime.clock.now()
            latest = actor.previous
            assert latest is not None
            assert latest.data.committed[: len(had)] == had
            assert all(x is y for x, y in zip(had, latest.data.committed, strict=False))
            fresh = await a.runtime.read(lambda conn: KIND.load(conn, topic, now))
            assert [m.msg_id for m in latest.data.committed] == list(fresh.data.messages)[:-1]
            # Both processes read the same topic, and bob's inbox holds every post to him.
            read_a = await a.call(ALICE, "debate_read", topic_id=topic, role="PRO")
            read_b = await b.call(BOB, "debate_read", topic_id=topic, role="CON")
            assert read_a["messages"] == read_b["messages"]
            inbox = await b.check(BOB, topic, "CON", sessions["CON"])
            assert [m["body"] for m in inbox["pending"]] == ["why?"]
