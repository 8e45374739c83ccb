"""The WAL file shrinks back to `WAL_SIZE_LIMIT` once a checkpoint has emptied it: a WAL that
grew while a reader held an old snapshot does not keep its size (its disk) for ever."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.store import sqlite_connect

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

LIMIT = 256 * 1024


def _write(conn: object, rows: int) -> None:
    for _ in range(rows):  # one transaction each, as the writer's batches
        conn.execute("INSERT INTO t (x) VALUES (zeroblob(4000))")  # type: ignore[attr-defined]


def test_the_wal_is_cut_back_once_a_checkpoint_emptied_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sqlite_connect, "WAL_SIZE_LIMIT", LIMIT)
    path = tmp_path / "wal.db"
    writer = sqlite_connect.connect(str(path), synchronous="OFF")
    writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x BLOB)")
    reader = sqlite_connect.connect(str(path), synchronous="OFF", readonly=True)
    wal = tmp_path / "wal.db-wal"
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM t").fetchall()  # holds its snapshot
        _write(writer, 1500)  # ~6 MiB: the checkpoints cannot pass the reader's snapshot
        grown = wal.stat().st_size
        assert grown > 4 * 2**20
        reader.execute("COMMIT")
        # The store's checkpointer (its own connection: the writer's never checkpoints in a
        # COMMIT) empties the WAL, and a later write restarts it.
        reader.execute("PRAGMA wal_checkpoint(PASSIVE)")
        sizes = []
        for _ in range(50):
            _write(writer, 1)
            sizes.append(wal.stat().st_size)
        assert min(sizes) <= LIMIT  # without the limit: never under `grown`
    finally:
        reader.close()
        writer.close()
