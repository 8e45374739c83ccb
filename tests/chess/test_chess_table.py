"""The table entity without a runtime: effects, tokens, and exact reloads from SQLite."""

from __future__ import annotations

import datetime as dt
import sqlite3

import chess
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agora.runtime.clock import Now
from agora.store.migrations import apply_migrations
from agora.toolsets.chess.commands import (
    AcceptDraw,
    AgentMove,
    CheckToken,
    ChooseSide,
    CreateTable,
    HumanMove,
    Look,
    NewAgentToken,
    NewGame,
    OfferDraw,
    Resign,
    Tokens,
)
from agora.toolsets.chess.snapshot import AGENT_FRESH_SECONDS, Snapshot
from agora.toolsets.chess.sql import MIGRATIONS
from agora.toolsets.chess.table import KIND, ChessTable
from agora.toolsets.chess.terms import ChessError

NOW = Now(0.0, dt.datetime(2026, 11, 30, tzinfo=dt.UTC))
TOKEN = "secret-token"
AGENT = "agent-token"


def durable(snap: Snapshot) -> Snapshot:
    """What a reload restores of ``snap``: all but the agent's and the human's presence
    (kept in memory): an agent seen since the token was issued was seen before the restart."""
    absence = "token" if snap.agent_absence == "token" else "restart"
    return msgspec.structs.replace(
        snap,
        agent_present=False,
        agent_absence=absence,
        human_came=False,
        human_connected=False,
        agent_shared=False,
    )


def open_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    apply_migrations(conn, MIGRATIONS)
    return conn


class Harness:
    """An entity plus the database its effects are committed to, like the actor does."""

    def __init__(self) -> None:
        self.conn = open_db()
        self.entity = KIND.load(self.conn, "t1", NOW)

    def run(self, command):
        effects = self.entity.handle(command, NOW)
        self.conn.execute("BEGIN")
        for sql, params in effects.writes:
            self.conn.execute(sql, params)
        self.conn.execute("COMMIT")
        return effects

    def reloaded(self) -> ChessTable:
        return KIND.load(self.conn, "t1", NOW)


@pytest.fixture
def harness() -> Harness:
    h = Harness()
    h.run(CreateTable(TOKEN, AGENT))
    return h


def test_a_missing_table_refuses_everything_but_creation():
    h = Harness()
    effects = h.run(Look())
    assert isinstance(effects.reply, ChessError)
    assert effects.reply.code == "TABLE_NOT_FOUND"
    assert effects.reply.snapshot is None
    assert effects.writes == []
    created = h.run(CreateTable(TOKEN, AGENT))
    assert created.reply == Tokens(TOKEN, AGENT)
    assert created.changed


def test_creating_twice_is_refused_unless_idempotent(harness):
    again = harness.run(CreateTable("other", "other"))
    assert isinstance(again.reply, ChessError)
    assert again.reply.code == "TABLE_EXISTS"
    assert harness.run(CreateTable("other", "other", must_be_new=False)).reply == Tokens(
        TOKEN, AGENT
    )


def test_the_token_is_checked_before_any_human_action(harness):
    assert harness.run(CheckToken(TOKEN)).reply == "human"
    assert harness.run(CheckToken("wrong")).reply is None
    for command in (
        ChooseSide("wrong", "white"),
        HumanMove("", "e2", "e4"),
        Resign("x"),
        OfferDraw("x"),
        AcceptDraw("x"),
        NewGame("x"),
        NewAgentToken("x", "mine now"),
        NewAgentToken(AGENT, "the agent's token is not the human's"),
    ):
        effects = harness.run(command)
        assert isinstance(effects.reply, ChessError)
        assert effects.reply.code == "FORBIDDEN"
        assert effects.writes == []
        assert not effects.changed
    assert harness.entity.snapshot().phase == "side_choice"


def test_a_refusal_writes_nothing_and_wakes_nobody(harness):
    harness.run(ChooseSide(TOKEN, "black"))
    harness.run(Look(AGENT))  # the agent is already present
    effects = harness.run(AgentMove(AGENT, "e7", "e5"))
    assert isinstance(effects.reply, ChessError)
    assert effects.reply.code == "NOT_YOUR_TURN"
    assert isinstance(effects.reply.snapshot, Snapshot)
    assert (effects.writes, effects.changed) == ([], False)


