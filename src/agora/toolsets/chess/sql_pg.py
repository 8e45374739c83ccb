"""The chess tables' PostgreSQL twin: the DDL of each migration step, per version.

Version 1 creates the tables as SQLite has them after every step (a PostgreSQL database
starts from nothing); later steps are empty until a step adds something new, which then
gets its twin here. Statements that persist or load rows are shared with SQLite (`sql`).
"""

from __future__ import annotations

POSTGRESQL: dict[int, list[str]] = {
    1: [
        "CREATE TABLE chess_tables (name TEXT PRIMARY KEY, token TEXT NOT NULL,"
        " created_at TEXT NOT NULL, game_no BIGINT NOT NULL, version BIGINT NOT NULL,"
        " agent_seen_at TEXT, agent_token TEXT)",
        "CREATE TABLE chess_games (table_name TEXT REFERENCES chess_tables (name),"
        " game_no BIGINT, start_fen TEXT NOT NULL, agent_color TEXT, draw_offer TEXT,"
        " score TEXT, reason TEXT, winner TEXT, created_at TEXT NOT NULL, ended_at TEXT,"
        " PRIMARY KEY (table_name, game_no))",
        "CREATE TABLE chess_moves (table_name TEXT, game_no BIGINT, ply BIGINT,"
        ' uci TEXT NOT NULL, san TEXT NOT NULL, "by" TEXT NOT NULL, note TEXT,'
        " played_at TEXT NOT NULL, PRIMARY KEY (table_name, game_no, ply))",
    ],
    2: [],
    3: ["ALTER TABLE chess_games ADD COLUMN declined_ply BIGINT"],
    4: ["ALTER TABLE chess_games ADD COLUMN human_offers TEXT"],
    5: ["ALTER TABLE chess_games ADD COLUMN unseen_plies TEXT"],
    6: ["CREATE INDEX chess_tables_agent_token ON chess_tables (agent_token)"],
}
