"""Crash isolation: a failing command answers its caller and leaves the entity as stored.

Covers a bug in ``handle`` (the entity is reloaded, nothing half-applied survives), a commit
the store refuses, an actor task that breaks outside ``handle`` (restarted on next use, the
commands queued behind it still served), and a runtime that stopped under its callers.
"""

from __future__ import annotations

import logging
import re

import pytest
import trio
import trio.testing
from _counter import (
    Add,
    Crash,
    Explode,
    Garble,
    Get,
    Refuse,
    break_first_write,
    log,
    stored,
)

from agora.errors import ActorStopped, ToolError
from agora.runtime.actor import InternalError
from agora.runtime.registry import Runtime


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(RuntimeError, id="runtime-error"),
        pytest.param(KeyError, id="key-error"),  # a LookupError, but still a bug in handle
        pytest.param(LookupError, id="lookup-error"),
    ],
)
async def test_a_failing_handle_answers_internal_error_and_reloads_the_entity(
    runtime, kind, caplog, error
):
    assert await runtime.call(kind, "a", Add(3)) == 3
    with trio.fail_after(5), caplog.at_level(logging.ERROR), pytest.raises(InternalError) as info:
        await runtime.call(kind, "a", Explode(error))
    assert "boom" not in str(info.value)  # sanitized: no internals reach the client
    # A bug the same command repeats: no retry, and no internal kind named, in its words.
    assert str(info.value) == "internal error; nothing was changed"
    assert info.value.bug
    # Its traceback's line carries the id the client gets (embedder's finding).
    (line,) = [r for r in caplog.records if "failed on Explode" in r.getMessage()]
    assert (
        line.getMessage()
        == f"counter a failed on Explode (correlation {info.value.correlation_id})"
    )
    assert line.exc_info is not None
    # The +1000 that handle applied before raising is gone: the entity came back from the store.
    assert await runtime.call(kind, "a", Get()) == 3
    assert kind.loads == ["a", "a"]
    assert runtime.registry.spawned == 1  # same actor, fresh entity
    assert await runtime.call(kind, "a", Add(1)) == 4


async def test_a_tool_error_raised_in_handle_is_the_refusal_it_is(runtime, kind, caplog):
    """Embedder's finding: a ToolError raised (not returned) in ``handle`` was taken for a bug
    and answered "internal error ...; retry the call". It is the caller's refusal; the entity,
    maybe half-mutated, still reloads, and nothing is logged as a failure."""
    assert await runtime.call(kind, "a", Add(3)) == 3
    with trio.fail_after(5), caplog.at_level(logging.ERROR), pytest.raises(ToolError) as info:
        await runtime.call(kind, "a", Explode(ToolError))
    assert info.value.body == {"error": "boom"}
    assert caplog.records == []
    assert await runtime.call(kind, "a", Get()) == 3  # the +1000 is gone: reloaded
    assert kind.loads == ["a", "a"]


async def test_a_hostile_entity_key_cannot_forge_a_log_line(runtime, kind, caplog):
    # Keys come from callers (a router run id is any string): a failure's log line escapes it.
    key = "a\nERROR agora.fake: forged \x1b[31m" + "x" * 500
    with trio.fail_after(5), caplog.at_level(logging.ERROR), pytest.raises(InternalError):
        await runtime.call(kind, key, Explode())
    (line,) = [r.getMessage() for r in caplog.records if "failed on Explode" in r.getMessage()]
    assert "\n" not in line
    assert "\x1b" not in line
    assert "a\\nERROR agora.fake: forged \\x1b[31m" in line
    assert re.search(r"chars\] failed on Explode \(correlation corr-[0-9a-f]{16}\)$", line)


async def test_one_failing_actor_does_not_disturb_the_others(runtime, kind):
    failures = 0

    async def explode() -> None:
        nonlocal failures
        with pytest.raises(InternalError):
            await runtime.call(kind, "bad", Explode())
        failures += 1

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(explode)
                nursery.start_soon(runtime.call, kind, "good", Add(1))
    assert failures == 20
    assert await runtime.call(kind, "good", Get()) == 20
    assert await runtime.call(kind, "bad", Get()) == 0
    assert runtime.registry.spawned == 2


async def test_a_missing_entity_answers_lookup_error_every_time(runtime, kind):
    for _ in range(2):
        with pytest.raises(LookupError, match="no counter missing-1"):
            await runtime.call(kind, "missing-1", Get())
    assert kind.loads == ["missing-1", "missing-1"]  # nothing half-built was kept
    assert await runtime.call(kind, "a", Add(1)) == 1


async def test_an_exception_reply_is_raised_after_its_writes_commit(runtime, kind):
    with pytest.raises(ValueError, match="refused"):
        await runtime.call(kind, "a", Refuse())
    assert await runtime.read(lambda conn: log(conn, "a")) == [(1, "refused", 0)]


async def test_a_refused_commit_answers_internal_error_and_keeps_the_stored_state(
    runtime, kind, caplog
):
    assert await runtime.call(kind, "a", Add(2)) == 2
    with (
        trio.fail_after(5),
        caplog.at_level(logging.ERROR),
        pytest.raises(InternalError, match="internal error; nothing was changed") as refused,
    ):
        await runtime.call(kind, "a", Add(-5))  # breaks CHECK (value >= 0)
    # No retry can cure it: a bug, whose detail its reporter logs once (not the runtime).
    assert refused.value.permanent
    assert "counter a commit failed" in refused.value.detail
    assert "check constraint" in refused.value.detail.lower()  # SQLite or PostgreSQL
    assert "commit failed" not in caplog.text
    assert await runtime.call(kind, "a", Get()) == 2
    # The failed command's sequence number was not kept either: the next one reuses it.
    assert await runtime.call(kind, "a", Add(1)) == 3
    entries = await runtime.read(lambda conn: log(conn, "a"))
    assert [(seq, value) for seq, _, value in entries] == [(1, 2), (2, 3)]


