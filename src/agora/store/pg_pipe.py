"""Send a list of statements through libpq's pipeline in one write, read the results once.

psycopg's own pipeline mode flushes the socket after every statement (one ``send`` per
statement on this side, one wake-up per packet on the server's), and its per-statement
result handling runs in Python generators: for the writer's batches, dozens of short
statements each, that was most of the PostgreSQL path's cost on the agora side. `Pipe`
drives the same libpq pipeline directly: every statement is queued in libpq's buffer, one
``Sync`` ends the list, the buffer goes out in as few writes as the kernel takes, and the
results are read back in order until the sync. Statements are prepared once per connection
(by statement text and parameter types; a name is never reused), so the server plans each once.

Parameters are sent the way psycopg sends them by default: ``str`` as text of unknown type
(the server infers it), ``int`` as int2/int4/int8/numeric by size, ``float`` as float8,
``bool`` as an integer (the schema stores flags in integer columns), ``bytes`` as binary
bytea, None as NULL, a list of str or int as an array literal (the statement casts it). A
statement with any other parameter type raises `Unsupported` before anything is sent, and
the caller uses psycopg instead. The first failing statement's error is raised as
psycopg's exception for it (later ones are skipped by the server); a broken connection
raises `psycopg.OperationalError`. Blocking I/O (the writer's thread); no Trio.
"""

from __future__ import annotations

import itertools
import math
import re
import select
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors, pq

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Prepared statement numbers, unique in this process (so any two pipes on one connection
#: never clash).
_NAMES = itertools.count(1)
#: Distinct statements prepared per connection; past this, statements go unprepared.
MAX_PREPARED = 256

_INT2, _INT4, _INT8, _NUMERIC, _FLOAT8, _BYTEA = 21, 23, 20, 1700, 701, 17
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|::|:[A-Za-z_][A-Za-z0-9_]*")


#: A statement on the wire: $n query text, parameter bytes, type oids, formats.
Wired = tuple[bytes, list[bytes | None], tuple[int, ...], list[int]]


class Unsupported(Exception):
    """A parameter of a type `Pipe` does not send (the caller falls back to psycopg)."""


@lru_cache(maxsize=4096)
def native(sql: str, named: bool) -> tuple[bytes, tuple[str, ...]]:
    """``sql`` (``?``, or ``:name`` when ``named``) with ``$n`` placeholders, and
    the parameter names in ``$n`` order (empty for positional statements)."""
    names: list[str] = []
    count = 0

    def swap(m: re.Match[str]) -> str:
        nonlocal count
        token = m.group(0)
        if token[0] in "'\"" or token == "::":
            return token
        if token == "?":
            count += 1
            return f"${count}"
        if not named:
            return token
        name = token[1:]
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _TOKEN.sub(swap, sql).encode(), tuple(names)


def _dump(value: Any) -> tuple[bytes | None, int, int]:
    """(wire bytes, type oid, format) of one parameter."""
    if value is None:
        return None, 0, 0
    if isinstance(value, str):
        return value.encode(), 0, 0
    if isinstance(value, bool):
        return (b"1" if value else b"0"), _INT8, 0
    if isinstance(value, int):
        return str(value).encode(), _int_oid(value), 0
    if isinstance(value, float):
        if math.isfinite(value):
            return repr(value).encode(), _FLOAT8, 0
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return text.encode(), _FLOAT8, 0
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value), _BYTEA, 1
    if isinstance(value, list):  # an array literal; the statement casts it (``%s::text[]``)
        return ("{" + ",".join(_element(v) for v in value) + "}").encode(), 0, 0
    raise Unsupported(f"parameter of type {type(value).__name__}")


def _int_oid(value: int) -> int:
    """The smallest of int2, int4, int8 and numeric that holds ``value`` (psycopg's rule)."""
    if -(2**15) <= value < 2**15:
        return _INT2
    if -(2**31) <= value < 2**31:
        return _INT4
    return _INT8 if -(2**63) <= value < 2**63 else _NUMERIC