@pytest.mark.parametrize(
    ("side", "code"),
    [
        pytest.param(None, "SIDE_NOT_CHOSEN", id="no-side-yet"),
        pytest.param("black", "NOT_YOUR_TURN", id="not-its-turn"),
    ],
)
def test_a_refused_first_move_still_announces_the_agent(harness, side, code):
    if side is not None:
        harness.run(ChooseSide(TOKEN, side))
    before = harness.entity.snapshot()
    assert not before.agent_present
    effects = harness.run(AgentMove(AGENT, "e7", "e5"))
    assert isinstance(effects.reply, ChessError)
    assert effects.reply.code == code
    assert effects.changed  # the pages wake now, not at their next poll
    assert effects.reply.snapshot.agent_present
    assert effects.reply.snapshot.version == before.version + 1
    assert effects.reply.snapshot.moves == before.moves
    again = harness.run(AgentMove(AGENT, "e7", "e5"))
    assert (again.writes, again.changed) == ([], False)


def test_the_agent_is_announced_once(harness):
    watcher = harness.run(Look())
    assert not watcher.changed
    assert not watcher.reply.agent_present
    first = harness.run(Look(AGENT))
    assert first.changed
    assert first.reply.agent_present
    second = harness.run(Look(AGENT))
    assert (second.changed, second.writes) == (False, [])
    # Presence lives in memory: a restart starts with no agent seen.
    assert not harness.reloaded().snapshot().agent_present


def test_a_move_alone_announces_the_agent(harness):
    harness.run(ChooseSide(TOKEN, "white"))
    moved = harness.run(AgentMove(AGENT, "e2", "e4"))
    assert moved.reply.agent_present
    assert harness.run(HumanMove(TOKEN, "e7", "e5")).reply.agent_present


def test_presence_fades_after_the_freshness_window(harness):
    harness.run(ChooseSide(TOKEN, "white"))
    harness.run(AgentMove(AGENT, "e2", "e4"))

    def look_at(mono: float) -> Snapshot:
        reply = harness.entity.handle(Look(), Now(mono, NOW.wall)).reply
        assert isinstance(reply, Snapshot)
        return reply

    assert look_at(AGENT_FRESH_SECONDS).agent_present  # a parked wait_for_turn is <= 55 s
    assert not look_at(AGENT_FRESH_SECONDS + 1).agent_present
    assert look_at(AGENT_FRESH_SECONDS + 1).agent_absence == "stale"  # not "since a restart"
    back = harness.entity.handle(Look(AGENT), Now(AGENT_FRESH_SECONDS + 2, NOW.wall))
    assert back.changed  # the pages wake: the agent is back
    assert back.reply.agent_present


@pytest.mark.parametrize(
    ("token", "code"),
    [
        pytest.param(None, "AGENT_TOKEN_REQUIRED", id="no-token"),
        pytest.param("guess", "AGENT_TOKEN_INVALID", id="wrong-token"),
        pytest.param(TOKEN, "AGENT_TOKEN_INVALID", id="the-human-token"),
        pytest.param("", "AGENT_TOKEN_INVALID", id="empty"),
    ],
)
def test_only_the_agent_token_moves_for_the_agent(harness, token, code):
    harness.run(ChooseSide(TOKEN, "white"))
    effects = harness.run(AgentMove(token, "e2", "e4"))
    assert isinstance(effects.reply, ChessError)
    assert effects.reply.code == code
    assert (effects.writes, effects.changed) == ([], False)
    assert harness.run(AgentMove(AGENT, "e2", "e4")).reply.moves[-1].uci == "e2e4"


def test_a_new_agent_token_revokes_the_old_one(harness):
    harness.run(ChooseSide(TOKEN, "white"))
    harness.run(Look(AGENT))
    renewed = harness.run(NewAgentToken(TOKEN, "fresh"))
    assert renewed.changed
    assert renewed.reply.agent_token == "fresh"
    assert not renewed.reply.agent_present  # present again once the new holder calls
    for command in (AgentMove(AGENT, "e2", "e4"), Look(AGENT)):
        effects = harness.run(command)
        assert isinstance(effects.reply, ChessError)
        assert effects.reply.code == "AGENT_TOKEN_INVALID"
    assert harness.reloaded().snapshot().agent_token == "fresh"
    assert harness.run(AgentMove("fresh", "e2", "e4")).reply.moves[-1].uci == "e2e4"


def test_every_change_bumps_the_version(harness):
    v0 = harness.entity.snapshot().version
    harness.run(ChooseSide(TOKEN, "white"))
    harness.run(AgentMove(AGENT, "e2", "e4", note="hi"))
    assert harness.entity.snapshot().version == v0 + 2
    assert harness.run(Look()).changed is False


