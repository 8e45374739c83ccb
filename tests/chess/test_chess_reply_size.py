"""Replies an agent can afford: move and wait replies stay within the byte budget.

Positions are built straight from FEN (the 218-legal-move maximum among them), with every
part that grows a reply at its longest: a 160-character note of wide characters, a draw
offer, and the agent's own offer just declined. Legal moves, FEN and board are never cut.
"""

from __future__ import annotations

import chess
import pytest

from agora.toolsets.chess.fit import fit, reply_size
from agora.toolsets.chess.game import PlayedMove
from agora.toolsets.chess.position import position, ungroup_moves
from agora.toolsets.chess.render import move_reply, wait_reply
from agora.toolsets.chess.replies import BUDGET_LEGAL_MOVES, REPLY_BUDGET
from agora.toolsets.chess.snapshot import Snapshot
from agora.toolsets.chess.terms import DRAW_MARK, NOTE_MAX_CHARS
from agora.toolsets.chess.waiting import WaitCondition

#: The most legal moves any chess position has (Petrović, 1964).
MAX_MOVES_FEN = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"
#: Five pawns about to promote, four queens and two knights: 20 promotion moves.
PROMOTIONS_FEN = "8/PPPPP3/7k/8/2Q5/8/1N3N2/Q3K2Q w - - 0 1"
NOTES = ["n" * NOTE_MAX_CHARS, "\U0001f600" * NOTE_MAX_CHARS, "\x01" * NOTE_MAX_CHARS]


def pruned(fen: str, limit: int) -> str:
    """``fen`` less White pieces, chosen so that as close to ``limit`` legal moves remain."""
    board = chess.Board(fen)
    while board.legal_moves.count() > limit:
        options = []
        for square, piece in board.piece_map().items():
            if piece.color == chess.WHITE and piece.piece_type != chess.KING:
                less = board.copy()
                less.remove_piece_at(square)
                options.append((less.legal_moves.count(), square, less))
        within = [option for option in options if option[0] <= limit]
        board = max(within or options)[2]
    return board.fen()


def snapshot(fen: str, note: str, phase: str = "agent_turn") -> Snapshot:
    """The agent (White) to move after declining-by-moving human play with a long note."""
    offered = PlayedMove(9, 5, "white", "a1a2", "Qa2", "agent", f"{DRAW_MARK} draw?", "t")
    last = PlayedMove(10, 5, "black", "e7d8q", "exd8=Q+", "human", note, "t")
    return Snapshot(
        table="default",
        version=1,
        game_number=1,
        fen=fen,
        phase=phase,  # type: ignore[arg-type]
        agent_color="white",
        moves=(offered, last),
        draw_offer="human",
        result=None,
        agent_present=True,
        agent_token="token",
    )


POSITIONS = [
    pruned(MAX_MOVES_FEN, BUDGET_LEGAL_MOVES),
    pruned(MAX_MOVES_FEN, 60),
    PROMOTIONS_FEN,
    chess.STARTING_FEN,
]


@pytest.mark.parametrize("note", NOTES, ids=["ascii", "emoji", "escaped"])
@pytest.mark.parametrize("fen", POSITIONS)
def test_move_and_wait_replies_fit_the_budget_with_every_legal_move(fen, note):
    legal = position(fen).legal_uci
    assert len(legal) <= BUDGET_LEGAL_MOVES
    snap = snapshot(fen, note)
    for reply in (wait_reply(snap, WaitCondition(False), "agent"), move_reply(snap)):
        assert reply_size(reply) <= REPLY_BUDGET
        assert ungroup_moves(reply.legal_moves) == legal
        assert reply.fen == fen
        assert reply.draw_declined
        assert reply.last_move is not None
        assert reply.last_move.note
        assert note.startswith(reply.last_move.note.removesuffix("…"))


def test_the_budget_bound_is_met_near_its_limit():
    fen = pruned(MAX_MOVES_FEN, BUDGET_LEGAL_MOVES)
    assert len(position(fen).legal_uci) >= BUDGET_LEGAL_MOVES - 10


def test_a_short_note_and_the_guide_are_kept_when_they_fit():
    snap = snapshot(chess.STARTING_FEN, "Your move.")
    reply = wait_reply(snap, WaitCondition(False), "agent")
    assert reply.evaluation_guide is not None
    assert reply.last_move is not None
    assert reply.last_move.note == "Your move."


def test_the_guide_goes_before_the_note_is_cut():
    fen = pruned(MAX_MOVES_FEN, BUDGET_LEGAL_MOVES)
    reply = wait_reply(snapshot(fen, "n" * NOTE_MAX_CHARS), WaitCondition(False), "agent")
    assert reply_size(reply) <= REPLY_BUDGET
    assert reply.evaluation_guide is None
    assert reply.last_move is not None
    assert reply.last_move.note == "n" * NOTE_MAX_CHARS


def test_the_218_move_maximum_keeps_every_move_and_cuts_only_the_note():
    snap = snapshot(MAX_MOVES_FEN, "\U0001f600" * NOTE_MAX_CHARS)
    reply = wait_reply(snap, WaitCondition(False), "agent")
    assert len(ungroup_moves(reply.legal_moves)) == 218
    assert reply.last_move is not None
    assert reply.last_move.note == "…"
    assert reply.evaluation_guide is None
    # Above BUDGET_LEGAL_MOVES the budget is a target, not a promise (replies.py says so).
    # 1,714 before nextAction named the draw mark, 1,756 before the human seat was said.
    assert reply_size(reply) <= 1780


def test_fit_leaves_a_reply_within_budget_untouched():
    reply = wait_reply(snapshot(chess.STARTING_FEN, "n" * 160), WaitCondition(False), "agent")
    assert fit(reply) is reply