def _element(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise Unsupported(f"array element of type {type(value).__name__}")


class Pipe:
    """Pipelined statements on one psycopg connection's libpq handle (see the module)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self._prepared: dict[tuple[bytes, tuple[int, ...]], bytes] = {}

    def run(self, wire: Sequence[Wired]) -> list[pq.abc.PGresult]:
        """Send every statement (made by `wire`), sync, and return their results in order.

        Raises:
            psycopg.Error: the first statement that failed (the rest did not run), or
                `psycopg.OperationalError` if the connection broke.
        """
        pgconn = self.conn.pgconn
        pgconn.enter_pipeline_mode()
        try:
            return self._exchange(pgconn, wire)
        finally:
            if (
                pgconn.status == pq.ConnStatus.OK
                and pgconn.pipeline_status != pq.PipelineStatus.OFF
            ):
                pgconn.exit_pipeline_mode()

    @staticmethod
    def wire(sql: str, params: Any) -> Wired:
        """One statement (``?`` or ``:name`` placeholders) ready to send.

        Raises:
            Unsupported: a parameter's type is not one `Pipe` sends.
        """
        if isinstance(params, dict):
            query, names = native(sql, True)
            values: Sequence[Any] = [params[name] for name in names]
        else:
            query, _ = native(sql, False)
            values = params
        dumped = [_dump(v) for v in values]
        return query, [d[0] for d in dumped], tuple(d[1] for d in dumped), [d[2] for d in dumped]

    def _exchange(self, pgconn: pq.abc.PGconn, wire: Sequence[Wired]) -> list[pq.abc.PGresult]:
        fresh: list[tuple[bytes, tuple[int, ...]]] = []  # prepared in this pipeline
        sent: list[bool] = []  # per command sent: whether it is a Prepare (no caller result)
        for query, values, types, formats in wire:
            key = (query, types)
            name = self._prepared.get(key)
            if name is None and len(self._prepared) < MAX_PREPARED:
                # Never reused: a Prepare in a pipeline that failed may exist on the server.
                name = self._prepared[key] = f"agora_{next(_NAMES)}".encode()
                pgconn.send_prepare(name, query, types)
                fresh.append(key)
                sent.append(True)
            if name is None:
                pgconn.send_query_params(query, values, types, formats)
            else:
                pgconn.send_query_prepared(name, values, formats)
            sent.append(False)
        pgconn.pipeline_sync()
        self._flush(pgconn)
        results: list[pq.abc.PGresult] = []
        failed: pq.abc.PGresult | None = None
        while True:
            res = self._next(pgconn)
            if res is None:
                continue  # the end of one statement's results
            status = res.status
            if status == pq.ExecStatus.PIPELINE_SYNC:
                break
            if status == pq.ExecStatus.FATAL_ERROR and failed is None:
                failed = res
            results.append(res)
        if failed is not None or len(results) != len(sent):
            for key in fresh:  # their Prepare may have been skipped: prepare again next time
                self._prepared.pop(key, None)
            if failed is None:
                raise psycopg.OperationalError("the pipeline returned too few results")
            raise errors.error_from_result(failed, encoding=self.conn.info.encoding)
        return [r for r, prepare in zip(results, sent, strict=True) if not prepare]

    @staticmethod
    def _flush(pgconn: pq.abc.PGconn) -> None:
        while pgconn.flush():  # 1: more to send once the socket is writable
            select.select([pgconn.socket], [pgconn.socket], [])
            pgconn.consume_input()  # the server may be sending while we send

    @staticmethod
    def _next(pgconn: pq.abc.PGconn) -> pq.abc.PGresult | None:
        while pgconn.is_busy():
            select.select([pgconn.socket], [], [])
            pgconn.consume_input()
        return pgconn.get_result()
