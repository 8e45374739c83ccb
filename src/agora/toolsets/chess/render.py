"""Turn a table `Snapshot` into the agent's replies, and a refusal into a tool error body.

Decides the statusCode and the exact nextAction for each state, and fills every field of
`agora.toolsets.chess.replies`. The board details (pieces, legal moves, SAN, the evaluation
guide) are read from the snapshot's FEN with python-chess. Pure: no I/O, no trio, and no
rule decisions (those belong to `agora.toolsets.chess.game`).

Reading a position (SAN of every legal move above all) costs about a millisecond, and one
position is read several times: the human's reply, the woken agent's reply, every page
stream. `position` memoises that work by FEN, and `move_entry` by move, so each is done
once; the cached values are immutable or treated as read-only.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

import chess
import msgspec

from agora.toolsets.chess.game import color_name, other_color
from agora.toolsets.chess.guide import CONTRACT, evaluation_guide, piece_name, san_map
from agora.toolsets.chess.replies import (
    PROTOCOL_VERSION,
    BoardReply,
    GameResult,
    JoinReply,
    LegalMove,
    MoveEntry,
    MoveReply,
    NextAction,
    Ownership,
    PieceOnSquare,
    PromotionName,
    Rejection,
    StatusCode,
    WaitReply,
)
from agora.toolsets.chess.table import Snapshot, WaitCondition

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.toolsets.chess.game import ChessError, ColorName, PlayedMove, Role
    from agora.toolsets.chess.guide import EvaluationGuide

#: Positions kept read: enough for every table that is moving at once to hit the cache
#: between the human's reply, the agent's wake and the page streams of one move.
POSITION_CACHE: Final = 2048

_STATUS: Final[dict[str, StatusCode]] = {
    "side_choice": "SIDE_CHOICE_REQUIRED",
    "agent_turn": "AGENT_TURN",
    "human_turn": "HUMAN_TURN",
    "over": "GAME_OVER",
}
_PROMOTION: Final[dict[int, PromotionName]] = {
    chess.QUEEN: "q",
    chess.ROOK: "r",
    chess.BISHOP: "b",
    chess.KNIGHT: "n",
}
_MOVE_TEMPLATE: Final = {
    "from": "<from of one legalMoves entry>",
    "to": "<to of the same entry>",
    "promotion": "<its promotion, only if not null>",
    "note": "<one sentence on why, at most 160 characters>",
}
_REASONS: Final = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient_material": "insufficient material",
    "seventyfive_moves": "the 75-move rule",
    "fivefold_repetition": "fivefold repetition",
    "fifty_moves": "the 50-move rule",
    "threefold_repetition": "threefold repetition",
    "resignation": "resignation",
    "agreement": "agreement",
    "abandoned": "a new game",
}


def status_code(snap: Snapshot) -> StatusCode:
    """The statusCode of a snapshot (never WAIT_TIMEOUT, which only a wait can produce)."""
    return _STATUS[snap.phase]


def next_action(status: StatusCode, wait_for_human: bool = False) -> NextAction:
    """The exact call an agent should make next in ``status``."""
    match status:
        case "SIDE_CHOICE_REQUIRED":
            return NextAction(
                "wait_for_turn",
                {"wait_for_human": True},
                "The human has not chosen sides yet; wait for the choice.",
            )
        case "AGENT_TURN":
            return NextAction(
                "move_piece",
                dict(_MOVE_TEMPLATE),
                "Your move: follow the evaluation path, then play one entry of legalMoves.",
            )
        case "HUMAN_TURN":
            return NextAction("wait_for_turn", {}, "The human is to move; wait for your turn.")
        case "WAIT_TIMEOUT":
            args: dict[str, Any] = {"wait_for_human": True} if wait_for_human else {}
            return NextAction("wait_for_turn", args, "Nothing new yet; call wait_for_turn again.")
        case _:
            return NextAction(None, {}, "The game is over; stop.")


def ownership(agent_color: ColorName | None) -> Ownership:
    """Who plays which colour."""
    if agent_color is None:
        return Ownership(white=None, black=None, agent_color=None, human_color=None)
    human_color = other_color(agent_color)
    agent: Role = "agent"
    human: Role = "human"
    return Ownership(
        white=agent if agent_color == "white" else human,
        black=agent if agent_color == "black" else human,
        agent_color=agent_color,
        human_color=human_color,
    )


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
        note=played.note,
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


def pieces(board: chess.Board, agent_color: ColorName | None) -> dict[str, PieceOnSquare]:
    """The pieces by square name, from a1 to h8, with their owners."""
    owners = ownership(agent_color)
    found = {}
    for square, piece in sorted(board.piece_map().items()):
        color = color_name(piece.color)
        found[chess.square_name(square)] = PieceOnSquare(
            symbol=piece.symbol(),
            color=color,
            piece=piece_name(piece.piece_type),
            owner=owners.white if color == "white" else owners.black,
        )
    return found


def game_result(snap: Snapshot) -> GameResult | None:
    """The result of a finished game, with who won in the players' terms."""
    result = snap.result
    if result is None:
        return None
    role: Role | None = None
    if result.winner is not None and snap.agent_color is not None:
        role = "agent" if result.winner == snap.agent_color else "human"
    how = _REASONS[result.reason]
    if result.winner is None:
        summary = f"{result.score}: drawn by {how}."
        if result.reason == "abandoned":
            summary = "Abandoned: the human started a new game."
    else:
        summary = f"{result.score}: {result.winner} ({role}) wins by {how}."
    return GameResult(
        score=result.score,
        reason=result.reason,
        winner=result.winner,
        winner_role=role,
        summary=summary,
    )