async def test_a_handle_that_returns_no_effects_is_answered_as_a_bug(runtime, kind, caplog):
    """It used to crash the actor (AttributeError) and tell the caller to retry: the same
    command returns the same, so it is a bug, answered as one and logged by its reporter."""
    assert await runtime.call(kind, "a", Add(2)) == 2
    with trio.fail_after(5), caplog.at_level(logging.DEBUG), pytest.raises(InternalError) as info:
        await runtime.call(kind, "a", Garble())
    assert info.value.permanent  # the server answers it as `unexpected`: not retryable
    assert str(info.value) == "internal error; nothing was changed"
    assert info.value.detail == (
        "counter a: handle returned a str, not Effects, for Garble (a bug in the entity)"
    )
    assert caplog.records == []  # not logged here: once, by whoever reports it
    assert runtime.registry.spawned == 1  # the actor lives on, its entity reloaded
    assert await runtime.call(kind, "a", Get()) == 2


async def test_a_queued_handle_that_returns_no_effects_fails_alone(
    runtime, store, kind, monkeypatch
):
    """Commands queued behind a commit run as a group: the garbled one fails alone."""
    assert await runtime.call(kind, "a", Add(1)) == 1
    gate = trio.Event()
    write = store.write

    async def held(batch, *rest):
        await gate.wait()
        await write(batch, *rest)

    monkeypatch.setattr(store, "write", held)
    outcomes: dict[str, object] = {}

    async def caller(name: str, command: object) -> None:
        try:
            outcomes[name] = await runtime.call(kind, "a", command)
        except InternalError as exc:
            outcomes[name] = exc

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, "first", Add(1))
            await trio.testing.wait_all_tasks_blocked()  # holds the turn, committing
            for name, command in (("before", Add(1)), ("garbled", Garble()), ("after", Add(1))):
                nursery.start_soon(caller, name, command)
                await trio.testing.wait_all_tasks_blocked()
            gate.set()
    garbled = outcomes.pop("garbled")
    assert isinstance(garbled, InternalError)
    assert garbled.permanent
    assert outcomes == {"first": 2, "before": 3, "after": 4}
    assert runtime.registry.spawned == 1
    assert await runtime.read(lambda conn: stored(conn, "a")) == 4


async def test_an_actor_that_crashes_outside_handle_restarts_on_next_use(runtime, kind, caplog):
    assert await runtime.call(kind, "a", Add(2)) == 2
    with trio.fail_after(5), caplog.at_level(logging.ERROR), pytest.raises(InternalError):
        await runtime.call(kind, "a", Crash())
    assert "crashed" in caplog.text
    assert len(runtime.registry) == 0
    assert await runtime.call(kind, "a", Get()) == 2
    assert runtime.registry.spawned == 2
    assert kind.loads == ["a", "a"]


async def test_commands_queued_behind_a_crash_run_on_a_fresh_actor(
    runtime, store, kind, monkeypatch
):
    gate = break_first_write(store, monkeypatch, RuntimeError("a bug in the commit path"))
    results: list[int] = []
    failed: list[int] = []

    async def caller(i: int) -> None:
        try:
            results.append(await runtime.call(kind, "a", Add(1, str(i))))
        except InternalError:
            failed.append(i)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, 0)
            await trio.testing.wait_all_tasks_blocked()  # command 0 is in hand
            for i in range(1, 6):
                nursery.start_soon(caller, i)
            await trio.testing.wait_all_tasks_blocked()  # 1..5 wait in the mailbox
            gate.set()
    assert failed == [0]
    assert sorted(results) == [1, 2, 3, 4, 5]
    assert runtime.registry.spawned == 2
    assert await runtime.read(lambda conn: stored(conn, "a")) == 5


async def test_callers_of_a_stopping_runtime_get_actor_stopped(store, kind, monkeypatch):
    gate = trio.Event()
    write = store.write

    async def held(batch, *rest):
        await gate.wait()
        await write(batch, *rest)

    monkeypatch.setattr(store, "write", held)
    outcomes: list[object] = []

    async def caller() -> None:
        try:
            outcomes.append(await runtime.call(kind, "a", Add(1)))
        except ActorStopped:
            outcomes.append("stopped")

    with trio.fail_after(5):
        async with trio.open_nursery() as callers, trio.open_nursery() as actors:
            runtime = Runtime(store, actors)
            for _ in range(4):
                callers.start_soon(caller)
            await trio.testing.wait_all_tasks_blocked()
            runtime.begin_shutdown()
            actors.cancel_scope.cancel()
    assert outcomes == ["stopped"] * 4
    assert len(runtime.registry) == 0
    with pytest.raises(ActorStopped):  # the actors' nursery is gone: nothing to spawn in
        await runtime.call(kind, "a", Get())
    assert len(runtime.registry) == 0
    monkeypatch.undo()
    assert await store.read(lambda conn: stored(conn, "a")) is None
