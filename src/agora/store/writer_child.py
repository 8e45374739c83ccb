"""The SQLite writer's child process, and the batch runner it shares with the writer thread.

Every SQLite call holds Python's GIL while it binds parameters and again once each step
returns, so a writer thread beside a busy event loop waits for the GIL around every
statement (`docs/architecture.md`, "The writer and the GIL"). Run as a script, this module
is a child process that owns the write connection instead: the writer thread
(`agora.store.writer_process`) sends it each batch's writes as one message and blocks, without
the GIL, until its reply; the statements and the COMMIT's fsync then run on another core,
under another interpreter's lock.

It imports nothing but the standard library (the child starts with ``python -I -S`` on this
file and no package path); its siblings ``sqlite_connect.py`` (how a store connection is
opened) and ``wal.py`` (the WAL restart) it loads by path.

The pipe protocol, one message each way per request: a 4-byte little-endian length, then a
pickle (the parent and the child are the same program, so nothing untrusted is unpickled).
Requests, and what a success answers:

- ``("open", path, synchronous)``: `sqlite_connect.connect` to the existing file -> None
- ``("exec", sql)``: one statement without parameters (BEGIN, ROLLBACK, a pragma) -> its rows,
  as tuples
- ``("batch", writes)``: each job's writes back to back in the open transaction (a failure
  reruns them one savepoint each: `run_together`), then COMMIT if any job succeeded, else
  ROLLBACK -> ``(outcomes, statements_s, statements_cpu_s, end_s, end_cpu_s)``, one outcome
  per job (None, or a failure's `describe`)
- ``("wal", frames)``: `wal.restart_if_long` past ``frames`` -> whether it restarted the WAL

Each reply is ``(True, result, in_transaction)`` or ``(False, describe(error),
in_transaction)``. The child ends at the end of its input (the parent closed the pipe, or
died), never on SIGTERM, SIGINT or SIGHUP: a batch it was running is finished first, and
nothing is left half-done either way, since SQLite rolls back a transaction its process did
not commit.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import pickle
import signal
import sqlite3
import struct
import time
from pathlib import Path
from typing import Any

#: One statement and its parameters (`agora.store.jobs.Write`).
Write = tuple[str, Any]
#: A failure as it crosses the pipe: its class name, message, SQLite's codes, and its notes
#: (`note_statement`).
Described = tuple[str, str, int | None, str | None, tuple[str, ...]]

HEADER = struct.Struct("<I")


def run_together(conn: sqlite3.Connection, jobs: list[list[Write]]) -> list[BaseException | None]:
    """Run each job's writes inside the open transaction; each job's outcome.

    Back to back at first; if one fails, the transaction is rolled back and begun again and
    every job reruns in a savepoint of its own, so a bad job fails alone. A failure after
    which SQLite rolled the transaction back itself (a full disk, an I/O error) raises:
    the whole batch fails, it is no one job's fault.
    """
    execute = conn.cursor().execute  # one cursor for the batch: conn.execute makes one each
    sql = ""
    try:
        for writes in jobs:
            for sql, params in writes:
                execute(sql, params)
    except Exception as exc:
        if not conn.in_transaction:
            raise
        conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")  # the caller ends this one
        if len(jobs) == 1:
            note_statement(exc, sql)
            return [exc]
        return [run_job(conn, writes) for writes in jobs]
    return [None] * len(jobs)


def run_job(conn: sqlite3.Connection, writes: list[Write]) -> BaseException | None:
    """Run one job's writes in a savepoint; its failure, or None."""
    conn.execute("SAVEPOINT job")
    sql = ""
    try:
        for sql, params in writes:
            conn.execute(sql, params)
    except Exception as exc:  # any bad job (SQL error, malformed write) fails alone
        if not conn.in_transaction:
            raise  # rolled back by SQLite itself, savepoints and all: the batch fails
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        note_statement(exc, sql)
        return exc
    conn.execute("RELEASE job")
    return None


def note_statement(exc: BaseException, sql: str) -> None:
    """Say on ``exc`` which statement of its job failed, for the operator's log: its SQL
    text only (the parameters may hold what a client sent), once."""
    note = f"statement: {' '.join(sql.split())}"
    if note not in (getattr(exc, "__notes__", None) or ()):
        exc.add_note(note)


