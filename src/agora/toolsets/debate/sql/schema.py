"""The debate tables and their one migration.

``debate_messages`` is append-only; ``body_folded`` (the casefolded body) carries the FTS5
``trigram`` index that search uses (kept by an insert trigger until migration 5, which
indexes in batches instead: `fts`; PostgreSQL puts a ``pg_trgm`` index on the same column).
Every other table is plain rows keyed by topic.

Migration 4 makes three secondary indexes partial, so a post writes only the index entries a
query reads (each entry a page write at a random place of its index, under the one writer):
delivery markers not yet done (every delivery query asks ``state <> 'done'``), replies
(``reply_to IS NOT NULL``: a query that joins on ``reply_to = ...`` implies it) and the two
kinds a query looks up by kind (``kind = 'Q'``, ``kind = 'COMPACTION'``, written literally in
those queries so both engines can prove the index applies; it ends in ``msg_id`` so the newest
compaction is one index step, where the full index left that query scanning the topic's
cursor index backwards). Both engines take the same DDL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.store.migrations import Migration, with_statements
from agora.store.neutral import POSTGRESQL
from agora.toolsets.debate.sql.fts import MIGRATE_V5
from agora.toolsets.debate.sql.protocol import migrate_v2
from agora.toolsets.debate.sql.workers import migrate_v3

if TYPE_CHECKING:
    from collections.abc import Callable

    import sqlite_utils

_SCHEMA = """
CREATE TABLE debate_sessions (session_id TEXT PRIMARY KEY, principal TEXT NOT NULL,
  runtime TEXT, label TEXT, created_at TEXT NOT NULL);
