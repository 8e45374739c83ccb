"""Fixtures for the runtime tests: a runtime over an inline ``:memory:`` store.

The inline store runs SQLite on the Trio thread, so Trio's autojump clock stays exact.
"""

from __future__ import annotations

import pytest
from _counter import IDLE, MIGRATIONS, CounterKind

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store


@pytest.fixture
def kind():
    return CounterKind()


@pytest.fixture
async def store():
    async with open_store(":memory:", MIGRATIONS) as s:
        yield s


@pytest.fixture
async def runtime(store, nursery):
    rt = Runtime(store, nursery, clock=Clock(FakeWall()), idle_seconds=IDLE, mailbox=8)
    yield rt
    rt.begin_shutdown()
