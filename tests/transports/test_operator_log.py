"""What the operator's log says of events that are not bugs: once per episode, not per call.

Another process holding a SQLite file's write lock (a second connection in ``BEGIN
EXCLUSIVE`` stands for it) makes page writes wait past ``commit_timeout`` and fail: each
client is told to retry, and the log tells the episode once (WARNING), then the commit that
ends it (INFO); each refused call's line, with its correlation id, is DEBUG.
"""

from __future__ import annotations

import logging
import sqlite3

import pytest
import trio
from http_support import RawHttp, Reply, serve

PAGE = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
TIMEOUT = 30
CALLS = 4


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_writes_kept_from_the_write_lock_are_one_warning_then_one_info(tmp_path, caplog):
    """Before: three lines per refused call (a WARNING from the store, an ERROR from the
    runtime, a WARNING from the connection), as if each were a bug."""
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "agora.db"
    replies: list[Reply] = []

    async def create(port: int, name: str) -> None:
        async with RawHttp.open(port) as client:
            replies.append(await client.request("POST", "/play/tables", {"name": name}, PAGE))

    config = {"db": str(path), "commit_timeout": 0.5, "writer_process": False}
    with trio.fail_after(TIMEOUT):
        async with serve(**config) as server:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN EXCLUSIVE")  # another process writes, and keeps at it
            try:
                async with trio.open_nursery() as nursery:
                    for i in range(CALLS):
                        nursery.start_soon(create, server.port, f"t{i}")
            finally:
                other.execute("ROLLBACK")
                other.close()
            await create(server.port, "after")  # the lock is free: it commits
    refused, committed = replies[:CALLS], replies[CALLS]
    assert all(r.status == 503 for r in refused), refused
    assert all("nothing was changed" in r.json()["error"] for r in refused), refused[0]
    assert all(r.json()["retryable"] for r in refused), refused[0]
    assert committed.status < 300, committed
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(loud) == 1, [r.getMessage() for r in loud]
    assert loud[0].levelno == logging.WARNING
    assert "write lock" in loud[0].getMessage()
    again = [r for r in caplog.records if "commit again" in r.getMessage()]
    assert len(again) == 1, again
    assert again[0].levelno == logging.INFO
    assert f"{CALLS} writes dropped" in again[0].getMessage()
    ids = {r.json()["correlation_id"] for r in refused}
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert all(any(i in line for line in debug) for i in ids), debug


@pytest.mark.sqlite_only("the database file renamed away stands for a database gone")
async def test_readiness_logs_its_changes_not_every_probe(tmp_path, caplog):
    """Before: every probe that answered 503 logged ``not ready: ...`` at INFO (a line a second
    per balancer during an outage), and none said when the node was ready again."""
    caplog.set_level(logging.INFO, logger="agora.server.health")
    path, away = tmp_path / "agora.db", tmp_path / "agora.db.away"
    statuses: list[int] = []
    with trio.fail_after(TIMEOUT):
        async with serve(db=str(path)) as server, RawHttp.open(server.port) as client:

            async def probe(times: int) -> None:
                for _ in range(times):
                    statuses.append((await client.request("GET", "/readyz")).status)  # noqa: PERF401

            await probe(1)
            path.rename(away)  # the probe's own connection cannot open it now
            await probe(3)
            away.rename(path)
            await probe(2)
    assert statuses == [200, 503, 503, 503, 200, 200]
    told = [r for r in caplog.records if r.name == "agora.server.health"]
    said = [(r.levelname, r.getMessage()) for r in told if r.levelno >= logging.INFO]
    assert len(said) == 2, said
    (first, why), (last, again) = said
    assert first == "WARNING", said
    assert why.startswith("not ready: "), said
    assert last == "INFO", said
    assert "ready again" in again, said
    assert "3 probes" in again, said


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_shutdown_says_calls_waiting_for_a_commit_answer_later(tmp_path, caplog):
    """Before: "1 calls still running after 0.3 s (grace_seconds): cancelled", though the
    call, waiting for its commit, answered commit_timeout later (as documented)."""
    caplog.set_level(logging.INFO, logger="agora.server.app")
    path = tmp_path / "agora.db"
    replies: list[Reply] = []

    async def create(port: int) -> None:
        async with RawHttp.open(port) as client:
            replies.append(await client.request("POST", "/play/tables", {"name": "t"}, PAGE))

    config = {"db": str(path), "grace_seconds": 0.3, "commit_timeout": 1.0}
    config["writer_process"] = False  # a child would outlive the test by its stuck BEGIN
    other = sqlite3.connect(path, isolation_level=None)
    try:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery, serve(**config) as server:
                other.execute("BEGIN EXCLUSIVE")  # another process writes: the page waits
                nursery.start_soon(create, server.port)
                while server.app.in_flight == 0:  # noqa: ASYNC110 - counted, as a call is
                    await trio.sleep(0.01)
                # shutdown follows, while the write waits for the lock
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert [r.status for r in replies] == [503], replies
    said = [r.getMessage() for r in caplog.records if "still running after" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith(
        "1 call still running after 0.3 s (grace_seconds), cancelled: 1 page request."
    )
    assert "1 writes still wait for their commit" in said[0], said
    assert "within 1 s more (commit_timeout)" in said[0], said
