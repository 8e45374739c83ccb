"""A failed write says its change could not be saved; a failed read says it could not be read.

An operator's finding: a write was told "could not be read". On a shared store a command
whose entity changed on another node is rerun on a fresh load; when that reload failed, the
writer was told its entity "could not be read", as if it had asked for a read. And the other
way round, a read-only reply whose version probe failed was told "the change could not be
saved". The failures of those moments are injected here into a PostgreSQL node's
store (the version guard's conflict, then a load or a probe that fails as a database that
went away does); the rest is real. Real clock, every wait inside `trio.fail_after`.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from _counter import Add, CounterKind, Get
from test_guarded import WAIT, node

from agora.errors import StoreError
from agora.runtime.actor import InternalError
from agora.store.neutral import Conflict

AWAY = "read failed: PostgreSQL did not answer within 10 s"


async def test_a_write_whose_reload_fails_after_a_conflict_says_it_could_not_be_saved(
    pg_url, monkeypatch
):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(pg_url) as a:
            assert await a.call(kind, "k", Add(1)) == 1
            real_write = a.store.write

            async def overtaken(writes: Any, guards: Any = (), updated: Any = ()) -> None:
                monkeypatch.setattr(a.store, "read_versioned", away)  # the reload fails
                raise Conflict([("counter", "k")])

            async def away(*args: Any) -> Any:
                raise StoreError(AWAY)

            monkeypatch.setattr(a.store, "write", overtaken)
            with pytest.raises(InternalError) as failed:
                await a.call(kind, "k", Add(1))
            assert str(failed.value) == "the change could not be saved; nothing was changed"
            assert failed.value.away
            monkeypatch.undo()
            assert a.store.write == real_write
            assert await a.call(kind, "k", Get()) == 1


async def test_a_read_whose_probe_fails_says_it_could_not_be_read(pg_url, monkeypatch):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(pg_url) as a:
            assert await a.call(kind, "k", Add(1)) == 1

            async def away(keys: Any) -> Any:
                raise StoreError(AWAY)

            monkeypatch.setattr(a.store, "probe", away)
            with pytest.raises(InternalError) as single:
                await a.call(kind, "k", Get())
            assert await a.call_atomic([(kind, "x", Add(1)), (kind, "y", Add(1))]) == [1, 1]
            with pytest.raises(InternalError) as atomic:
                await a.call_atomic([(kind, "x", Get()), (kind, "y", Get())])
    said = "could not be read: the database is unavailable or did not answer in time;"
    assert str(single.value) == f"counter {said} nothing was changed"
    assert str(atomic.value) == f"the entities {said} nothing was changed"
