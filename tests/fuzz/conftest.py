"""Fixtures of the hostile-input fuzzer (one live server per module) and of the access
tests (one ``agora serve`` with principals, shared by their modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from access_world import World
from fuzz_live import LiveServer

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path_factory.mktemp("fuzz") / "fuzz.db").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The access tests' server (`access_world`), stopped cleanly at the end."""
    started = World.start(tmp_path_factory.mktemp("access"))
    try:
        yield started
    finally:
        started.stop()