def _message(snap: Snapshot, status: StatusCode, result: GameResult | None) -> str:
    last = snap.moves[-1] if snap.moves else None
    said = f' The {last.by} played {last.san}: "{last.note}".' if last and last.note else ""
    offer = (
        " The human offers a draw; write (=) in your move note to accept."
        if (snap.draw_offer == "human")
        else ""
    )
    match status:
        case "SIDE_CHOICE_REQUIRED":
            text = "Waiting for the human to choose sides."
        case "AGENT_TURN":
            text = f"Your move as {snap.agent_color}."
        case "HUMAN_TURN":
            text = "The human is to move."
        case "WAIT_TIMEOUT":
            text = "No change before the timeout."
        case _:
            text = f"Game over. {result.summary if result else ''}".strip()
    return text + said + offer


class Position:
    """What replies and pages read from one FEN, each part computed once (see `position`).

    The board, side to move and check are read at once; the SAN of every legal move (the
    costly part, ~1 ms) only when a reply first needs it: the human's page on the agent's
    turn does not, so it is not made to wait for it. Never mutate what it hands out.
    """

    def __init__(self, fen: str) -> None:
        self.board = chess.Board(fen)
        self.side_to_move = color_name(self.board.turn)
        self.in_check = self.board.is_check()

    @functools.cached_property
    def sans(self) -> dict[chess.Move, str]:
        """`san_map` of the board."""
        return san_map(self.board)

    @functools.cached_property
    def legal_moves(self) -> list[LegalMove]:
        """Every legal move, sorted by UCI."""
        return legal_moves(self.board, self.sans)


@functools.lru_cache(maxsize=POSITION_CACHE)
def position(fen: str) -> Position:
    """The read of ``fen``; the board is shared by every caller: copy it to play on it."""
    return Position(fen)


@functools.lru_cache(maxsize=POSITION_CACHE)
def _guide(fen: str, agent_color: ColorName | None) -> EvaluationGuide:
    pos = position(fen)
    return evaluation_guide(pos.board, agent_color, pos.sans)


