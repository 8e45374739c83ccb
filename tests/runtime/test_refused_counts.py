"""``/healthz`` counts the calls a database outage refused, and says the cause.

An operator's finding: while PostgreSQL was stopped for 8 s, 39 write calls to one debate
topic were refused and ``store.writes_refused`` rose by 1: most failed while their entity
was loaded ("debate_topic could not be read"), before any commit, and nothing counted them.
And ``last_write_error.cause`` stayed null for the outage, as for a bad statement. Here a
PostgreSQL node's load, probe and commit fail as a database that went away does (injected);
the rest is real. Real clock, every wait inside `trio.fail_after`.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from _counter import Add, CounterKind, Get
from test_guarded import WAIT, node

from agora.errors import StoreError
from agora.runtime.actor import InternalError
from agora.store.refusals import WriteRefusals

AWAY = "read failed: PostgreSQL did not answer within 10 s"


async def away(*args: Any) -> Any:
    raise StoreError(AWAY)


async def test_calls_refused_at_their_load_or_probe_are_counted(pg_url, monkeypatch):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(pg_url) as a:
            assert await a.call(kind, "cached", Add(1)) == 1
            assert a.store.counters()["loads_refused"] == 0
            monkeypatch.setattr(a.store, "read_versioned", away)
            monkeypatch.setattr(a.store, "probe", away)
            for key in ("new", "other"):  # a write call whose entity cannot be loaded
                with pytest.raises(InternalError, match="could not be read"):
                    await a.call(kind, key, Add(1))
            with pytest.raises(InternalError, match="could not be read"):
                await a.call(kind, "cached", Get())  # its copy's probe fails
            counters = a.store.counters()
    assert counters["loads_refused"] == 3
    assert counters["writes_refused"] == 0  # none reached its commit


def test_a_write_refused_for_a_database_away_says_unavailable():
    refusals = WriteRefusals()
    refusals.note(StoreError("write failed: server closed the connection unexpectedly"))
    last = refusals.counters()["last_write_error"]
    assert last["cause"] == "unavailable"  # before: None, as for a bad statement
    assert last["reason"] == (
        "the database was unavailable or did not answer in time; nothing was saved"
    )
    refusals.note(StoreError("write failed: syntax error", permanent=True))
    assert refusals.counters()["last_write_error"]["cause"] is None
    assert refusals.counters()["writes_refused"] == 2
