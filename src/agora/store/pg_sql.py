"""psycopg 3 glue: ``?`` statements translated once, rows by name, connections set up alike.

Toolset SQL keeps SQLite's ``?`` placeholders; psycopg wants ``%s`` and reads every ``%`` as
the start of one (its placeholder scan is not quote-aware), so `translate` turns ``?`` into
``%s`` outside string literals and doubles every ``%``, once per distinct statement (cached).
Mapping parameters use ``:name`` as in SQLite and become ``%(name)s``. Rows come back as
`Row`: a tuple that also answers ``row["column"]`` like ``sqlite3.Row``. Python booleans are
sent as integers, since the shared schema stores flags in integer columns as SQLite does.
This module does no Trio work.
"""

from __future__ import annotations

import logging
import os
import re
import select
import socket
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import Format

from agora.logsafe import one_line
from agora.store.neutral import MissingTable
from agora.store.pg_bound import Cutter
from agora.store.pg_grants import INSUFFICIENT_PRIVILEGE, connect_privilege, privileges

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

#: libpq keepalives, so a vanished peer is noticed in seconds rather than hours.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}


class _LostPipeline(logging.Filter):
    """Drops psycopg's ``error ignored terminating <psycopg.Pipeline [BAD]>: the connection
    is lost``: the error that ended the pipeline is raised to agora, which accounts for it
    (the outage's lines: `agora.store.outage`); this second word of it was logged 2-5 times
    per outage, outside that account. Any other psycopg warning passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("error ignored terminating"):
            return True
        return "connection is lost" not in record.getMessage()


logging.getLogger("psycopg").addFilter(_LostPipeline())

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|::|:[A-Za-z_][A-Za-z0-9_]*|%")


@lru_cache(maxsize=4096)
def translate(sql: str, named: bool = False) -> str:
    """``sql`` with ``?`` (or ``:name`` when ``named``) as psycopg placeholders."""

    def swap(m: re.Match[str]) -> str:
        token = m.group(0)
        if token[0] in "'\"":  # a literal: keep its ? and :words, but double its %
            return token.replace("%", "%%")
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        if named and token.startswith(":") and token != "::":
            return f"%({token[1:]})s"
        return token

    return _TOKEN.sub(swap, sql)


def convert(sql: str, params: Any) -> tuple[str, Any]:
    """The psycopg form of one ``(sql, params)`` pair."""
    if isinstance(params, dict):
        return translate(sql, True), params
    return translate(sql), tuple(params)


class Row(tuple[Any, ...]):
    """A result row: by position, or by column name (case-insensitive) like sqlite3.Row."""

    _index: dict[str, int]

    def __new__(cls, values: Sequence[Any], index: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            try:
                return tuple.__getitem__(self, self._index[item.lower()])
            except KeyError:
                raise IndexError(f"no such column: {item}") from None
        return tuple.__getitem__(self, item)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._index)


def row_factory(cursor: Any) -> Any:
    """psycopg row factory building `Row`s."""
    names = [c.name for c in cursor.description or ()]
    index = {name.lower(): i for i, name in enumerate(names)}

    def make(values: Sequence[Any]) -> Row:
        return Row(values, index)

    return make


class _BoolAsInt(Dumper):
    oid = psycopg.adapters.types["int8"].oid
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _NumericAsNumber(Loader):
    """``numeric`` (what ``SUM`` of integers gives) as int or float, as SQLite returns it."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        if "." in text or "e" in text.lower() or text in ("NaN", "Infinity", "-Infinity"):
            return float(text)
        return int(text)


