"""Fixtures for the debate tests: a `Desk` on a real runtime over an in-memory store."""

from __future__ import annotations

import pytest
from debate_support import Desk

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS


@pytest.fixture
async def desk(nursery):
    wall = FakeWall()
    async with open_store(":memory:", MIGRATIONS) as store:
        rt = Runtime(store, nursery, clock=Clock(wall))
        yield Desk(rt, wall)
        rt.begin_shutdown()
