"""One game of chess between a human and an agent: sides, turns, notes, draw offers, endings.

A pure model over python-chess: every rule, legal move and ending comes from `chess.Board`;
this module adds who owns which colour, whose turn it is, the notes attached to moves, and
how a game stops. It does no I/O, knows no clock (timestamps are passed in) and no trio.

Endings are decided after every move, in this order: checkmate, insufficient material,
stalemate, the 75-move rule and fivefold repetition (automatic in FIDE rules), then the
50-move rule and threefold repetition. There is no arbiter to claim a draw for either
player, so the game ends as a draw the moment the current position qualifies for a claim:
the halfmove clock reaches 100, or the position has occurred for the third time. A position
that a move *would* repeat for the third time does not end the game until it is reached.

Draw offers follow the scoresheet convention of FIDE Laws 9.1.2.1, where ``(=)`` records an
offer: the agent offers (or accepts) a draw by writing ``(=)`` in its move note; the human
uses the page's buttons. An offer stands until the opponent's next move, which declines it;
but the human may offer while the agent is thinking, and an agent move that left a reply
without the human's offer cannot decline it: that offer stands until the agent's next move
(`Game.play`'s ``offer_seen``; the plies of such moves are `Game.unseen_plies`).
"""

from __future__ import annotations

import re
from typing import Final

import chess
import msgspec

from agora.toolsets.chess.illegal import explain_illegal
from agora.toolsets.chess.terms import (
    DRAW_MARK,
    NOTE_MAX_CHARS,
    ChessError,
    ColorName,
    Phase,
    Reason,
    Role,
    Score,
    color_name,
    other,
    other_color,
)

_SQUARE = re.compile(r"[a-h][1-8]")
_PROMOTIONS: Final = {"q": chess.QUEEN, "r": chess.ROOK, "b": chess.BISHOP, "n": chess.KNIGHT}
_TERMINATIONS: Final[dict[chess.Termination, Reason]] = {
    chess.Termination.CHECKMATE: "checkmate",
    chess.Termination.STALEMATE: "stalemate",
    chess.Termination.INSUFFICIENT_MATERIAL: "insufficient_material",
    chess.Termination.SEVENTYFIVE_MOVES: "seventyfive_moves",
    chess.Termination.FIVEFOLD_REPETITION: "fivefold_repetition",
}


class PlayedMove(msgspec.Struct, frozen=True):
    """One move as it entered the history."""

    ply: int
    move_number: int
    color: ColorName
    uci: str
    san: str
    by: Role
    note: str | None
    played_at: str


class Result(msgspec.Struct, frozen=True):
    """How a game ended: ``score`` is PGN's, ``*`` for an abandoned game."""

    score: Score
    reason: Reason
    winner: ColorName | None
    ended_at: str


class PastGame(msgspec.Struct, frozen=True):
    """A game the seated agent last saw unfinished, replaced since by the human's new game."""

    number: int
    agent_color: ColorName | None
    result: Result | None


def declined_draw(moves: tuple[PlayedMove, ...]) -> Role | None:
    """Who declined, with the last move, a draw offered by ``(=)`` in the move before.

    Read from the history alone, so it survives a restart without a column of its own.
    """
    if len(moves) < 2 or moves[-2].by == moves[-1].by:
        return None
    note = moves[-2].note
    return moves[-1].by if note is not None and DRAW_MARK in note else None


def answering_move(
    moves: tuple[PlayedMove, ...], count: int, unseen_plies: tuple[int, ...]
) -> PlayedMove | None:
    """The agent move that answered the human's draw offer made after ``count`` moves.

    The first agent move after the offer, unless the agent had not been shown the offer
    when it moved (``unseen_plies``): then a later one. None if no agent move answered it.
    """
    return next((m for m in moves[count:] if m.by == "agent" and m.ply not in unseen_plies), None)


def declined_by_agent(moves: tuple[PlayedMove, ...], declined_ply: int | None) -> bool:
    """Whether the last move is the agent's and declined the human's pending draw offer."""
    return declined_ply is not None and declined_ply == len(moves) and moves[-1].by == "agent"


def check_move_input(from_sq: str, to_sq: str, promotion: str | None, note: str | None) -> None:
    """Validate the shape of a move request, before looking at the position.

    Raises:
        ChessError: ``MALFORMED_SQUARE``, ``MALFORMED_PROMOTION`` or ``NOTE_TOO_LONG``.
    """
    for name, square in (("from", from_sq), ("to", to_sq)):
        if not isinstance(square, str) or not _SQUARE.fullmatch(square):
            raise ChessError(
                "MALFORMED_SQUARE", f"{name}={square!r} is not a square like e2 (a-h, 1-8)."
            )
    if promotion is not None and (not isinstance(promotion, str) or promotion not in _PROMOTIONS):
        raise ChessError("MALFORMED_PROMOTION", "promotion must be one of q, r, b, n.")
    if note is not None and (not isinstance(note, str) or len(note) > NOTE_MAX_CHARS):
        raise ChessError(
            "NOTE_TOO_LONG", f"note has {len(note)} characters; the limit is {NOTE_MAX_CHARS}."
        )