class PgCursor:
    """The rows of one statement (see `agora.store.neutral.ReadCursor`)."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    def fetchone(self) -> Any:
        """The next row, or None."""
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""
        return self._cursor.rowcount


class PgConn:
    """A psycopg connection that speaks the neutral `ReadConn` (``?`` placeholders).

    Attributes:
        begin: A ``BEGIN ...`` to send together with the next statement (one round trip for
            both, in a pipeline), or None. `began` says whether it has been sent.
        began: The pending ``begin`` and its statement ran; False while it waits for a
            statement, and when they failed (if they never reached the server, nothing ran).
        ahead: A statement (``?`` placeholders, parameters) to send in that same round trip,
            after ``begin`` and before the next statement, or None; its rows land in
            `ahead_rows`. How an entity's version travels with its loader's first query.
        committing: A ``COMMIT`` was sent and its answer not read yet (`commit_later`):
            `settle` reads it before anything else is sent.
    """

    dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn
        self._cutter = Cutter(conn.pgconn.socket)
        self.begin: str | None = None
        self.began = False
        self.ahead: tuple[str, Any] | None = None
        self.ahead_rows: list[Any] | None = None
        self.committing = False

    @property
    def usable(self) -> bool:
        """Whether the connection may serve another read (neither closed nor broken)."""
        return not (self.raw.closed or self.raw.broken)

    def cut(self) -> None:
        """End every wait on the connection at once, from any thread (`Cutter`)."""
        self._cutter.cut()

    def close(self) -> None:
        """Close the connection (by the thread using it, or when none does); never raises."""
        self.raw.close()
        self._cutter.close()

    def execute(self, sql: str, parameters: Any = (), /) -> PgCursor:
        """Run one statement (after the pending ``begin`` and ``ahead``, in one round trip)."""
        query, params = convert(sql, parameters)
        try:
            if self.begin is None and self.ahead is None:
                return PgCursor(self.raw.execute(query, params))
            begin, self.begin = self.begin, None
            ahead, self.ahead = self.ahead, None
            first = None
            try:
                with self.raw.pipeline():
                    if begin is not None:
                        self.raw.execute(begin)
                    first = None if ahead is None else self.raw.execute(*convert(*ahead))
                    cursor = self.raw.execute(query, params)
            finally:
                # Kept even if the statement failed (a loader may expect that: a missing
                # table), since the transaction cannot run the ``ahead`` one after it.
                if first is not None and first.pgresult is not None:
                    self.ahead_rows = first.fetchall()
            self.began = True
            return PgCursor(cursor)
        except psycopg.errors.UndefinedTable as exc:
            raise MissingTable(str(exc)) from exc

    def send_ahead(self, sql: str, parameters: Any) -> None:
        """Send ``sql`` in the round trip of the next statement, before it (`ahead`)."""
        self.ahead, self.ahead_rows = (sql, parameters), None

    def ahead_result(self) -> list[Any] | None:
        """The rows of the `send_ahead` statement; None if no statement carried it (it is
        then dropped)."""
        rows, self.ahead, self.ahead_rows = self.ahead_rows, None, None
        return rows

    def commit_later(self) -> None:
        """Send ``COMMIT`` without waiting for its answer (`settle` reads it).

        The server ends the transaction as soon as it reads the message; only this side's
        wait is spared (a round trip per read, and on a busy machine one more wait for the
        server process and this thread to be scheduled).
        """
        pgconn = self.raw.pgconn
        pgconn.send_query(b"COMMIT")
        self.committing = True
        while pgconn.flush():  # 1: more to send once the socket is writable
            select.select([pgconn.socket], [pgconn.socket], [])
            pgconn.consume_input()

    def settle(self) -> None:
        """Read the answer of a `commit_later` ``COMMIT``, if one is out.

        Raises:
            psycopg.OperationalError: the connection broke meanwhile (nothing is lost: the
                transaction only read).
        """
        if not self.committing:
            return
        self.committing = False
        pgconn = self.raw.pgconn
        failed = None
        while True:
            while pgconn.is_busy():
                select.select([pgconn.socket], [], [])
                pgconn.consume_input()
            result = pgconn.get_result()
            if result is None:
                break
            if result.status != pq.ExecStatus.COMMAND_OK:
                failed = result.error_message
        if failed is not None or pgconn.status != pq.ConnStatus.OK:
            self.close()
            raise psycopg.OperationalError(f"a read's COMMIT failed: {failed!r}")


#: Seconds libpq waits for a new connection to be answered.
CONNECT_TIMEOUT = 10


def application_name(role: str) -> str:
    """How this node's connection for ``role`` is named in ``pg_stat_activity``: ``agora``,
    the node (host and process id: several nodes run on one host in tests and benches), and
    what the connection is for; at most 63 bytes, PostgreSQL's limit."""
    name = f"agora {socket.gethostname()}:{os.getpid()} {role}".strip()
    return name.encode()[:63].decode(errors="ignore")


def connect(url: str, *, autocommit: bool = True, role: str = "") -> psycopg.Connection[Any]:
    """A connection to ``url`` with agora's settings: keepalives, `Row` rows, bools as ints,
    and an ``application_name`` naming the node and ``role`` (`application_name`), unless
    the URL or ``PGAPPNAME`` names it already.

    Raises:
        psycopg.Error: if the server cannot be reached.
    """
    named = "application_name" in url or os.environ.get("PGAPPNAME")
    extra = {} if named else {"application_name": application_name(role)}
    conn: psycopg.Connection[Any] = psycopg.connect(
        url,
        autocommit=autocommit,
        row_factory=row_factory,
        connect_timeout=CONNECT_TIMEOUT,
        **KEEPALIVES,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.adapters.register_loader("numeric", _NumericAsNumber)
    return conn


def _parts(url: str) -> dict[str, str]:
    """The host, port, user and database ``url`` names (never the password), each from the
    URL, else libpq's environment (``PGHOST``, ...), else libpq's default."""
    try:
        given = conninfo_to_dict(url)
    except psycopg.Error:
        given = {}

    def part(key: str, env: str, default: str) -> str:
        return str(given.get(key) or os.environ.get(env) or default)

    user = part("user", "PGUSER", "the login's own name")
    return {
        "host": part("host", "PGHOST", "localhost"),
        "port": part("port", "PGPORT", "5432"),
        "user": user,
        "dbname": part("dbname", "PGDATABASE", user),
    }


def server_named(url: str) -> str:
    """The server ``url`` reaches, as a refusal names it: host, port, user and database."""
    named = _parts(url)
    return (
        f"host {named['host']}, port {named['port']}, user {named['user']}, database"
        f" {named['dbname']}"
    )


def refusal(url: str, exc: psycopg.Error) -> str:
    """Why the start could not open ``url``, in libpq's words; a connection that timed out
    (a server that accepts and never answers: stopped, a paused VM) names the server, as
    libpq's own "connection refused" does, which "connection timeout expired" did not."""
    said = one_line(exc)
    if "timeout expired" in said:
        said += (
            f" ({server_named(url)}: no answer within {CONNECT_TIMEOUT} s; is it stopped, or"
            " stalled?)"
        )
    elif getattr(exc, "sqlstate", None) == INSUFFICIENT_PRIVILEGE:
        named = _parts(url)
        said += f" ({privileges(named['user'], named['dbname'])})"
    elif "CONNECT privilege" in said:  # refused at log-in: no SQLSTATE reaches psycopg
        named = _parts(url)
        said += f" ({connect_privilege(named['user'], named['dbname'])})"
    return said


def is_postgres_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return value.startswith(("postgresql://", "postgres://"))
