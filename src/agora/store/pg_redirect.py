"""The test suite's PostgreSQL pass: every database a process opens lives on PostgreSQL.

With ``AGORA_TEST_BACKEND=postgresql`` and ``AGORA_TEST_PG`` (a PostgreSQL database URL) in
the environment, `agora.store.db.open_store` (and so ``agora serve --db``, ``agora stdio
--db`` and every store a test opens) does not open SQLite. It opens instead:

- ``:memory:`` as a fresh schema of its own, run inline on the Trio thread like SQLite's
  in-memory store (autojump clocks stay exact), dropped when the store closes;
- a file path as the schema named after the file's absolute path, created on first use and
  kept, so a restarted server (or a second process given the same path) finds its rows.
  The file itself is never created.

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


def _create(server: str, schema: str) -> None:
    # UniqueViolation: another process created it just now.
    with psycopg.connect(server, autocommit=True) as conn, suppress(psycopg.errors.UniqueViolation):
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def _drop(server: str, schema: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
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
    schema = schema_for(path)
    inline = path == ":memory:"
    try:
        _create(server, schema)
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the PostgreSQL database: {exc}") from exc
    try:
        async with open_pg_store(
            schema_url(server, schema),
            migrations,
            group_commit=group_commit,
            trace=trace,
            commit_timeout=commit_timeout,
            inline=inline,
        ) as store:
            yield store
    finally:
        if inline:
            _drop(server, schema)
