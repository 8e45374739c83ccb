"""The test suite's PostgreSQL pass: every database a process opens lives on PostgreSQL.

With ``AGORA_TEST_BACKEND=postgresql`` and ``AGORA_TEST_PG`` (a PostgreSQL database URL) in
the environment, `agora.store.db.open_store` (and so ``agora serve --db``, ``agora stdio
--db`` and every store a test opens) does not open SQLite. It opens instead:

- ``:memory:`` as a schema of its own, run inline on the Trio thread like SQLite's in-memory
  store (autojump clocks stay exact). Once closed, the schema is emptied and kept for the
  next ``:memory:`` store of the same migrations (this process only), so most stores skip
  their migrations; one whose tables a test changed is dropped instead;
- a file path as the schema named after the file's absolute path (a pooled one renamed, or a
  new one), kept, so a restarted server (or a second process given the same path) finds
  its rows. The file itself is never created.

The test suite sets both variables for its PostgreSQL pass (servers it starts inherit them);
nothing else should. Schemas are isolated by ``search_path``, as `agora.store.pg` expects.
This module knows nothing of toolsets.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import psycopg

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.neutral import POSTGRESQL
from agora.store.pg import open_pg_store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from agora.store.migrations import Migration
    from agora.store.pg import PgStore

#: The switch: ``postgresql`` runs every store on the server named by `SERVER_ENV`.
BACKEND_ENV = "AGORA_TEST_BACKEND"
#: The PostgreSQL database the redirected stores' schemas are created in.
SERVER_ENV = "AGORA_TEST_PG"


def redirect_server() -> str | None:
    """The database to redirect every store to, or None when the switch is off."""
    if os.environ.get(BACKEND_ENV, "").lower() != "postgresql":
        return None
    server = os.environ.get(SERVER_ENV)
    if not server:
        raise StoreError(f"{BACKEND_ENV}=postgresql needs {SERVER_ENV} (a PostgreSQL URL)")
    return server


def schema_url(server: str, schema: str) -> str:
    """The URL of ``server`` whose tables live in ``schema`` (then ``public``)."""
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}options={quote(f'-csearch_path={schema},public', safe='')}"


def schema_for(path: str) -> str:
    """The schema standing for database ``path`` (``:memory:``: a fresh name each call)."""
    if path == ":memory:":
        return f"m_{secrets.token_hex(8)}"
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()
    return f"f_{digest[:24]}"


#: One key per distinct migration list: the schemas in `_free` under it are migrated by it.
PoolKey = tuple[tuple[str, int, tuple[str, ...]], ...]

#: Migrated, emptied schemas of this process, ready for the next ``:memory:`` store. Making a
#: schema costs tens of DDL statements (a quarter of a second on a busy machine) and dropping
#: it more; emptying one costs a DELETE per table.
_free: dict[PoolKey, list[str]] = {}
#: The catalog fingerprint of each pooled schema right after it was migrated: a test that
#: changed its tables (a trigger, a dropped table) leaves a schema that is dropped instead.
_shape: dict[str, str] = {}

_SHAPE = """
SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) FROM (
  SELECT concat_ws(':', c.relname, c.relkind, a.attname, a.atttypid) AS x
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
   WHERE c.relnamespace = %(s)s::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT concat('t:', t.tgname) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = %(s)s::regnamespace
  UNION ALL SELECT concat('c:', conname) FROM pg_constraint WHERE connamespace = %(s)s::regnamespace
  UNION ALL SELECT concat('p:', proname) FROM pg_proc WHERE pronamespace = %(s)s::regnamespace
) shape
"""
_TABLES = (
    "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace "
    "AND relkind IN ('r', 'p') AND relname <> 'agora_schema'"
)


def pool_key(migrations: Iterable[Migration]) -> PoolKey:
    """What a schema migrated by ``migrations`` is fit for."""
    return tuple(
        (m.component, m.version, tuple(m.statements(POSTGRESQL) or ())) for m in migrations
    )


def _create(server: str, schema: str) -> None:
    # UniqueViolation: another process created it just now.
    with psycopg.connect(server, autocommit=True) as conn, suppress(psycopg.errors.UniqueViolation):
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def _claim(server: str, key: PoolKey, path: str) -> str:
    """A schema for ``path``: a pooled one if any (renamed after a file path), else new."""
    free = _free.get(key)
    if path == ":memory:":
        if free:
            return free.pop()
        schema = schema_for(path)
        _create(server, schema)
        return schema
    schema = schema_for(path)
    with psycopg.connect(server, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if exists.fetchone() is None and free:
            pooled = free.pop()
            _shape.pop(pooled, None)
            conn.execute(f'ALTER SCHEMA "{pooled}" RENAME TO "{schema}"')
            return schema
    _create(server, schema)
    return schema


def _release(server: str, key: PoolKey, schema: str) -> None:
    """Empty ``schema`` into the pool if its tables are as migrated, else drop it."""
    with psycopg.connect(server, autocommit=True) as conn:
        shape = conn.execute(_SHAPE, {"s": schema}).fetchone()
        if shape is not None and _shape.setdefault(schema, shape[0]) == shape[0]:
            tables = [r[0] for r in conn.execute(_TABLES, (schema,)).fetchall()]
            try:
                # Replica role: no trigger fires (the chamber's immutable rows go too). One
                # round trip: statements without parameters may go together.
                deletes = "".join(f'; DELETE FROM "{schema}"."{table}"' for table in tables)
                with conn.transaction():
                    conn.execute(f"SET LOCAL session_replication_role = replica{deletes}")
            except psycopg.errors.InsufficientPrivilege:
                pass  # not a superuser: no pool, a fresh schema each time
            else:
                _free.setdefault(key, []).append(schema)
                return
        _shape.pop(schema, None)
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@asynccontextmanager
async def open_redirected(
    server: str,
    path: str,
    migrations: Iterable[Migration],
    *,
    group_commit: bool,
    trace: bool,
    commit_timeout: float,
) -> AsyncIterator[PgStore]:
    """Open the PostgreSQL store standing for SQLite database ``path`` (see the module).

    Raises:
        StoreError: the server cannot be reached, or migrating failed.
    """
    steps = list(migrations)
    key = pool_key(steps)
    inline = path == ":memory:"
    try:
        schema = _claim(server, key, path)
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the PostgreSQL database: {one_line(exc)}") from exc
    fresh = schema not in _shape
    try:
        async with open_pg_store(
            schema_url(server, schema),
            steps,
            group_commit=group_commit,
            trace=trace,
            commit_timeout=commit_timeout,
            inline=inline,
        ) as store:
            if inline and fresh:  # its shape as migrated, to compare at release
                with psycopg.connect(server, autocommit=True) as conn:
                    found = conn.execute(_SHAPE, {"s": schema}).fetchone()
                    _shape[schema] = found[0] if found else ""
            yield store
    finally:
        if inline:
            _release(server, key, schema)
