"""A write the store refuses (a full disk, a bad statement) leaves no reference cycle behind.

An operator's finding: after a full disk, ``/healthz``'s ``garbage_found`` had climbed by about
35 objects per refused write, which the README says means a server defect. The failure's
traceback held the writer's frame, whose locals held the failure, and the error `write`
raised held its own frame, which held the error: each refusal left a cycle that only the
collector could free, and `agora serve` freezes what survives a collection until its thaw.
"""

from __future__ import annotations

import itertools

import pytest
import trio
from _items import ITEMS, insert

from agora.errors import StoreError
from agora.store.db import open_store
from cycles import refusals_and_garbage

pytestmark = pytest.mark.sqlite_only("SQLite's refusal of a capped file")

_ids = itertools.count(1)


def _row() -> tuple[str, tuple[object, ...]]:
    n = next(_ids)
    return insert(n, f"{n:06d}" + "x" * 4000)  # about a page


async def _filled(store) -> str | None:
    """Write rows until the capped file refuses one; the refusal's cause."""
    for _ in range(20):
        try:
            await store.write([_row()])
        except StoreError as exc:
            return exc.cause
    raise AssertionError("the capped database took every row")


@pytest.mark.parametrize("process", [True, False], ids=["writer-process", "writer-thread"])
async def test_writes_refused_for_a_full_disk_leave_no_cycle(tmp_path, process):
    async with open_store(tmp_path / "agora.db", [ITEMS], writer_process=process) as store:
        with trio.fail_after(20):
            await store.write([("PRAGMA max_page_count=8", ())])  # SQLITE_FULL, as a full disk
            assert await _filled(store) == "disk_full"
            refused, left = await refusals_and_garbage(
                lambda: store.write([_row()]), StoreError, 10
            )
    assert refused == 10
    assert not left, left


@pytest.mark.parametrize("process", [True, False], ids=["writer-process", "writer-thread"])
async def test_a_failing_statement_leaves_no_cycle(tmp_path, process):
    async with open_store(tmp_path / "agora.db", [ITEMS], writer_process=process) as store:
        with trio.fail_after(20):
            refused, left = await refusals_and_garbage(
                lambda: store.write([("INSERT INTO nowhere VALUES (1)", ())]), StoreError, 10
            )
    assert refused == 10
    assert not left, left
