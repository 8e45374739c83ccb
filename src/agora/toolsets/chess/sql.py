"""The chess tables in SQLite: migrations, the statements that persist a change, and loading.

Three tables: ``chess_tables`` (one row per table: its human and agent tokens, current game
number and change version), ``chess_games`` (one row per game: sides, pending draw offer,
the ply of the move that declined the last one, when the human offered draws, the agent's
moves that passed such an offer unseen, result) and
``chess_moves`` (one row per move, with its note). A table is rebuilt by replaying its
current game's moves from the start position, so FEN, history, repetitions and notes come
back exactly. This module builds statements and reads rows; it never commits (the actor
does) and knows nothing of the entity that uses it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.store.migrations import with_statements
from agora.store.neutral import POSTGRESQL
from agora.toolsets.base import Migration
from agora.toolsets.chess import sql_pg

if TYPE_CHECKING:
    import sqlite_utils

    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn
    from agora.toolsets.chess.game import Game, PlayedMove


def _migrate_v1(db: sqlite_utils.Database) -> None:
    db.table("chess_tables").create(
        {
            "name": str,
            "token": str,
            "created_at": str,
            "game_no": int,
            "version": int,
            "agent_seen_at": str,
        },
        pk="name",
        not_null={"token", "created_at", "game_no", "version"},
    )
    db.table("chess_games").create(
        {
            "table_name": str,
            "game_no": int,
            "start_fen": str,
            "agent_color": str,
            "draw_offer": str,
            "score": str,
            "reason": str,
            "winner": str,
            "created_at": str,
            "ended_at": str,
        },
        pk=("table_name", "game_no"),
        not_null={"start_fen", "created_at"},
        foreign_keys=[("table_name", "chess_tables", "name")],
    )
    db.table("chess_moves").create(
        {
            "table_name": str,
            "game_no": int,
            "ply": int,
            "uci": str,
            "san": str,
            "by": str,
            "note": str,
            "played_at": str,
        },
        pk=("table_name", "game_no", "ply"),
        not_null={"uci", "san", "by", "played_at"},
    )


def _migrate_v2(db: sqlite_utils.Database) -> None:
    """Give every table an agent token; tables made before v2 get a fresh random one.

    Stored as the human token is: both pages and ``agora serve`` must show it again.
    """
    db.table("chess_tables").add_column("agent_token", str)
    names = [row[0] for row in db.execute("SELECT name FROM chess_tables")]
    for name in names:
        db.execute(
            "UPDATE chess_tables SET agent_token = ? WHERE name = ?",
            (secrets.token_urlsafe(24), name),
        )


def _migrate_v3(db: sqlite_utils.Database) -> None:
    """Keep the ply of the move that declined a draw offer (the page tells the human)."""
    db.table("chess_games").add_column("declined_ply", int)


def _migrate_v4(db: sqlite_utils.Database) -> None:
    """Keep when the human offered draws (JSON: the moves played at each), for the PGN."""
    db.table("chess_games").add_column("human_offers", str)


def _migrate_v5(db: sqlite_utils.Database) -> None:
    """Keep the agent's moves that passed the human's draw offer unseen (JSON: their plies)."""
    db.table("chess_games").add_column("unseen_plies", str)


def _migrate_v6(db: sqlite_utils.Database) -> None:
    """Index the tables by agent token: a token refused on one table's endpoint is looked up
    among the others' (`agent_token_table`), which without it read every table's row."""
    db.execute("CREATE INDEX chess_tables_agent_token ON chess_tables (agent_token)")


MIGRATIONS = with_statements(
    (
        Migration(component="chess", version=1, apply=_migrate_v1),
        Migration(component="chess", version=2, apply=_migrate_v2),
        Migration(component="chess", version=3, apply=_migrate_v3),
        Migration(component="chess", version=4, apply=_migrate_v4),
        Migration(component="chess", version=5, apply=_migrate_v5),
        Migration(component="chess", version=6, apply=_migrate_v6),
    ),
    POSTGRESQL,
    sql_pg.POSTGRESQL,
)


@dataclass(slots=True)
class TableRow:
    """The ``chess_tables`` row of one table."""

    name: str
    token: str
    created_at: str
    game_no: int
    version: int
    agent_seen_at: str | None
    agent_token: str


@dataclass(slots=True)
class GameRow:
    """The ``chess_games`` row of one game."""

    start_fen: str
    agent_color: str | None
    draw_offer: str | None
    declined_ply: int | None
    score: str | None
    reason: str | None
    winner: str | None
    ended_at: str | None
    human_offers: str | None = None
    unseen_plies: str | None = None


@dataclass(slots=True)
class MoveRow:
    """One ``chess_moves`` row."""

    uci: str
    san: str
    by: str
    note: str | None
    played_at: str


@dataclass(slots=True)
class StoredTable:
    """Everything needed to rebuild a table: its row, its current game and that game's moves."""

    table: TableRow
    game: GameRow
    moves: list[MoveRow]


