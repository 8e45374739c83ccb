"""A commit whose outcome is unknown is answered as such; a certain failure says nothing changed.

PostgreSQL goes away mid-batch: the test holds a row lock so the node's writer blocks, then
kills the writer's connection with ``pg_terminate_backend``. Blocked before COMMIT was sent
(on the entity's version row), nothing of the batch can be saved: the writer runs it once
more on a new connection, and saves it unless that one is killed too. Blocked after (on
the counter's row, COMMIT already pipelined behind the write), the node cannot know. Real
PostgreSQL, real clock, every wait inside `trio.fail_after`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio
from _counter import Add, CounterKind, Get
from test_guarded import WAIT, node

from agora.errors import Failure, StoreError
from agora.runtime.actor import InternalError, commit_failed
from agora.toolsets.chamber.replies import internal_failure as chamber_failure
from agora.toolsets.chess.refusals import internal_failure as chess_failure
from agora.toolsets.router.replies import INTERNAL_SCHEMA, shape_failure

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime


async def _kill_writer_while_blocked_on(
    pg_url: str, rt: Runtime, lock_sql: str, times: int = 1
) -> InternalError:
    """Hold ``lock_sql``'s row lock, send Add(5) to counter a, kill the blocked writer
    (``times`` times: each new connection the writer opens, once it is blocked too)."""
    import psycopg

    kind = CounterKind()
    failed: list[InternalError] = []

    async def add() -> None:
        with pytest.raises(InternalError) as refused:
            await rt.call(kind, "a", Add(5))
        failed.append(refused.value)

    with (
        psycopg.connect(pg_url) as holder,
        psycopg.connect(pg_url, autocommit=True) as admin,
    ):
        holder.execute(lock_sql)  # a transaction holding the row, until the rollback below
        async with trio.open_nursery() as nursery:
            nursery.start_soon(add)
            query = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s"
            killed: set[int] = set()
            while len(killed) < times:
                pid = rt.store.writer_pid  # type: ignore[attr-defined]
                if pid in killed or admin.execute(query, (pid,)).fetchone() != ("Lock",):
                    await trio.sleep(0.01)
                    continue
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                killed.add(pid)
        holder.rollback()
    return failed[0]


async def test_a_batch_killed_before_its_commit_says_nothing_was_changed(pg_url):
    with trio.fail_after(WAIT):
        async with node(pg_url) as rt:
            kind = CounterKind()
            assert await rt.call(kind, "a", Add(1)) == 1
            lock = "SELECT 1 FROM agora_entities WHERE kind = 'counter' AND key = 'a' FOR UPDATE"
            # Killed before COMMIT was sent, the batch runs once more on a new connection;
            # that one is killed too.
            error = await _kill_writer_while_blocked_on(pg_url, rt, lock, times=2)
            assert not error.outcome_unknown
            assert "nothing was changed" in str(error)
            assert await rt.call(kind, "a", Get()) == 1
            assert await rt.call(kind, "a", Add(1)) == 2  # the writer reconnected


async def test_a_batch_killed_once_before_its_commit_runs_again_and_is_saved(pg_url):
    import psycopg

    with trio.fail_after(WAIT):
        async with node(pg_url) as rt:
            kind = CounterKind()
            assert await rt.call(kind, "a", Add(1)) == 1
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (rt.store.writer_pid,))  # type: ignore[attr-defined]
            assert await rt.call(kind, "a", Add(5)) == 6  # a server restart is not an error


async def test_a_batch_killed_during_its_commit_says_the_outcome_is_unknown(pg_url):
    with trio.fail_after(WAIT):
        async with node(pg_url) as rt:
            kind = CounterKind()
            assert await rt.call(kind, "a", Add(1)) == 1
            lock = "SELECT 1 FROM counter_values WHERE key = 'a' FOR UPDATE"
            error = await _kill_writer_while_blocked_on(pg_url, rt, lock)
            assert error.outcome_unknown
            assert "may or may not have been saved" in str(error)
            assert "nothing was changed" not in str(error)
            # Re-reading tells: here the transaction died with its connection.
            assert await rt.call(kind, "a", Get()) == 1


def test_the_runtime_keeps_the_stores_certainty():
    assert commit_failed(StoreError("x", outcome_unknown=True)).outcome_unknown
    certain = commit_failed(StoreError("x"))
    assert not certain.outcome_unknown
    assert "nothing was changed" in str(certain)


def _failure(unknown: bool) -> Failure:
    message = "the change may or may not have been saved" if unknown else "nothing was changed"
    return Failure("internal", message, not unknown, "corr-0123456789abcdef", "t", unknown)


def test_the_toolsets_say_so_when_the_outcome_is_unknown():
    import jsonschema

    chamber: dict[str, Any] = chamber_failure(_failure(True))
    assert not chamber["retryable"]
    assert "may or may not" in chamber["recovery_hint"]
    assert "Nothing was changed" in chamber_failure(_failure(False))["recovery_hint"]
    assert "read the board" in chess_failure(_failure(True))["error"]
    router = shape_failure(_failure(True))
    assert router["state_changed"] == "unknown"
    assert not router["retryable"]
    assert "may or may not" in router["message"]
    assert shape_failure(_failure(False))["state_changed"] is False
    for body in (router, shape_failure(_failure(False))):
        jsonschema.validate(body, INTERNAL_SCHEMA)
