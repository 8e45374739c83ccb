"""The SQLite search index's upkeep: messages are indexed in batches, not one by one.

``debate_messages_fts`` (FTS5, trigram, contentless) was kept by an insert trigger, so every
post tokenized its body and added it to the index inside the post's own statement, and
every commit flushed a small index segment that later had to be merged: about half of the
writer's statement time per post under load (bench/debate_load.py), on the one writer
every post queues behind. Now `catch_up` indexes every message past the watermark in
``debate_fts_state`` in one statement, and moves the watermark in the same transaction
(a background task runs it a few times a second, `handlers.reads.index_task`). Search asks
the index for the rows it covers and reads the rows past the watermark (`search_hits`): the
tail since the last catch-up, a short rowid range, so a message is searchable from its
commit on and found once. Messages are append-only, so rowids only grow. SQLite only:
PostgreSQL's ``pg_trgm`` index is kept by the engine itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn

#: Messages indexed by one catch-up at most (a backlog is indexed over several, so one
#: transaction never holds the writer for long).
BATCH = 20_000

_WATERMARK = "(SELECT indexed_rowid FROM debate_fts_state WHERE id = 1)"

#: Migration 5 (SQLite): the trigger goes; every message stored so far was indexed by it.
MIGRATE_V5 = [
    "DROP TRIGGER debate_messages_fts_insert",
    "CREATE TABLE debate_fts_state (id INTEGER PRIMARY KEY, indexed_rowid INTEGER NOT NULL)",
    "INSERT INTO debate_fts_state (id, indexed_rowid) "
    "SELECT 1, COALESCE(MAX(rowid), 0) FROM debate_messages",
]

#: The row ids a search asks for: the index's matches, then every message past the
#: watermark (the caller's LIKE decides among those).
SEARCH_HITS = (
    "SELECT rowid AS hit FROM debate_messages_fts WHERE debate_messages_fts MATCH ? "
    f"UNION ALL SELECT rowid FROM debate_messages WHERE rowid > {_WATERMARK}"
)


def backlog(conn: ReadConn) -> int:
    """How many message row ids lie past the watermark (0: the index is complete)."""
    row = conn.execute(
        f"SELECT COALESCE(MAX(rowid), 0) - {_WATERMARK} FROM debate_messages"
    ).fetchone()
    return max(int(row[0] or 0), 0)


def catch_up() -> list[Write]:
    """Index up to `BATCH` messages past the watermark and move it past them (one unit)."""
    batch = f"SELECT rowid FROM debate_messages WHERE rowid > {_WATERMARK} ORDER BY rowid LIMIT ?"
    return [
        (
            "INSERT INTO debate_messages_fts (rowid, body_folded) SELECT rowid, body_folded "
            f"FROM debate_messages WHERE rowid IN ({batch})",
            (BATCH,),
        ),
        (
            "UPDATE debate_fts_state SET indexed_rowid = "
            f"(SELECT COALESCE(MAX(rowid), {_WATERMARK}) FROM ({batch}) AS b) WHERE id = 1",
            (BATCH,),
        ),
    ]
