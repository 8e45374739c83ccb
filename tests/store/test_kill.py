"""Durability: every write acknowledged before a SIGKILL is in the database after it.

A subprocess (`_writer_proc.py`) writes under load with ``synchronous=FULL`` and prints each
id once its write returned; the test reads those acks for a while, kills the process with
SIGKILL in the middle of the load, reopens the file and looks for every acknowledged id.
Three rounds on one file also check that a killed database reopens and takes more writes.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from agora.store.db import open_store

pytestmark = pytest.mark.sqlite_only(
    "SIGKILL durability of a SQLite file (PostgreSQL's: tests/nodes)"
)

WRITER = Path(__file__).with_name("_writer_proc.py")
TASKS = 16


async def _run_and_kill(db: Path, first: int, acks_wanted: int) -> set[int]:
    """Start a writer, read acks until ``acks_wanted`` (or 10 s), SIGKILL it, return acks."""
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(WRITER), str(db), str(first), str(TASKS), "60"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    buffer = b""
    lines: list[bytes] = []
    try:
        with trio.move_on_after(10):
            while len(lines) <= acks_wanted:  # the first line is "ready"
                chunk = await proc.stdout.receive_some()
                assert chunk, "the writer exited before it was killed"
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                lines += complete
        proc.send_signal(signal.SIGKILL)
        with trio.fail_after(10):
            await proc.wait()
            # Acks already in the pipe were printed before the kill: they count too.
            while chunk := await proc.stdout.receive_some():
                buffer += chunk
    finally:
        with trio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.stdout.aclose()
    lines += buffer.split(b"\n")[:-1]  # a torn last line was never a complete ack
    assert proc.returncode == -signal.SIGKILL
    assert lines[0] == b"ready"
    return {int(line) for line in lines[1:]}


async def test_every_acknowledged_write_survives_sigkill(tmp_path):
    db = tmp_path / "kill.db"
    acked: set[int] = set()
    for round_no, wanted in enumerate((250, 750, 1500)):
        acked |= await _run_and_kill(db, round_no * 10_000_000, wanted)
        assert len(acked) >= 50, "too few writes were acknowledged to test anything"
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            present = {r[0] for r in conn.execute("SELECT id FROM kill_acks")}
        finally:
            conn.close()
        missing = acked - present
        assert not missing, f"{len(missing)} acknowledged writes were lost: {sorted(missing)[:10]}"
    async with open_store(db) as store:  # the killed file opens cleanly through agora
        total = await store.read(lambda c: c.execute("SELECT count(*) FROM kill_acks").fetchone())
        assert total[0] >= len(acked)
