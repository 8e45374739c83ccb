"""A tiny entity kind for the runtime tests: a counter with a SQLite table and a log.

`Counter` is a pure entity like a toolset's: `handle` mutates memory and returns `Effects`
whose writes make the change durable. Some commands misbehave on purpose (raise after
mutating, break a table constraint) so the tests can check that a failed command leaves
the entity as the store has it. Not a test module: the tests import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import trio

from agora.runtime.entity import Effects
from agora.toolsets.base import Migration

if TYPE_CHECKING:
    import sqlite3

    import sqlite_utils

    from agora.runtime.clock import Now


def _create(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE counter_values ("
        " key TEXT PRIMARY KEY,"
        " value INTEGER NOT NULL CHECK (value >= 0),"
        " seq INTEGER NOT NULL)"
    )
    db.execute(
        "CREATE TABLE counter_log ("
        " key TEXT NOT NULL, seq INTEGER NOT NULL, tag TEXT NOT NULL, value INTEGER NOT NULL,"
        " PRIMARY KEY (key, seq))"
    )


#: The same tables for PostgreSQL.
PG_TABLES = [
    "CREATE TABLE counter_values ("
    " key TEXT PRIMARY KEY, value BIGINT NOT NULL CHECK (value >= 0), seq BIGINT NOT NULL)",
    "CREATE TABLE counter_log ("
    " key TEXT NOT NULL, seq BIGINT NOT NULL, tag TEXT NOT NULL, value BIGINT NOT NULL,"
    " PRIMARY KEY (key, seq))",
]

MIGRATIONS = [Migration("counter", 1, _create, sql={"postgresql": PG_TABLES})]

#: The runtime's idle period in these tests (seconds).
IDLE = 30.0


@dataclass(frozen=True)
class Add:
    """Add ``delta``; the reply is the new value. A negative total breaks the CHECK."""

    delta: int = 1
    tag: str = ""


@dataclass(frozen=True)
class Publish:
    """Add 1 and say that resource ``uri`` changed (`Effects.updated`)."""

    uri: str


@dataclass(frozen=True)
class Tagged:
    """Add 1; the change concerns only the long-polls keyed by ``wakes`` (`Effects.wakes`)."""

    wakes: tuple[str, ...]


@dataclass(frozen=True)
class Get:
    """Reply with the current value."""


@dataclass(frozen=True)
class Look:
    """Reply with the value; once it reaches ``need``, record a ``looked`` log row too (as a
    wait that finds its mail records its check). With ``explode``, raise there instead."""

    need: int = 1
    explode: bool = False


@dataclass(frozen=True)
class When:
    """Reply with the `Now` that ``handle`` was given."""


@dataclass(frozen=True)
class Explode:
    """Mutate the counter, then raise: a bug in ``handle``."""

    error: type[Exception] = RuntimeError


@dataclass(frozen=True)
class Refuse:
    """Commit a log row, then answer with an exception instance (a business refusal)."""


@dataclass(frozen=True)
class Garble:
    """Mutate the counter, then return something that is not `Effects`: a bug in ``handle``
    that no retry cures, answered as one (`agora.runtime.failures.not_effects`)."""


@dataclass(frozen=True)
class Crash:
    """Mutate the counter, then return `Effects` whose ``updated`` is no list: the actor,
    not ``handle``, trips on it (after the empty commit, before the reply)."""


@dataclass
class Counter:
    """The entity: value and sequence number of one key."""

    key: str
    value: int = 0
    seq: int = 0

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply one command (pure: no I/O)."""
        match command:
            case Get():
                return Effects(reply=self.value)
            case When():
                return Effects(reply=now)
            case Look(need=need, explode=explode):
                if self.value < need:
                    return Effects(reply=self.value)
                if explode:
                    raise RuntimeError("boom")
                self.seq += 1
                return Effects(reply=self.value, writes=self._save("looked"))
            case Publish(uri=uri):
                self.value += 1
                self.seq += 1
                return Effects(
                    reply=self.value, writes=self._save("publish"), changed=True, updated=[uri]
                )
            case Tagged(wakes=wakes):
                self.value += 1
                self.seq += 1
                return Effects(
                    reply=self.value, writes=self._save("tagged"), changed=True, wakes=wakes
                )
            case Add(delta=delta, tag=tag):
                self.value += delta
                self.seq += 1
                return Effects(reply=self.value, writes=self._save(tag), changed=True)
            case Refuse():
                self.seq += 1
                return Effects(reply=ValueError("refused"), writes=self._save("refused"))
            case Explode() | Garble() | Crash():
                return self._misbehave(command)
        raise AssertionError(command)

    def _misbehave(self, command: Explode | Garble | Crash) -> Effects:
        """Mutate the counter, then fail as ``command`` says."""
        self.value += 1000
        if isinstance(command, Explode):
            raise command.error("boom")
        if isinstance(command, Garble):
            return "not effects"  # type: ignore[return-value]
        return Effects(reply=self.value, updated=1)  # type: ignore[arg-type]

    def _save(self, tag: str) -> list[tuple[str, tuple[Any, ...]]]:
        return [
            (
                "INSERT INTO counter_values (key, value, seq) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq",
                (self.key, self.value, self.seq),
            ),
            (
                "INSERT INTO counter_log (key, seq, tag, value) VALUES (?, ?, ?, ?)",
                (self.key, self.seq, tag, self.value),
            ),
        ]


@dataclass
class CounterKind:
    """Loads counters; keys starting with ``missing`` do not exist (LookupError)."""

    kind: str = "counter"
    loads: list[str] = field(default_factory=list)

    def load(self, conn: sqlite3.Connection, key: str, now: Now) -> Counter:
        """Build the counter ``key`` from committed rows."""
        self.loads.append(key)
        if key.startswith("missing"):
            raise LookupError(f"no counter {key}")
        row = conn.execute("SELECT value, seq FROM counter_values WHERE key = ?", (key,)).fetchone()
        return Counter(key) if row is None else Counter(key, row[0], row[1])


def stored(conn: sqlite3.Connection, key: str) -> int | None:
    """The committed value of ``key`` (None if never written)."""
    row = conn.execute("SELECT value FROM counter_values WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def log(conn: sqlite3.Connection, key: str) -> list[tuple[int, str, int]]:
    """The committed (seq, tag, value) rows of ``key``, in sequence order."""
    rows = conn.execute(
        "SELECT seq, tag, value FROM counter_log WHERE key = ? ORDER BY seq", (key,)
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def break_first_write(store: Any, monkeypatch: Any, error: Exception) -> Any:
    """Make the store's next write wait for the returned event, then raise ``error``.

    Every later write goes through. A bug on the commit path, held where the test wants it.
    """
    opened = trio.Event()
    write = store.write
    writes = 0

    async def broken_once(batch: Any, *rest: Any) -> None:
        nonlocal writes
        writes += 1
        if writes == 1:
            await opened.wait()
            raise error
        await write(batch, *rest)

    monkeypatch.setattr(store, "write", broken_once)
    return opened


@dataclass
class DrawnKind(CounterKind):
    """Counters whose keys in ``drawn`` were just drawn at random here: new in every process."""

    drawn: set[str] = field(default_factory=set)
    create_on_shared: ClassVar[bool] = True

    def create(self, key: str, now: Any) -> Counter | None:
        if key in self.drawn:
            self.drawn.discard(key)
            return Counter(key)
        return None


@dataclass
class SeenKind(DrawnKind):
    """The same, but "new" only by this process's knowledge (not asked on a shared file)."""

    create_on_shared: ClassVar[bool] = False
