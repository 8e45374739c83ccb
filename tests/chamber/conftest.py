"""Fixtures for the chamber tests: a real runtime on an in-memory store, and an agent."""

from __future__ import annotations

from typing import Any

import pytest
from chamber_agent import PUBLIC_URL, START, Agent

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.chamber import build_toolset, store
from agora.toolsets.chamber.contract import default_contract


@pytest.fixture
def wall() -> FakeWall:
    return FakeWall(START)


@pytest.fixture
def options() -> dict[str, dict[str, Any]]:
    """Server options; tests set ``options["chamber"]["signing_key"]`` as they go."""
    return {"chamber": {}}


@pytest.fixture
def chamber():
    return build_toolset(default_contract())


@pytest.fixture
async def runtime(nursery, wall, options, chamber):
    _toolset, _ = chamber
    async with open_store(":memory:", store.MIGRATIONS) as st:
        rt = Runtime(st, nursery, clock=Clock(wall), options=options, public_url=PUBLIC_URL)
        yield rt
        rt.begin_shutdown()


@pytest.fixture
def agent(runtime, chamber) -> Agent:
    toolset, _ = chamber
    return Agent(runtime, dict(toolset.handlers))