class Game:
    """One game: a board, who plays which colour, the annotated history, and the result.

    Methods that change the game validate everything first and raise `ChessError`
    before touching any state, so a refused command leaves the game as it was.
    """

    def __init__(
        self,
        number: int,
        *,
        start_fen: str = chess.STARTING_FEN,
        agent_color: ColorName | None = None,
    ) -> None:
        self.number = number
        self.start_fen = start_fen
        self.board = chess.Board(start_fen)
        self.agent_color: ColorName | None = agent_color
        self.moves: tuple[PlayedMove, ...] = ()
        self.draw_offer: Role | None = None
        #: The ply of the move that declined the opponent's pending offer (the human offers
        #: with a button, so no note records it; see `declined_draw` for the agent's offers).
        self.declined_ply: int | None = None
        #: How many moves had been played at each of the human's draw offers (the PGN
        #: tells them; the agent's offers are in its notes).
        self.human_offers: tuple[int, ...] = ()
        #: The plies of the agent's moves played while the human's draw offer stood but
        #: before the agent had been shown it: they did not decline it (it still stands).
        self.unseen_plies: tuple[int, ...] = ()
        self.result: Result | None = None

    # -- reading ------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """Where the game stands: choosing sides, someone's turn, or over."""
        if self.result is not None:
            return "over"
        if self.agent_color is None:
            return "side_choice"
        return "agent_turn" if self.role_to_move() == "agent" else "human_turn"

    def role_to_move(self) -> Role | None:
        """Who must move now, or None before the sides are chosen."""
        if self.agent_color is None:
            return None
        return "agent" if color_name(self.board.turn) == self.agent_color else "human"

    def legal_uci(self) -> tuple[str, ...]:
        """The legal moves of the side to move, in UCI, sorted."""
        return tuple(sorted(move.uci() for move in self.board.legal_moves))

    # -- commands -------------------------------------------------------------------------

    def choose_side(self, agent_color: ColorName) -> None:
        """Record the human's choice of sides.

        Raises:
            ChessError: ``GAME_OVER`` or ``SIDE_ALREADY_CHOSEN``.
        """
        self._require_running()
        if self.agent_color is not None:
            raise ChessError(
                "SIDE_ALREADY_CHOSEN",
                f"sides are already chosen: the agent plays {self.agent_color}.",
            )
        self.agent_color = agent_color

    def play(
        self,
        by: Role,
        from_sq: str,
        to_sq: str,
        promotion: str | None,
        note: str | None,
        at: str,
        *,
        offer_seen: bool = True,
    ) -> PlayedMove:
        """Play one move for ``by``; end the game if the position calls for it.

        Args:
            by: Who is moving.
            from_sq: Starting square, e.g. ``e2``.
            to_sq: Destination square, e.g. ``e4``.
            promotion: ``q``, ``r``, ``b`` or ``n``; queen when omitted and the move promotes.
            note: A short rationale shown to the opponent (at most 160 characters).
            at: Timestamp recorded with the move (ISO 8601).
            offer_seen: Whether the mover had been shown the opponent's pending draw
                offer. A move declines only an offer its player was shown: an unseen one
                stands on (for the agent, whose replies show offers; the human's page
                shows them live).

        Returns:
            The move as it entered the history.

        Raises:
            ChessError: malformed input, game over, sides not chosen, not ``by``'s turn,
                or an illegal move (with the legal moves).
        """
        check_move_input(from_sq, to_sq, promotion, note)
        self._require_running()
        self._require_turn(by)
        played = self._push(self._parse(from_sq, to_sq, promotion), by, note or None, at)
        self._after_move(played, at, offer_seen)
        return played

    def resign(self, by: Role, at: str) -> Result:
        """``by`` resigns; the opponent wins.

        Raises:
            ChessError: ``GAME_OVER`` or ``SIDE_NOT_CHOSEN``.
        """
        self._require_running()
        self._require_sides()
        winner = other_color(self._color_of(by))
        return self._finish("1-0" if winner == "white" else "0-1", "resignation", winner, at)

    def offer_draw(self, by: Role, at: str) -> Result | None:
        """``by`` offers a draw; an offer crossing the opponent's pending one agrees it.

        Returns:
            The result when the draw is agreed, else None (the offer now stands).

        Raises:
            ChessError: ``GAME_OVER`` or ``SIDE_NOT_CHOSEN``.
        """
        self._require_running()
        self._require_sides()
        if self.draw_offer == other(by):
            return self._finish("1/2-1/2", "agreement", None, at)
        if by == "human" and self.draw_offer != "human":
            self.human_offers = (*self.human_offers, len(self.moves))
            self.declined_ply = None  # the last offer's decline is old news: this one stands
        self.draw_offer = by
        return None

    def accept_draw(self, by: Role, at: str) -> Result:
        """``by`` accepts the opponent's pending draw offer.

        Raises:
            ChessError: ``GAME_OVER``, ``SIDE_NOT_CHOSEN`` or ``NO_DRAW_OFFER``.
        """
        self._require_running()
        self._require_sides()
        if self.draw_offer != other(by):
            raise ChessError("NO_DRAW_OFFER", f"the {other(by)} has no draw offer pending.")
        return self._finish("1/2-1/2", "agreement", None, at)

    def abandon(self, at: str) -> Result | None:
        """Stop an unfinished game without a result (a new game replaces it)."""
        if self.result is not None:
            return None
        return self._finish("*", "abandoned", None, at)

    def restore(self, uci: str, san: str, by: Role, note: str | None, at: str) -> None:
        """Replay one stored move (loading from the store); the result is restored separately.

        The move's legality is checked again; its notation is the stored one (computing SAN
        costs a legal-move search of the position after the move: most of a reload).

        Raises:
            ValueError: if the stored move is not legal here (a corrupt store).
        """
        move = chess.Move.from_uci(uci)
        if not self.board.is_legal(move):
            raise ValueError(f"stored move {uci} is illegal at ply {len(self.moves) + 1}")
        self._push(move, by, note, at, san)

    # -- internals ------------------------------------------------------------------------

    def _push(
        self, move: chess.Move, by: Role, note: str | None, at: str, san: str | None = None
    ) -> PlayedMove:
        played = PlayedMove(
            ply=len(self.moves) + 1,
            move_number=self.board.fullmove_number,
            color=color_name(self.board.turn),
            uci=self.board.uci(move),  # castling as the king's move (e1g1), not onto the rook
            san=self.board.san(move) if san is None else san,
            by=by,
            note=note,
            played_at=at,
        )
        self.board.push(move)
        self.moves = (*self.moves, played)
        return played

    def _after_move(self, played: PlayedMove, at: str, offer_seen: bool) -> None:
        ending = self._ending()
        if ending is not None:
            self._finish(*ending, at)
            return
        offered = played.by == "agent" and played.note is not None and DRAW_MARK in played.note
        if offered and self.draw_offer == "human":
            self._finish("1/2-1/2", "agreement", None, at)
        elif offered:
            self.draw_offer = "agent"
        elif self.draw_offer == other(played.by) and not offer_seen:
            self.unseen_plies = (*self.unseen_plies, played.ply)  # the offer stands
        elif self.draw_offer == other(played.by):
            self.draw_offer = None  # a move declines the opponent's offer
            self.declined_ply = played.ply

    def _ending(self) -> tuple[Score, Reason, ColorName | None] | None:
        outcome = self.board.outcome(claim_draw=False)
        if outcome is not None:
            reason = _TERMINATIONS[outcome.termination]
            if outcome.winner is None:
                return "1/2-1/2", reason, None
            return outcome.result(), reason, color_name(outcome.winner)  # type: ignore[return-value]
        if self.board.is_fifty_moves():
            return "1/2-1/2", "fifty_moves", None
        if self.board.is_repetition(3):
            return "1/2-1/2", "threefold_repetition", None
        return None

    def _finish(self, score: Score, reason: Reason, winner: ColorName | None, at: str) -> Result:
        self.result = Result(score=score, reason=reason, winner=winner, ended_at=at)
        self.draw_offer = None
        return self.result

    def _parse(self, from_sq: str, to_sq: str, promotion: str | None) -> chess.Move:
        origin, target = chess.parse_square(from_sq), chess.parse_square(to_sq)
        piece = self.board.piece_at(origin)
        promotes = (
            piece is not None
            and piece.piece_type == chess.PAWN
            and chess.square_rank(target) in (0, 7)
        )
        if promotion is not None and not promotes:
            raise self._illegal(
                f"{from_sq}{to_sq} is not a promotion: send it again without promotion (only a"
                " pawn reaching the last rank promotes; promotion's default, queen, is for it)."
            )
        kind = _PROMOTIONS[promotion or "q"] if promotes else None
        move = chess.Move(origin, target, promotion=kind)
        if move not in self.board.legal_moves:
            raise self._illegal(explain_illegal(self.board, move))
        return move

    def _illegal(self, message: str) -> ChessError:
        return ChessError("ILLEGAL_MOVE", message, self.legal_uci())

    def _color_of(self, role: Role) -> ColorName:
        assert self.agent_color is not None
        return self.agent_color if role == "agent" else other_color(self.agent_color)

    def _require_running(self) -> None:
        if self.result is not None:
            raise ChessError(
                "GAME_OVER",
                f"game {self.number} is over ({self.result.score}, {self.result.reason}).",
            )

    def _require_sides(self) -> None:
        if self.agent_color is None:
            raise ChessError(
                "SIDE_NOT_CHOSEN", "the human has not chosen sides yet; nobody may move."
            )

    def _require_turn(self, by: Role) -> None:
        self._require_sides()
        if self.role_to_move() != by:
            raise ChessError(
                "NOT_YOUR_TURN", f"it is the {other(by)}'s turn ({color_name(self.board.turn)})."
            )
