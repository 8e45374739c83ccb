"""What is read off one position: the board, its picture, legal moves and SAN, memoised by FEN.

Reading a position (SAN of every legal move above all) costs about a millisecond, and one
position is read several times: the human's reply, the woken agent's reply, every page
stream. `position` memoises that work by FEN, `move_entry` by move, so each is done once;
the cached values are immutable or treated as read-only. Pure: no I/O, no trio, no rules.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

import chess

from agora.toolsets.chess.guide import san_map
from agora.toolsets.chess.notes import shown_note
from agora.toolsets.chess.replies import LegalMove, MoveEntry, PromotionName
from agora.toolsets.chess.terms import color_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.toolsets.chess.game import PlayedMove

#: Positions kept read: enough for every table that is moving at once to hit the cache
#: between the human's reply, the agent's wake and the page streams of one move.
POSITION_CACHE: Final = 2048

_PROMOTION: Final[dict[int, PromotionName]] = {
    chess.QUEEN: "q",
    chess.ROOK: "r",
    chess.BISHOP: "b",
    chess.KNIGHT: "n",
}


@functools.lru_cache(maxsize=8 * POSITION_CACHE)
def move_entry(played: PlayedMove) -> MoveEntry:
    """One history entry."""
    move = chess.Move.from_uci(played.uci)
    return MoveEntry(
        ply=played.ply,
        move_number=played.move_number,
        color=played.color,
        san=played.san,
        uci=played.uci,
        from_square=chess.square_name(move.from_square),
        to_square=chess.square_name(move.to_square),
        promotion=_PROMOTION.get(move.promotion or 0),
        by=played.by,
        note=shown_note(played.note),  # the page's, so no bidi controls
    )


def legal_moves(
    board: chess.Board, sans: Mapping[chess.Move, str] | None = None
) -> list[LegalMove]:
    """Every legal move of the side to move, sorted by UCI (``sans``: its `san_map`)."""
    moves = [
        LegalMove(
            from_square=chess.square_name(m.from_square),
            to_square=chess.square_name(m.to_square),
            promotion=_PROMOTION.get(m.promotion or 0),
            san=san,
            uci=m.uci(),
        )
        for m, san in (san_map(board) if sans is None else sans).items()
    ]
    return sorted(moves, key=lambda m: m.uci)


def picture(board: chess.Board) -> list[str]:
    """The board as text, rank 8 first, each rank labelled; the last line names the files."""
    rows = str(board).split("\n")
    return [f"{8 - i} {row}" for i, row in enumerate(rows)] + ["  a b c d e f g h"]


def movetext(moves: tuple[PlayedMove, ...]) -> str:
    """The game so far in SAN, numbered as in PGN: ``1. e4 e5 2. Nf3``.

    Notes are left out (the latest is ``lastMove.note``; the PGN download keeps them all), so
    a long game stays a few hundred bytes.
    """
    parts = []
    for i, move in enumerate(moves):
        if move.color == "white":
            parts.append(f"{move.move_number}. {move.san}")
        elif i == 0:
            parts.append(f"{move.move_number}... {move.san}")
        else:
            parts.append(move.san)
    return " ".join(parts)


def group_moves(ucis: list[str]) -> dict[str, str]:
    """UCI moves grouped by from-square: ``{"e2": "e3 e4", "e7": "e8q e8r"}``.

    Each value lists the to-squares (with the promotion letter, if any) space-separated, in
    the order of ``ucis``. About half the bytes of a JSON list of UCI strings, so a reply
    fits its byte budget in positions with many legal moves.
    """
    grouped: dict[str, list[str]] = {}
    for uci in ucis:
        grouped.setdefault(uci[:2], []).append(uci[2:])
    return {square: " ".join(targets) for square, targets in grouped.items()}


def ungroup_moves(grouped: Mapping[str, str]) -> list[str]:
    """The UCI moves of a `group_moves` mapping, in its order: ``["e2e3", "e2e4"]``."""
    return [square + target for square, targets in grouped.items() for target in targets.split()]


class Position:
    """What replies and pages read from one FEN, each part computed once (see `position`).

    The board, side to move, check and picture are read at once; the SAN of every legal
    move (the costly part, ~1 ms) only when a reply first needs it: the human's page on the
    agent's turn does not, so it is not made to wait for it. Never mutate what it hands out.
    """

    def __init__(self, fen: str) -> None:
        self.board = chess.Board(fen)
        self.side_to_move = color_name(self.board.turn)
        self.in_check = self.board.is_check()
        self.picture = picture(self.board)

    @functools.cached_property
    def sans(self) -> dict[chess.Move, str]:
        """`san_map` of the board."""
        return san_map(self.board)

    @functools.cached_property
    def legal_moves(self) -> list[LegalMove]:
        """Every legal move, sorted by UCI, in the page's form."""
        return legal_moves(self.board, self.sans)

    @functools.cached_property
    def legal_uci(self) -> list[str]:
        """Every legal move in UCI, sorted."""
        return sorted(move.uci() for move in self.board.legal_moves)

    @functools.cached_property
    def legal_by_square(self) -> dict[str, str]:
        """The agent's ``legalMoves``: `group_moves` of `legal_uci`."""
        return group_moves(self.legal_uci)


@functools.lru_cache(maxsize=POSITION_CACHE)
def position(fen: str) -> Position:
    """The read of ``fen``; the board is shared by every caller: copy it to play on it."""
    return Position(fen)


@functools.lru_cache(maxsize=POSITION_CACHE)
def pieces(fen: str) -> dict[str, str]:
    """The pieces by square name, from a1 to h8, as FEN letters (uppercase White)."""
    board = position(fen).board
    return {chess.square_name(sq): p.symbol() for sq, p in sorted(board.piece_map().items())}