@functools.lru_cache(maxsize=POSITION_CACHE)
def _pieces(fen: str, agent_color: ColorName | None) -> dict[str, PieceOnSquare]:
    return pieces(position(fen).board, agent_color)


def _fields(snap: Snapshot, status: StatusCode, wait_for_human: bool = False) -> dict[str, Any]:
    pos = position(snap.fen)
    may_move = snap.phase == "agent_turn"
    result = game_result(snap)
    history = [move_entry(m) for m in snap.moves]
    return {
        "protocol_version": PROTOCOL_VERSION,
        "status_code": status,
        "message": _message(snap, status, result),
        "next_action": next_action(status, wait_for_human),
        "agent_may_move": may_move,
        "table": snap.table,
        "game_number": snap.game_number,
        "fen": snap.fen,
        "side_to_move": pos.side_to_move,
        "in_check": pos.in_check,
        "pieces": _pieces(snap.fen, snap.agent_color),
        "ownership": ownership(snap.agent_color),
        "history": history,
        "legal_moves": pos.legal_moves if may_move else [],
        "last_move": history[-1] if history else None,
        "draw_offer": snap.draw_offer,
        "result": result,
    }


def join_reply(snap: Snapshot) -> JoinReply:
    """The ``join_game`` reply."""
    return JoinReply(
        **_fields(snap, status_code(snap)),
        collaboration_contract=CONTRACT,
        evaluation_guide=_guide(snap.fen, snap.agent_color),
    )


def board_reply(snap: Snapshot) -> BoardReply:
    """The ``get_board`` reply."""
    guide = _guide(snap.fen, snap.agent_color)
    return BoardReply(**_fields(snap, status_code(snap)), evaluation_guide=guide)


def move_reply(snap: Snapshot) -> MoveReply:
    """The ``move_piece`` reply: the board after the agent's move."""
    fields = _fields(snap, status_code(snap))
    return MoveReply(**fields, played=fields["history"][-1])


def wait_reply(snap: Snapshot, condition: WaitCondition) -> WaitReply:
    """The ``wait_for_turn`` reply; WAIT_TIMEOUT when ``condition`` is still unmet."""
    status: StatusCode = status_code(snap) if condition(snap) else "WAIT_TIMEOUT"
    fields = _fields(snap, status, condition.wait_for_human)
    return WaitReply(**fields, evaluation_guide=_guide(snap.fen, snap.agent_color))


def rejection(err: ChessError) -> Rejection:
    """The tool error body for a refused call: the code, what to do next, legal moves."""
    snap = err.snapshot if isinstance(err.snapshot, Snapshot) else None
    status = status_code(snap) if snap is not None else None
    if status is None:
        action = NextAction(None, {}, "Ask the human for the table's agent endpoint.")
    else:
        action = next_action(status)
    moves: list[LegalMove] = []
    if err.code == "ILLEGAL_MOVE" and snap is not None:
        moves = position(snap.fen).legal_moves
    return Rejection(
        protocol_version=PROTOCOL_VERSION,
        ok=False,
        code=err.code,
        error=err.message,
        status_code=status,
        agent_may_move=snap is not None and snap.phase == "agent_turn",
        next_action=action,
        legal_moves=moves,
    )


def argument_rejection(problems: list[str]) -> dict[str, Any]:
    """The error body for arguments that failed the inputSchema (before any table is read).

    Args:
        problems: What the validator found, one line each.

    Returns:
        A `Rejection` as builtins: code ``INVALID_ARGUMENTS`` and a ``get_board`` next action.
    """
    body = Rejection(
        protocol_version=PROTOCOL_VERSION,
        ok=False,
        code="INVALID_ARGUMENTS",
        error="; ".join(problems),
        status_code=None,
        agent_may_move=False,
        next_action=NextAction(
            "get_board",
            {},
            "Re-read the board, then call again with arguments from legalMoves.",
        ),
        legal_moves=[],
    )
    result: dict[str, Any] = msgspec.to_builtins(body)
    return result
