"""What nodes sharing one PostgreSQL database settle between them with advisory locks.

Migrating: nodes starting together take turns on a lock named after the namespace (the
``search_path`` schema), so each step runs once and records its version in ``agora_schema``
(the same versions table the SQLite side keeps), all of one start in one transaction; which
steps are due is `agora.store.migrations.plan`'s. Background tasks that must run once per
cluster hold a `ClusterLock` (see `agora.store.pg.PgStore.try_singleton`). Opening the store
is `agora.store.pg`'s; this module must stay free of toolsets.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING, Any

import psycopg

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.migrations import applied, failed, plan
from agora.store.neutral import POSTGRESQL
from agora.store.pg_bound import GivenUp, Lease
from agora.store.pg_grants import INSUFFICIENT_PRIVILEGE, privileges
from agora.store.pg_sql import PgConn, connect
from agora.store.sqlite import STOP_SECONDS

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.store.migrations import Migration
    from agora.store.opening import Opening

#: Core tables every PostgreSQL store has (the schema-version table and the version guard).
CORE_TABLES = (
    "CREATE TABLE IF NOT EXISTS agora_schema (component TEXT PRIMARY KEY, version BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agora_entities (kind TEXT NOT NULL, key TEXT NOT NULL, "
    "version BIGINT NOT NULL, PRIMARY KEY (kind, key))",
)


def migrate(
    url: str, migrations: Iterable[Migration], opening: Opening | None = None
) -> tuple[str, dict[str, int]]:
    """Create the core tables and apply every component's PostgreSQL steps.

    Nodes starting together take turns on a session-level advisory lock, so each step runs
    once. Every step of this start runs in one transaction: if one fails, none is kept
    (nor the core tables of a new namespace). Returns the namespace and the versions after
    migrating. With ``opening`` (`agora.store.opening.open_in_thread`), a cancellation of
    the open cancels the statement running (the wait for the lock, a step) and commits
    nothing.

    Raises:
        StoreError: a step has no PostgreSQL statements or is malformed (refused before any
            step runs), a step fails, or the schema is newer.
        OpenCancelled: the open was cancelled (nobody waits for this thread any more).
    """
    steps = list(migrations)
    check = opening.check if opening is not None else _go_on
    with connect(url, role="migrate") as conn:
        if opening is not None:
            opening.adopt(partial(_cancel_query, conn), None)  # `with` closes it
        check()
        schema = _namespace(conn)
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"agora:{schema}:migrate",))
        try:
            # One transaction for the whole start (PostgreSQL's DDL is transactional): a
            # step that fails leaves the namespace as it was, not half migrated.
            with conn.transaction():
                try:
                    for sql in CORE_TABLES:
                        conn.execute(sql)
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise StoreError(
                        "cannot open the PostgreSQL database: "
                        f"{one_line(exc)} ({_privileges(conn, schema)})"
                    ) from exc
                rows = conn.execute("SELECT component, version FROM agora_schema").fetchall()
                current = {r[0]: int(r[1]) for r in rows}
                before = dict(current)
                for component, todo in plan(current, steps, POSTGRESQL):
                    for step in todo:
                        if step.version <= current.get(component, 0):
                            continue
                        check()
                        _apply(conn, step, schema)
                        current[component] = step.version
                check()  # a cancelled open commits nothing
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"agora:{schema}:migrate",))
    for component, version in current.items():  # committed (all or none): said now
        applied(component, before.get(component, 0), version)
    return schema, current


def _go_on() -> None:
    """No cancellation to look for (an inline open)."""


def _cancel_query(conn: psycopg.Connection[Any]) -> None:
    """Ask the server to cancel what ``conn`` runs (the open was cancelled)."""
    with contextlib.suppress(psycopg.Error):  # the server will not hear: it ends anyway
        conn.cancel_safe(timeout=STOP_SECONDS)


def _privileges(conn: psycopg.Connection[Any], schema: str) -> str:
    """What the role ``conn`` logged in as must be granted, naming it and its database."""
    return privileges(conn.info.user, conn.info.dbname, schema)


def _apply(conn: psycopg.Connection[Any], step: Migration, schema: str) -> None:
    try:
        with conn.transaction():  # a savepoint in the start's transaction
            # plan() refused, before any step ran, a step without PostgreSQL statements.
            for sql in step.statements(POSTGRESQL) or ():
                conn.execute(sql)
            conn.execute(
                "INSERT INTO agora_schema (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (step.component, step.version),
            )
    except psycopg.Error as exc:
        denied = getattr(exc, "sqlstate", None) == INSUFFICIENT_PRIVILEGE
        raise failed(step, exc, _privileges(conn, schema) if denied else "") from exc


class ClusterLock:
    """A session-level advisory lock held by one connection (see `PgStore.try_singleton`).

    Its connection is used by worker threads the Trio side may give up on (a PostgreSQL
    that does not answer: `agora.store.pg_bound.Lease`), so `release` never waits: it
    closes the connection, or cuts it under the thread still using it, which closes it.
    """

    def __init__(self, url: str, name: str) -> None:
        self._url = url
        self._name = name
        #: The lock's connection, and the thread using it (`agora.store.pg_bound`).
        self.lease = Lease()

    def acquire(self) -> bool:
        """Try to take the lock (blocking I/O: in a thread, inside `lease`); whether it was
        taken."""
        conn = self.lease.adopt(PgConn(connect(self._url, role="lock")))
        row = conn.raw.execute(
            "SELECT pg_try_advisory_lock(hashtext(%s))", (self._name,)
        ).fetchone()
        return bool(row and row[0])

    def alive(self) -> bool:
        """Whether the lock is still held (its connection answers); blocking I/O."""
        try:
            return self.lease.run(self._ping)
        except (psycopg.Error, GivenUp):
            return False

    def _ping(self) -> bool:
        conn = self.lease.links[0] if self.lease.links else None
        if not isinstance(conn, PgConn) or not conn.usable:
            return False
        conn.raw.execute("SELECT 1")
        return True

    def release(self) -> None:
        """Give the lock back by closing its connection; never raises, never waits."""
        for link in self.lease.end():
            link.close()


def _namespace(conn: Any) -> str:
    """The schema the tables live in: the first on the connection's ``search_path``.

    PostgreSQL skips a schema of the path that does not exist, so a URL naming
    ``team_a`` first, before ``CREATE SCHEMA team_a``, would silently use the next one
    (``public``: another namespace's tables). Refused instead, naming the schema.

    Raises:
        StoreError: the first schema the path names does not exist, or none does.
    """
    found = conn.execute("SELECT current_schema(), current_user").fetchone()
    current, user = (found[0], found[1]) if found else (None, "")
    path = str(conn.execute("SHOW search_path").fetchone()[0])
    for entry in _path_entries(path):
        if entry == "$user":
            exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (user,))
            if exists.fetchone() is None:
                continue
            entry = user
        if entry != current:
            instead = (
                f" (else agora would use {current!r}, another namespace's tables)"
                if current is not None
                else " (no other schema on it exists either)"
            )
            raise StoreError(
                f"the search_path names schema {entry!r} first, but this database has no such"
                f" schema: create it (CREATE SCHEMA {entry}) or fix the URL's search_path"
                f"{instead}"
            )
        return entry
    if current is None:
        raise StoreError(f"no schema on the search_path ({path}) exists in this database")
    return str(current)


def _path_entries(path: str) -> list[str]:
    """The schema names of a ``SHOW search_path`` value, in order, unquoted."""
    entries, name, quoted, i = [], "", False, 0
    while i < len(path):
        c = path[i]
        if quoted:
            if c == '"' and path[i + 1 : i + 2] == '"':
                name, i = name + '"', i + 1
            elif c == '"':
                quoted = False
            else:
                name += c
        elif c == '"':
            quoted = True
        elif c == ",":
            entries.append(name.strip())
            name = ""
        else:
            name += c.lower()  # an unquoted name is folded, as PostgreSQL does
        i += 1
    entries.append(name.strip())
    return [e for e in entries if e]