def insert_table(row: TableRow) -> Write:
    """The statement that creates a table row."""
    return (
        "INSERT INTO chess_tables"
        " (name, token, created_at, game_no, version, agent_seen_at, agent_token)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row.name,
            row.token,
            row.created_at,
            row.game_no,
            row.version,
            row.agent_seen_at,
            row.agent_token,
        ),
    )


def update_table(row: TableRow) -> Write:
    """The statement that saves a table row's mutable columns."""
    return (
        "UPDATE chess_tables SET game_no = ?, version = ?, agent_seen_at = ?, agent_token = ?"
        " WHERE name = ?",
        (row.game_no, row.version, row.agent_seen_at, row.agent_token, row.name),
    )


def insert_game(table: str, game: Game, created_at: str) -> Write:
    """The statement that creates a game row."""
    return (
        "INSERT INTO chess_games (table_name, game_no, start_fen, created_at) VALUES (?, ?, ?, ?)",
        (table, game.number, game.start_fen, created_at),
    )


def update_game(table: str, game: Game) -> Write:
    """The statement that saves a game's sides, draw offer and result."""
    result = game.result
    return (
        "UPDATE chess_games SET agent_color = ?, draw_offer = ?, declined_ply = ?,"
        " human_offers = ?, unseen_plies = ?, score = ?, reason = ?, winner = ?, ended_at = ?"
        " WHERE table_name = ? AND game_no = ?",
        (
            game.agent_color,
            game.draw_offer,
            game.declined_ply,
            json.dumps(list(game.human_offers)) if game.human_offers else None,
            json.dumps(list(game.unseen_plies)) if game.unseen_plies else None,
            result.score if result else None,
            result.reason if result else None,
            result.winner if result else None,
            result.ended_at if result else None,
            table,
            game.number,
        ),
    )


def insert_move(table: str, game_no: int, move: PlayedMove) -> Write:
    """The statement that records one move with its note."""
    return (
        "INSERT INTO chess_moves (table_name, game_no, ply, uci, san, by, note, played_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (table, game_no, move.ply, move.uci, move.san, move.by, move.note, move.played_at),
    )


def _one(conn: ReadConn, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
    row = conn.execute(sql, params).fetchone()
    return None if row is None else tuple(row)


def read_table(conn: ReadConn, name: str, game_no: int | None = None) -> StoredTable | None:
    """Read one table's committed rows with its current game (or game ``game_no``); None if
    the table does not exist.

    Raises:
        LookupError: if the table row exists but the game's row is missing (a ``game_no``
            the table never had, or a corrupt store).
    """
    row = _one(
        conn,
        "SELECT name, token, created_at, game_no, version, agent_seen_at, agent_token"
        " FROM chess_tables WHERE name = ?",
        (name,),
    )
    if row is None:
        return None
    table = TableRow(*row)
    number = table.game_no if game_no is None else game_no
    game = _one(
        conn,
        "SELECT start_fen, agent_color, draw_offer, declined_ply, score, reason, winner,"
        " ended_at, human_offers, unseen_plies"
        " FROM chess_games WHERE table_name = ? AND game_no = ?",
        (name, number),
    )
    if game is None:
        raise LookupError(f"chess table {name!r} has no game {number}")
    moves = [
        MoveRow(*tuple(m))
        for m in conn.execute(
            "SELECT uci, san, by, note, played_at FROM chess_moves"
            " WHERE table_name = ? AND game_no = ? ORDER BY ply",
            (name, number),
        )
    ]
    return StoredTable(table=table, game=GameRow(*game), moves=moves)


def agent_token_table(conn: ReadConn, token: str) -> str | None:
    """The name of the table whose current agent token is ``token``, or None.

    Only to tell a token's holder where it seats them (it may learn its own table's name):
    a token that is no table's current agent token, a replaced one included, finds nothing.
    """
    row = _one(conn, "SELECT name FROM chess_tables WHERE agent_token = ?", (token,))
    return None if row is None else str(row[0])