def describe(exc: BaseException) -> Described:
    """``exc`` as it crosses the pipe (`rebuild` makes it again on the other side)."""
    return (
        type(exc).__name__,
        str(exc),
        getattr(exc, "sqlite_errorcode", None),
        getattr(exc, "sqlite_errorname", None),
        tuple(getattr(exc, "__notes__", None) or ()),
    )


def rebuild(described: Described) -> Exception:
    """The exception `describe` described: the same ``sqlite3`` class (or builtin) with the
    same message, SQLite codes (`agora.store.diskfault` reads the codes) and notes."""
    name, message, code, code_name, notes = described
    cls = getattr(sqlite3, name, None) or getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = None
    try:
        exc = cls(message) if cls is not None else RuntimeError(f"{name}: {message}")
    except Exception:  # a class that takes other arguments
        exc = RuntimeError(f"{name}: {message}")
    if isinstance(exc, sqlite3.Error):
        exc.sqlite_errorcode = code  # type: ignore[assignment]
        exc.sqlite_errorname = code_name  # type: ignore[assignment]
    for note in notes:
        exc.add_note(note)
    return exc


def read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``, or None at the end of the input."""
    data = os.read(fd, size)
    if len(data) == size or not data:
        return data or None
    parts = [data]
    left = size - len(data)
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def frame(message: object) -> bytes:
    """``message`` as it crosses the pipe: its length, then its pickle."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def receive(fd: int) -> Any:
    """Read one framed message; None at the end of the input."""
    head = read_exactly(fd, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    payload = read_exactly(fd, size) if size else b""
    if payload is None:
        return None
    return pickle.loads(payload)


def _sibling(name: str) -> Any:
    """Its sibling module ``name``, loaded by path (the child has no package to import)."""
    spec = importlib.util.spec_from_file_location(
        f"agora_writer_child_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Child:
    """The write connection and the requests it serves."""

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None
        self.wal: Any = None

    def open(self, path: str, synchronous: str) -> None:
        opener = _sibling("sqlite_connect")
        self.conn = opener.connect(path, synchronous=synchronous, create=False)

    def batch(self, jobs: list[list[Write]]) -> tuple[Any, ...]:
        conn = self.conn
        assert conn is not None
        clock, cpu_clock = time.perf_counter, time.thread_time
        began, began_cpu = clock(), cpu_clock()
        outcomes = run_together(conn, jobs)
        ended, ended_cpu = clock(), cpu_clock()
        committed = outcomes.count(None)
        conn.execute("COMMIT" if committed else "ROLLBACK")  # no fsync for nothing
        described = [None if o is None else describe(o) for o in outcomes]
        return (
            described,
            ended - began,
            ended_cpu - began_cpu,
            clock() - ended,
            cpu_clock() - ended_cpu,
        )

    def serve(self, request: tuple[Any, ...]) -> Any:
        kind = request[0]
        if kind == "batch":
            return self.batch(request[1])
        if kind == "exec":
            assert self.conn is not None
            return [tuple(row) for row in self.conn.execute(request[1])]
        if kind == "wal":
            assert self.conn is not None
            if self.wal is None:
                self.wal = _sibling("wal")
            return bool(self.wal.restart_if_long(self.conn, request[1]))
        if kind == "open":
            self.open(request[1], request[2])
            return None
        raise ValueError(f"unknown request {kind!r}")


def main() -> None:
    """Serve requests from standard input until it ends."""
    # Its server decides when it ends (the end of its input): a Ctrl-C at the terminal, or a
    # service manager's SIGTERM to every process of the service (systemd's default), starts
    # the server's shutdown, which still needs the writer for the writes in flight.
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    # Replies go out on a private copy of standard output; anything printed goes to stderr.
    out = os.dup(1)
    os.dup2(2, 1)
    child = _Child()
    while (request := receive(0)) is not None:
        try:
            result = child.serve(request)
        except Exception as exc:
            in_transaction = child.conn is not None and child.conn.in_transaction
            reply: tuple[Any, ...] = (False, describe(exc), in_transaction)
        else:
            in_transaction = child.conn is not None and child.conn.in_transaction
            reply = (True, result, in_transaction)
        try:
            write_all(out, frame(reply))
        except BrokenPipeError:  # the parent is gone
            break
    if child.conn is not None:
        child.conn.close()


if __name__ == "__main__":
    main()
