"""The evaluation guide: deterministic per FEN, and true to the position it describes."""

from __future__ import annotations

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agora.toolsets.chess import position as render
from agora.toolsets.chess.guide import PIECE_VALUES, evaluation_guide


@st.composite
def positions(draw: st.DrawFn) -> chess.Board:
    """A position reached by random legal moves from the start."""
    board = chess.Board()
    for _ in range(draw(st.integers(0, 80))):
        moves = sorted(board.legal_moves, key=chess.Move.uci)
        if not moves:
            break
        board.push(moves[draw(st.integers(0, len(moves) - 1))])
    return board


@settings(max_examples=75, deadline=None)
@given(board=positions(), agent_color=st.sampled_from([None, "white", "black"]))
def test_the_guide_depends_only_on_the_position(board, agent_color):
    guide = evaluation_guide(board, agent_color)
    assert evaluation_guide(chess.Board(board.fen()), agent_color) == guide
    assert evaluation_guide(board, agent_color) == guide


@settings(max_examples=75, deadline=None)
@given(board=positions())
def test_the_guide_tells_the_truth(board):
    guide = evaluation_guide(board, "white")
    legal = list(board.legal_moves)

    def listed(moves):
        return sorted(m.uci() for m in moves)

    assert guide.checks == listed(m for m in legal if board.gives_check(m))
    assert guide.captures == listed(m for m in legal if board.is_capture(m))
    for entry in guide.mates_in_one:
        after = board.copy()
        after.push_uci(entry)
        assert after.is_checkmate()
    for item in guide.hanging:
        square = chess.parse_square(item[1:])
        piece = board.piece_at(square)
        assert piece is not None
        assert piece.symbol() == item[0]
        assert piece.piece_type != chess.KING
        assert board.attackers(not piece.color, square)
        assert not board.attackers(piece.color, square)
    white = sum(PIECE_VALUES[p.piece_type] for p in board.piece_map().values() if p.color)
    black = sum(PIECE_VALUES[p.piece_type] for p in board.piece_map().values() if not p.color)
    assert guide.material == white - black
    assert evaluation_guide(board, "black").material == black - white


@pytest.mark.parametrize(
    ("fen", "hanging"),
    [
        pytest.param(chess.STARTING_FEN, [], id="start"),
        pytest.param(
            "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
            ["pe5"],
            id="knight-hits-e5",
        ),
    ],
)
def test_attacked_and_undefended_pieces(fen, hanging):
    guide = evaluation_guide(chess.Board(fen), None)
    assert guide.hanging == hanging
    assert guide.material is None


def test_a_mate_in_one_is_found_and_reported():
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    guide = evaluation_guide(board, "white")
    assert guide.mates_in_one == ["h5f7"]
    assert "h5f7" in guide.checks
    assert "h5f7" in guide.captures


@settings(max_examples=50, deadline=None)
@given(board=positions())
def test_a_cached_position_reads_like_a_fresh_board(board):
    fen = board.fen()
    render.position.cache_clear()
    cold = render.position(fen)
    for _ in range(2):  # reading it, guide included, leaves the shared board as it was
        evaluation_guide(cold.board, "white", cold.sans)
        assert render.position(fen) is cold
    assert cold.board.fen() == fen
    assert cold.in_check == board.is_check()
    assert cold.side_to_move == ("white" if board.turn == chess.WHITE else "black")
    assert cold.legal_moves == render.legal_moves(chess.Board(fen))
    assert cold.sans == {m: board.san(m) for m in board.legal_moves}
