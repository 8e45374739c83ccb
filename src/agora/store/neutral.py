"""What every backend offers: the neutral read connection, version guards, conflicts.

Toolsets load entities and run listings through `ReadConn`: ``conn.execute(sql, params)``
with ``?`` placeholders, then ``fetchone()`` / ``fetchall()`` (or iteration), rows read by
position or by column name. A SQLite connection with ``sqlite3.Row`` rows is one as it is;
the PostgreSQL backend wraps its connection (`agora.store.pg_sql.PgConn`). Code written
against this protocol runs on both backends unchanged.

A `Guard` is how a write says "only if this entity is still at the version I loaded": the
backend locks each guarded entity's version row, rejects a job whose version moved with
`Conflict` before any of its writes run, and bumps the versions of the jobs it commits. This
module does no I/O and imports no driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agora.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

#: The two SQL dialects a migration may provide statements for.
SQLITE = "sqlite"
POSTGRESQL = "postgresql"


class ReadCursor(Protocol):
    """The rows of one statement: by position (``row[0]``) or name (``row["col"]``)."""

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the remaining rows."""
        ...


class ReadConn(Protocol):
    """A connection as entity loaders and `runtime.read` functions see it."""

    def execute(self, sql: str, parameters: Any = (), /) -> ReadCursor:
        """Run one statement with ``?`` placeholders."""
        ...


def dialect_of(conn: ReadConn) -> str:
    """The SQL dialect ``conn`` speaks (``"sqlite"`` or ``"postgresql"``).

    For the rare statement that must differ by engine (an index-specific search path);
    everything else is written once, in the SQL both accept.
    """
    return str(getattr(conn, "dialect", SQLITE))


@dataclass(frozen=True, slots=True)
class Guard:
    """Commit a job only if entity (kind, key) is still at ``version`` (0: never written)."""

    kind: str
    key: str
    version: int


class Conflict(StoreError):
    """Another node (or process) changed a guarded entity first; nothing was written.

    Attributes:
        stale: The (kind, key) pairs whose version had moved.
    """

    def __init__(self, stale: list[tuple[str, str]]) -> None:
        names = ", ".join(f"{kind} {key}" for kind, key in stale)
        super().__init__(f"changed elsewhere since it was loaded: {names}")
        self.stale = stale


class MissingTable(Exception):
    """A statement named a table that does not exist (yet): what SQLite reports as an
    ``OperationalError`` ("no such table"); for tables created on first use."""


class Busy(StoreError):
    """A command kept meeting changes made elsewhere; nothing was changed (a retry may succeed)."""


#: How a NOTIFY line names a changed resource URI (``@\\t<uri>``) rather than an entity.
URI_MARK = "@"


def payload_lines(
    changes: list[tuple[str, str, int]], uris: Sequence[str] = (), limit: int = 7900
) -> list[str]:
    """NOTIFY payloads (``kind\\tkey\\tversion`` and ``@\\turi`` lines), each under ``limit``.

    A line longer than ``limit`` (an absurd key or URI) is left out, since PostgreSQL refuses
    payloads of 8000 bytes or more: a listener's sweep catches such a key instead (a URI's
    subscribers on other nodes then hear nothing of that change).
    """
    out: list[str] = []
    lines: list[str] = []
    size = 0
    every = [f"{kind}\t{key}\t{version}" for kind, key, version in changes]
    every += [f"{URI_MARK}\t{uri}" for uri in uris if "\n" not in uri]
    for line in every:
        n = len(line.encode()) + 1
        if n > limit:
            continue
        if size + n > limit and lines:
            out.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += n
    if lines:
        out.append("\n".join(lines))
    return out


def parse_uris(payload: str) -> list[str]:
    """The resource URIs named by one NOTIFY payload (its ``@\\turi`` lines)."""
    mark = URI_MARK + "\t"
    return [line[len(mark) :] for line in payload.split("\n") if line.startswith(mark)]


def parse_payload(payload: str) -> list[tuple[str, str, int]]:
    """The (kind, key, version) changes of one NOTIFY payload; malformed lines are skipped."""
    changes = []
    for line in payload.split("\n"):
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].isdigit():
            changes.append((parts[0], parts[1], int(parts[2])))
    return changes
