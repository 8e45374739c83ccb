"""A real agora server in a thread, driven from hypothesis' synchronous test bodies.

`LiveServer` runs ``open_server`` (every toolset, a real SQLite file, a loopback listener on
port 0) under ``trio.run`` in a daemon thread; the test thread reaches it through
``trio.from_thread``. `RawSession` feeds raw bytes to one MCP session, exactly as the
WebSocket and stdio transports do (``Connection.feed_bytes``), and collects its replies.
`digest` hashes every row of every table, to prove a rejected call changed nothing. Log
records at WARNING or above from agora are kept in ``problems``: an internal failure logs
one, so a fuzz case that provokes it is caught even if its reply looked fine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

import trio

from agora.config import Config
from agora.identity import Principal
from agora.server.connection import Connection
from agora.server.embed import open_server

if TYPE_CHECKING:
    from pathlib import Path

    from agora.server.embed import Server

#: Seconds a call may take before the fuzzer cancels it as a parked long-poll.
PARK_SECONDS = 0.3
CALL_TIMEOUT = 30.0


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


class RawSession:
    """One initialized MCP session fed raw bytes (no socket)."""

    def __init__(self, server: Server, nursery: trio.Nursery, path: str = "/mcp") -> None:
        endpoint = server.app.endpoint(path)
        assert endpoint is not None
        self.replies: dict[Any, dict[str, Any]] = {}
        self._arrived = trio.Event()
        self.conn = Connection(
            server.app,
            server.app.new_session(endpoint),
            self._receive,
            nursery,
            principal=Principal(),
            endpoint=endpoint.params,
        )
        self.app = server.app
        self._next = 0

    async def _receive(self, message: dict[str, Any], related: Any) -> None:
        if "method" not in message:
            self.replies[message.get("id")] = message
            self._arrived.set()
            self._arrived = trio.Event()

    def next_id(self) -> int:
        self._next += 1
        return self._next

    async def exchange(self, rid: Any, data: bytes, rid_json: str) -> dict[str, Any] | None:
        """Feed ``data`` and return the reply to ``rid`` (None: parked, then cancelled
        with ``rid_json``, the id as it was sent).

        A malformed message is answered with id null; that counts as its reply.
        """
        self.replies.clear()
        await self.conn.feed_bytes(data)
        with trio.move_on_after(PARK_SECONDS):
            while rid not in self.replies and None not in self.replies:
                await self._arrived.wait()
            return self.replies.get(rid, self.replies.get(None))
        cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}'
        await self.conn.feed_bytes(cancel % rid_json.encode())
        with trio.fail_after(CALL_TIMEOUT):  # a cancelled call must end, answered or not
            await self.app.wait_idle()
        return None


class LiveServer:
    """agora with every toolset on ``db``, running in a thread until `stop`."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.port = 0
        self.session: RawSession | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._ready = threading.Event()
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self.log = _Collector()
        self._thread = threading.Thread(target=self._main, daemon=True)

    def start(self) -> LiveServer:
        logging.getLogger("agora").addHandler(self.log)
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise RuntimeError(f"the server did not start: {self._error!r}")
        return self

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        config = Config(db=str(self.db), port=0, synchronous="NORMAL", max_in_flight=64)
        async with open_server(config) as server, trio.open_nursery() as nursery:
            self.port = server.port
            self.session = RawSession(server, nursery)
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            self._ready.set()
            await self._stop.wait()
            self.session.conn.cancel_all()
            nursery.cancel_scope.cancel()

    def run(self, fn: Any, *args: Any) -> Any:
        """Run the async ``fn(*args)`` in the server's thread and return its value."""
        if not self._thread.is_alive():
            raise RuntimeError(f"the server thread died: {self._error!r}")
        return trio.from_thread.run(fn, *args, trio_token=self._token)

    def call(self, data: bytes, rid: Any, rid_json: str | None = None) -> dict[str, Any] | None:
        """One raw message on the fuzz session; its reply (None if parked and cancelled)."""
        assert self.session is not None
        sent_id = rid_json if rid_json is not None else json.dumps(rid)
        return self.run(self.session.exchange, rid, data, sent_id)  # type: ignore[no-any-return]

    def stop(self) -> None:
        logging.getLogger("agora").removeHandler(self.log)
        if self._stop is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(60)
        if self._error is not None:
            raise RuntimeError("the server failed") from self._error


def _pg_url(db: Path) -> str | None:
    """On the suite's PostgreSQL pass, the URL of the schema that stands for ``db``."""
    from agora.store.pg_redirect import redirect_server, schema_for, schema_url

    server = redirect_server()
    return None if server is None else schema_url(server, schema_for(str(db)))


_PG_TABLES = (
    "SELECT table_name FROM information_schema.tables"
    " WHERE table_schema = current_schema() ORDER BY table_name"
)


def digest(db: Path) -> dict[str, str]:
    """Table name -> sha256 over its rows in a stable order, for every table of ``db``."""
    url = _pg_url(db)
    if url is not None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            return _digest(pg, _PG_TABLES)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return _digest(conn, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    finally:
        conn.close()


def _digest(conn: Any, tables_sql: str) -> dict[str, str]:
    out = {}
    for (table,) in conn.execute(tables_sql).fetchall():
        h = hashlib.sha256()
        rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
        for row in sorted(rows, key=repr):
            h.update(repr(row).encode())
        out[table] = h.hexdigest()
    return out


class Watch:
    """Tells cheaply whether anyone committed to ``db`` since the last look.

    ``PRAGMA data_version`` on a connection of our own changes exactly when another
    connection committed; the per-table `digest` is computed only then (and names the
    tables a rejected call changed). PostgreSQL has no such counter, so on the suite's
    PostgreSQL pass every look digests (a commit that changed no row goes unseen there).
    """

    def __init__(self, db: Path) -> None:
        self.db = db
        self._pg = _pg_url(db) is not None
        self._conn = None
        if not self._pg:
            self._conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        self._version = self._data_version()
        self.tables = digest(db)

    def _data_version(self) -> int:
        if self._conn is None:
            return -1
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def look(self) -> list[str]:
        """The tables whose rows changed since the last look (empty: no commit at all)."""
        if self._pg:
            before, self.tables = self.tables, digest(self.db)
            return changed(before, self.tables)
        version = self._data_version()
        if version == self._version:
            return []
        self._version = version
        before, self.tables = self.tables, digest(self.db)
        return changed(before, self.tables) or ["(a commit that changed no row)"]


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The tables whose rows differ between two digests."""
    return sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
