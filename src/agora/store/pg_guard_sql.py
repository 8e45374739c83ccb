"""The version guard's statements as psycopg sends them, for the PostgreSQL writer.

One text each, whatever the batch's size: `agora.store.pg_writer` sends them through its
`agora.store.pg_pipe.Pipe` (the ``_Q`` forms) or, for a parameter the pipe does not send and
for a failed batch's rerun one savepoint per job, through psycopg (`lock_rows`, `run_job`).
Blocking I/O on the writer's connection; no Trio, no toolset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from agora.store.guard import guarded_keys
from agora.store.pg_sql import convert
from agora.store.writer_child import note_statement

if TYPE_CHECKING:
    from agora.store.jobs import Job

# One statement text each, whatever the batch's size (keys travel as arrays), so psycopg
# prepares each once per connection and the server plans it once: a batch costs the same few
# statements whether it guards one entity or hundreds.
CREATE = (
    "INSERT INTO agora_entities (kind, key, version) "
    "SELECT kind, key, 0 FROM unnest(%s::text[], %s::text[]) AS k(kind, key) "
    "ON CONFLICT DO NOTHING"
)
LOCK = (
    "SELECT e.kind, e.key, e.version FROM agora_entities AS e "
    "JOIN unnest(%s::text[], %s::text[]) AS k(kind, key) ON e.kind = k.kind AND e.key = k.key "
    "ORDER BY e.kind, e.key FOR UPDATE OF e"
)
BUMP = (
    "UPDATE agora_entities AS e SET version = v.version "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS v(kind, key, version) "
    "WHERE e.kind = v.kind AND e.key = v.key"
)
NOTIFY = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p"
# The same, as `Pipe` takes them.
CREATE_Q, LOCK_Q, BUMP_Q, NOTIFY_Q = (q.replace("%s", "?") for q in (CREATE, LOCK, BUMP, NOTIFY))


def lock_rows(conn: psycopg.Connection[Any], batch: list[Job]) -> dict[tuple[str, str], int]:
    """Create the guarded rows that should exist, lock every guarded row; their versions."""
    keys, fresh = guarded_keys(batch)
    if not keys:
        return {}
    if fresh:
        conn.execute(CREATE, columns(fresh))
    rows = conn.execute(LOCK, columns(keys)).fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


def columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """``[(a, b), (c, d)]`` as ``[[a, c], [b, d]]``: one array parameter per column."""
    return [list(column) for column in zip(*rows, strict=True)]


def run_job(conn: psycopg.Connection[Any], job: Job) -> BaseException | None:
    """Run ``job``'s writes in a savepoint; the failure that rolled it back, or None."""
    conn.execute("SAVEPOINT job")
    sql = ""
    try:
        for sql, params in job.writes:
            conn.execute(*convert(sql, params))
    except psycopg.errors.Error as exc:
        if conn.broken:
            raise
        conn.execute("ROLLBACK TO SAVEPOINT job")
        conn.execute("RELEASE SAVEPOINT job")
        note_statement(exc, sql)
        return exc
    conn.execute("RELEASE SAVEPOINT job")
    return None