CREATE INDEX debate_sessions_principal ON debate_sessions (principal, created_at);
CREATE TABLE debate_topics (topic_id TEXT PRIMARY KEY, title TEXT NOT NULL, project TEXT,
  state TEXT NOT NULL, created_at TEXT NOT NULL, created_by_role TEXT NOT NULL,
  resolve_by TEXT, archived_at TEXT, metadata TEXT NOT NULL, roles TEXT NOT NULL,
  protocol TEXT NOT NULL, shape TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX debate_topics_state ON debate_topics (state);
CREATE TABLE debate_bindings (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  generation INTEGER NOT NULL, session_id TEXT NOT NULL, owner TEXT NOT NULL, runtime TEXT,
  state TEXT NOT NULL, reason TEXT, bound_by_msg_id TEXT, bound_by_role TEXT,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, retired_by TEXT,
  PRIMARY KEY (topic_id, role, generation));
CREATE INDEX debate_bindings_owner ON debate_bindings (owner, state);
CREATE INDEX debate_bindings_session ON debate_bindings (session_id);
CREATE TABLE debate_messages (msg_id TEXT PRIMARY KEY, topic_id TEXT NOT NULL,
  ts TEXT NOT NULL, role TEXT NOT NULL, author_session_id TEXT, priority TEXT NOT NULL,
  kind TEXT NOT NULL, body TEXT NOT NULL, body_folded TEXT NOT NULL, reply_to TEXT,
  vehicle TEXT NOT NULL, standing INTEGER, recipients TEXT NOT NULL, payload TEXT,
  body_mode TEXT, protocol_version TEXT);
CREATE UNIQUE INDEX debate_messages_cursor ON debate_messages (topic_id, ts, msg_id);
CREATE INDEX debate_messages_kind ON debate_messages (topic_id, kind, ts);
CREATE INDEX debate_messages_reply ON debate_messages (topic_id, reply_to);
CREATE TABLE debate_deliveries (msg_id TEXT NOT NULL, recipient TEXT NOT NULL,
  topic_id TEXT NOT NULL, state TEXT NOT NULL, delivered_at TEXT, done_at TEXT,
  PRIMARY KEY (msg_id, recipient));
CREATE INDEX debate_deliveries_open ON debate_deliveries (topic_id, state);
CREATE TABLE debate_cursors (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  session_id TEXT NOT NULL, last_ts TEXT, last_msg_id TEXT, last_check_at TEXT,
  superseded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (topic_id, role, session_id));
CREATE TABLE debate_watermarks (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  last_ts TEXT NOT NULL, last_msg_id TEXT NOT NULL, PRIMARY KEY (topic_id, role));
CREATE TABLE debate_claims (msg_id TEXT PRIMARY KEY, topic_id TEXT NOT NULL,
  role TEXT NOT NULL, session_id TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL,
  claimed_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX debate_claims_topic ON debate_claims (topic_id, state);
CREATE TABLE debate_history (topic_id TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL,
  event TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL,
  PRIMARY KEY (topic_id, seq));
CREATE VIRTUAL TABLE debate_messages_fts USING fts5 (body_folded, content='',
  tokenize='trigram');
"""
_FTS_TRIGGER = """
CREATE TRIGGER debate_messages_fts_insert AFTER INSERT ON debate_messages BEGIN
  INSERT INTO debate_messages_fts (rowid, body_folded) VALUES (new.rowid, new.body_folded);
END
"""


# Migration 6: what a conductor override stands behind, on the message posted under it and
# on the binding it installed (so that binding's later posts say so too).
_OVERRIDE_V6 = [
    "ALTER TABLE debate_messages ADD COLUMN override_msg_id TEXT",
    "ALTER TABLE debate_bindings ADD COLUMN override_msg_id TEXT",
]

# Migration 7: how a role outside the blind pair closed a live debate/v1 debate early
# (JSON: who, why, the STATE message), so that its outcome says so.
_CLOSED_EARLY_V7 = ["ALTER TABLE debate_protocol ADD COLUMN closed_early TEXT"]

_PARTIAL_V4 = [
    "DROP INDEX debate_deliveries_open",
    "CREATE INDEX debate_deliveries_open ON debate_deliveries (topic_id, recipient) "
    "WHERE state <> 'done'",
    "DROP INDEX debate_messages_reply",
    "CREATE INDEX debate_messages_reply ON debate_messages (topic_id, reply_to) "
    "WHERE reply_to IS NOT NULL",
    "DROP INDEX debate_messages_kind",
    "CREATE INDEX debate_messages_kind ON debate_messages (topic_id, kind, ts, msg_id) "
    "WHERE kind = 'Q' OR kind = 'COMPACTION'",
]


def _migrate_v1(db: sqlite_utils.Database) -> None:
    # One statement at a time: executescript would commit the migration's transaction.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute(_FTS_TRIGGER)


# PostgreSQL: the same tables (the DDL is plain SQL both accept); no FTS5 table and trigger,
# but a pg_trgm GIN index on the folded body, which serves the same ``LIKE '%...%'``.
# An extension is installed once per database, in one schema, and several agora clusters
# may share the database, each in a schema of its own (docs/scale-out.md, "Namespaces"). So
# it is created in ``public`` (in this namespace's schema if ``public`` is gone or closed to
# this role), never in whichever schema comes first on this cluster's path, and the index
# names the operator class with the schema the extension is in: another cluster's path
# need not hold it.
_TRIGRAM_INDEX = """
DO $agora$
DECLARE
  home text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    BEGIN
      CREATE EXTENSION pg_trgm SCHEMA public;
    EXCEPTION WHEN invalid_schema_name OR insufficient_privilege THEN
      CREATE EXTENSION pg_trgm;
    END;
  END IF;
  SELECT n.nspname INTO home FROM pg_extension AS e
    JOIN pg_namespace AS n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  EXECUTE format(
    'CREATE INDEX debate_messages_trgm ON debate_messages USING gin (body_folded %I.gin_trgm_ops)',
    home);
END
$agora$
"""
_POSTGRESQL = [
    *(s for s in _SCHEMA.split(";") if s.strip() and "VIRTUAL TABLE" not in s),
    _TRIGRAM_INDEX,
]


class _Recorder:
    """Collects the statements a migration step runs (its DDL is plain SQL both accept)."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, sql: str, params: object = ()) -> None:
        self.statements.append(sql)


def _statements_of(step: Callable[[Any], None]) -> list[str]:
    recorder = _Recorder()
    step(recorder)
    return recorder.statements


MIGRATIONS = with_statements(
    (
        Migration(component="debate", version=1, apply=_migrate_v1),
        Migration(component="debate", version=2, apply=migrate_v2),
        Migration(component="debate", version=3, apply=migrate_v3),
        Migration(
            component="debate",
            version=4,
            sql={"sqlite": _PARTIAL_V4, "postgresql": _PARTIAL_V4},
        ),
        # The search index kept in batches (`fts`); PostgreSQL has no FTS5 table.
        Migration(component="debate", version=5, sql={"sqlite": MIGRATE_V5, "postgresql": []}),
        Migration(
            component="debate",
            version=6,
            sql={"sqlite": _OVERRIDE_V6, "postgresql": _OVERRIDE_V6},
        ),
        Migration(
            component="debate",
            version=7,
            sql={"sqlite": _CLOSED_EARLY_V7, "postgresql": _CLOSED_EARLY_V7},
        ),
    ),
    POSTGRESQL,
    {1: _POSTGRESQL, 2: _statements_of(migrate_v2), 3: _statements_of(migrate_v3)},
)
