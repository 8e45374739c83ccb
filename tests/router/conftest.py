"""Fixtures for the router tests: a real runtime on a store, and a driver for the tools.

Every argument set a test sends is first checked against the tool's inputSchema, and every
result against its outputSchema (draft-07, from contracts/router.json): a test can only
pass with contract-valid traffic.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from memory_support import memory_workspace
from router_driver import Router

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.router.sql import MIGRATIONS


@pytest.fixture
def workspace(tmp_path: Path, options: dict[str, dict[str, Any]]) -> Path:
    """A workspace root Memory may remember in (`memory_support.memory_workspace`); a test
    module that needs another defines its own ``workspace``."""
    return memory_workspace(tmp_path, options)


@pytest.fixture
def options() -> dict[str, dict[str, Any]]:
    """Server options; tests set ``options["router"][...]`` before the runtime starts."""
    return {"router": {}}


@pytest.fixture
async def runtime(nursery, options, tmp_path):
    async with open_store(tmp_path / "router.db", MIGRATIONS) as st:
        rt = Runtime(st, nursery, clock=Clock(FakeWall()), options=options)
        yield rt
        rt.begin_shutdown()


@pytest.fixture
def router(runtime) -> Router:
    return Router(runtime)
