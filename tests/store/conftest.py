"""Fixtures for the store tests: a file store with the items table and a writer gate."""

from __future__ import annotations

import pytest
from _items import ITEMS, Gate

from agora.store.db import open_store


@pytest.fixture
def gate():
    g = Gate()
    yield g
    g.open()  # never leave the writer thread parked, even when a test failed


@pytest.fixture
async def file_store(tmp_path, gate):
    # The gate is a Python function on the writer's connection: the writer thread's own.
    async with open_store(
        tmp_path / "agora.db", [ITEMS, gate.migration], writer_process=False
    ) as store:
        yield store
        gate.open()  # before the close, which waits for the writer thread
