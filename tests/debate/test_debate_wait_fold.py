"""debate_signal_wait on one topic is answered by the post that satisfies it, in the post's
own turn (`agora.runtime.polls`): the post and the wait's recorded check are one
transaction, the check is durable before the wait returns, a failed commit saves neither,
and a second post racing the first is not in the wait's page. Inline ``:memory:`` store.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from debate_support import ALICE, BOB, CAROL

from agora.errors import StoreError
from agora.runtime.actor import InternalError
from agora.toolsets.debate import sql

pytestmark = pytest.mark.sqlite_only(
    "only an unguarded store folds a wait into the post that wakes it"
)


@pytest.fixture
async def room(desk):
    """CONDUCTOR (alice), ADVOCATE (bob), CRITIC (carol) on one ACTIVE topic."""
    a, b, c = await desk.session(ALICE), await desk.session(BOB), await desk.session(CAROL)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b), "CRITIC": (CAROL, c)})
    return {"topic": topic, "a": a, "b": b, "c": c}


def gated_writes(store, monkeypatch, fail: Exception | None = None) -> trio.Event:
    """Hold every write of statements until the returned event is set; with ``fail``, the
    first held write raises it instead of committing."""
    gate = trio.Event()
    write = store.write
    failures = [fail] if fail is not None else []

    async def held(writes, *rest):
        if not writes:
            return
        await gate.wait()
        if failures:
            raise failures.pop()
        await write(writes, *rest)

    monkeypatch.setattr(store, "write", held)
    return gate


async def start_wait(desk, room, nursery, got) -> None:
    """Park bob's wait as ADVOCATE on the room's topic; return once it is parked."""

    async def wait() -> None:
        try:
            got.append(await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000))
        except Exception as exc:
            got.append(exc)

    nursery.start_soon(wait)
    await trio.testing.wait_all_tasks_blocked()


async def recorded(desk, room, msg_id):
    """(the delivery states of ``msg_id``, bob's committed last check) from the store."""

    def read(conn):
        rows = conn.execute(
            "SELECT state FROM debate_deliveries WHERE msg_id = ?", (msg_id,)
        ).fetchall()
        cursor = sql.cursors(conn, room["topic"]).get(("ADVOCATE", room["b"]))
        return [r[0] for r in rows], None if cursor is None else cursor.last_check_at

    return await desk.runtime.read(read)


async def test_a_post_and_the_wait_it_satisfies_commit_in_one_transaction(desk, room):
    store, got = desk.runtime.store, []
    await desk.post(ALICE, room["topic"], "CONDUCTOR", "warm")  # the topic is loaded
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await start_wait(desk, room, nursery, got)
            before = store.counters()
            sent = await desk.post(ALICE, room["topic"], "CONDUCTOR", "hi", to="ADVOCATE")
            after = store.counters()
            states, checked_at = await recorded(desk, room, sent["msg_id"])
    assert (after["commits"], after["commands"]) == (before["commits"] + 1, before["commands"] + 1)
    assert [m["msg_id"] for m in got[0]["pending"]] == [sent["msg_id"]]
    assert states == ["delivered"]  # the wait's check, committed with the post
    assert checked_at is not None


async def post(desk, room, body: str = "hi") -> dict:
    """A post from the CONDUCTOR (alice) addressed to ADVOCATE."""
    return await desk.post(ALICE, room["topic"], "CONDUCTOR", body, to="ADVOCATE")


async def test_the_waits_check_is_durable_before_the_wait_returns(desk, room, monkeypatch):
    seen: list[object] = []
    await desk.post(ALICE, room["topic"], "CONDUCTOR", "warm")
    gate = gated_writes(desk.runtime.store, monkeypatch)

    async def wait() -> None:
        out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000)
        # What the store holds the moment the reply is in hand.
        seen.append(await recorded(desk, room, out["pending"][0]["msg_id"]))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(post, desk, room)
            await trio.testing.wait_all_tasks_blocked()
            assert seen == []  # the post and the check are one write, held at the gate
            gate.set()
    [(states, checked_at)] = seen
    assert states == ["delivered"]
    assert checked_at is not None


async def test_a_failed_commit_leaves_neither_the_post_nor_the_waits_check(
    desk, room, monkeypatch, caplog
):
    caplog.set_level(logging.CRITICAL)
    got: list[object] = []
    await desk.post(ALICE, room["topic"], "CONDUCTOR", "warm")
    gate = gated_writes(desk.runtime.store, monkeypatch, StoreError("disk says no"))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await start_wait(desk, room, nursery, got)
            gate.set()
            with pytest.raises(InternalError, match="nothing was changed"):
                await desk.post(ALICE, room["topic"], "CONDUCTOR", "lost", to="ADVOCATE")
            await trio.testing.wait_all_tasks_blocked()
    assert len(got) == 1
    assert isinstance(got[0], InternalError)
    bodies = await desk.runtime.read(
        lambda c: [r[0] for r in c.execute("SELECT body FROM debate_messages").fetchall()]
    )
    assert "lost" not in bodies
    last_check = await desk.runtime.read(
        lambda c: sql.cursors(c, room["topic"]).get(("ADVOCATE", room["b"]))
    )
    assert last_check is None or last_check.last_check_at is None
    out = await desk.check(BOB, room["topic"], "ADVOCATE", room["b"])
    assert out["count"] == 0  # the topic reloaded without the failed post


async def test_a_second_post_racing_the_first_is_left_for_the_next_check(desk, room, monkeypatch):
    got: list[object] = []
    await desk.post(ALICE, room["topic"], "CONDUCTOR", "warm")
    gate = gated_writes(desk.runtime.store, monkeypatch)
    sent: list[dict] = []

    async def post(body: str) -> None:
        sent.append(await desk.post(ALICE, room["topic"], "CONDUCTOR", body, to="ADVOCATE"))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await start_wait(desk, room, nursery, got)
            nursery.start_soon(post, "first")  # runs inline; its commit waits at the gate
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(post, "second")  # queues behind it
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
    assert len(sent) == 2
    assert [m["body"] for m in got[0]["pending"]] == ["first"]
    out = await desk.check(BOB, room["topic"], "ADVOCATE", room["b"])
    assert [m["body"] for m in out["pending"]] == ["first", "second"]  # cursor never moved