def test_a_reload_restores_fen_history_notes_sides_and_offers(harness):
    harness.run(ChooseSide(TOKEN, "white"))
    harness.run(AgentMove(AGENT, "e2", "e4", note="<script>alert(1)</script>"))
    harness.run(HumanMove(TOKEN, "e7", "e5", note="and you"))
    harness.run(OfferDraw(TOKEN))
    assert harness.reloaded().snapshot() == durable(harness.entity.snapshot())


def test_a_new_game_before_the_sides_are_chosen_changes_nothing(harness):
    before = harness.entity.snapshot()
    for _ in range(3):
        effects = harness.run(NewGame(TOKEN))
        assert (effects.writes, effects.changed) == ([], False)
    # Still game 1, no empty games thrown away; only that the human came is new.
    assert harness.entity.snapshot() == msgspec.structs.replace(before, human_came=True)
    assert harness.conn.execute("SELECT count(*) FROM chess_games").fetchone() == (1,)


def test_a_reload_restores_a_result_and_the_game_number(harness):
    harness.run(ChooseSide(TOKEN, "black"))
    harness.run(Resign(TOKEN))
    harness.run(NewGame(TOKEN))
    harness.run(ChooseSide(TOKEN, "white"))
    harness.run(AgentMove(AGENT, "d2", "d4"))
    harness.run(NewGame(TOKEN))
    snap = harness.reloaded().snapshot()
    assert snap == durable(harness.entity.snapshot())
    assert snap.game_number == 3
    games = harness.conn.execute(
        "SELECT game_no, score, reason FROM chess_games ORDER BY game_no"
    ).fetchall()
    assert games == [(1, "0-1", "resignation"), (2, "*", "abandoned"), (3, None, None)]


COMMANDS = st.sampled_from(
    [
        "move",
        "move",
        "move",
        "move",
        "move",
        "side",
        "offer",
        "accept",
        "resign",
        "new",
        "look",
        "token",
    ]
)


@settings(max_examples=40, deadline=None)
@given(
    agent_color=st.sampled_from(["white", "black"]),
    script=st.lists(st.tuples(COMMANDS, st.integers(0, 10_000), st.booleans()), max_size=60),
)
def test_any_sequence_of_commands_reloads_exactly(agent_color, script):
    h = Harness()
    h.run(CreateTable(TOKEN, AGENT))
    h.run(ChooseSide(TOKEN, agent_color))
    for action, pick, with_note in script:
        game = h.entity.game
        if action == "move" and game.phase in ("agent_turn", "human_turn"):
            uci = sorted(m.uci() for m in game.board.legal_moves)[
                pick % game.board.legal_moves.count()
            ]
            note = f"note {pick} (=)" if with_note else None
            args = (uci[:2], uci[2:4], uci[4:] or None, note)
            command = (
                AgentMove(AGENT, *args) if game.phase == "agent_turn" else HumanMove(TOKEN, *args)
            )
        elif action == "side":
            command = ChooseSide(TOKEN, "white" if with_note else "black")
        elif action == "accept":
            command = AcceptDraw(TOKEN)
        elif action == "offer":
            command = OfferDraw(TOKEN)
        elif action == "resign":
            command = Resign(TOKEN)
        elif action == "new":
            command = NewGame(TOKEN)
        elif action == "token":
            command = NewAgentToken(TOKEN, AGENT if with_note else "renewed")
        else:
            command = Look(AGENT if with_note else None)
        h.run(command)
        assert h.reloaded().snapshot() == durable(h.entity.snapshot())


def test_tables_made_before_agent_tokens_get_one_each_on_upgrade():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    apply_migrations(conn, MIGRATIONS[:1])
    for name in ("t1", "t2"):
        conn.execute(
            "INSERT INTO chess_tables (name, token, created_at, game_no, version)"
            " VALUES (?, ?, '2026-11-01T00:00:00+00:00', 1, 1)",
            (name, f"human-{name}"),
        )
        conn.execute(
            "INSERT INTO chess_games (table_name, game_no, start_fen, created_at)"
            " VALUES (?, 1, ?, '2026-11-01T00:00:00+00:00')",
            (name, chess.STARTING_FEN),
        )
    apply_migrations(conn, MIGRATIONS)
    snaps = [KIND.load(conn, name, NOW).snapshot() for name in ("t1", "t2")]
    tokens = [snap.agent_token for snap in snaps]
    assert all(len(token) >= 32 for token in tokens)
    assert len(set(tokens)) == 2
    assert KIND.load(conn, "t1", NOW).snapshot().agent_token == tokens[0]  # stored, not drawn
