"""Fixtures of the hostile-input fuzzer: one live server per module."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
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
