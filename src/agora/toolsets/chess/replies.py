"""The shapes of what the four chess tools return, as msgspec Structs.

Every reply shares `GameReply`: protocolVersion, statusCode, nextAction, agentMayMove and
the complete, server-generated board state. Each tool adds its own part (the collaboration
contract, the evaluation guide, the move just played). `agora.toolsets.chess.schemas`
turns these Structs into the contract's outputSchemas, so a field added here is a contract
change. This module only declares shapes: it builds nothing and does no I/O.

Status codes:
    SIDE_CHOICE_REQUIRED: the human has not chosen sides; every agent move is refused.
    AGENT_TURN: the agent is to move (``agentMayMove`` is true, ``legalMoves`` is filled).
    HUMAN_TURN: the human is to move; the agent waits with ``wait_for_turn``.
    GAME_OVER: the game has ended; ``result`` says how.
    WAIT_TIMEOUT: ``wait_for_turn`` ran out of time with nothing to act on; call it again.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from agora.toolsets.chess.game import ColorName, ErrorCode, Reason, Role, Score
from agora.toolsets.chess.guide import CollaborationContract, EvaluationGuide, PieceName

PROTOCOL_VERSION: Final = "agora-chess/1"

StatusCode = Literal[
    "SIDE_CHOICE_REQUIRED", "AGENT_TURN", "HUMAN_TURN", "GAME_OVER", "WAIT_TIMEOUT"
]
ToolName = Literal["join_game", "get_board", "move_piece", "wait_for_turn"]
PromotionName = Literal["q", "r", "b", "n"]


class NextAction(msgspec.Struct, frozen=True, rename="camel"):
    """The call to make next. ``tool`` is null when there is nothing left to do.

    For ``move_piece`` the arguments are a template: replace the angle-bracketed values
    with one entry of ``legalMoves``.
    """

    tool: ToolName | None
    arguments: dict[str, Any]
    instruction: str


class PieceOnSquare(msgspec.Struct, frozen=True, rename="camel"):
    """A piece as seen on the board, with the player who owns it."""

    symbol: str
    color: ColorName
    piece: PieceName
    owner: Role | None


class Ownership(msgspec.Struct, frozen=True, rename="camel"):
    """Who plays which colour; all null until the human chooses sides."""

    white: Role | None
    black: Role | None
    agent_color: ColorName | None
    human_color: ColorName | None


class MoveEntry(msgspec.Struct, frozen=True, rename="camel"):
    """One move of the history with the note its player attached."""

    ply: int
    move_number: int
    color: ColorName
    san: str
    uci: str
    from_square: str = msgspec.field(name="from")
    to_square: str = msgspec.field(name="to")
    promotion: PromotionName | None
    by: Role
    note: str | None


class LegalMove(msgspec.Struct, frozen=True, rename="camel"):
    """A move the agent may play now: pass ``from``, ``to`` and ``promotion`` as given."""

    from_square: str = msgspec.field(name="from")
    to_square: str = msgspec.field(name="to")
    promotion: PromotionName | None
    san: str
    uci: str


class GameResult(msgspec.Struct, frozen=True, rename="camel"):
    """How the game ended. ``score`` is PGN's; ``*`` means abandoned for a new game."""

    score: Score
    reason: Reason
    winner: ColorName | None
    winner_role: Role | None
    summary: str


class GameReply(msgspec.Struct, frozen=True, rename="camel"):
    """What every chess reply carries."""

    protocol_version: str
    status_code: StatusCode
    message: str
    next_action: NextAction
    agent_may_move: bool
    table: str
    game_number: int
    fen: str
    side_to_move: ColorName
    in_check: bool
    pieces: dict[str, PieceOnSquare]
    ownership: Ownership
    history: list[MoveEntry]
    legal_moves: list[LegalMove]
    last_move: MoveEntry | None
    draw_offer: Role | None
    result: GameResult | None


class JoinReply(GameReply, frozen=True):
    """``join_game``: the board plus the collaboration contract."""

    collaboration_contract: CollaborationContract
    evaluation_guide: EvaluationGuide


class BoardReply(GameReply, frozen=True):
    """``get_board``: the board plus the evaluation guide."""

    evaluation_guide: EvaluationGuide


class MoveReply(GameReply, frozen=True):
    """``move_piece``: the board after the move, and the move as recorded."""

    played: MoveEntry


class WaitReply(GameReply, frozen=True):
    """``wait_for_turn``: the board plus the evaluation guide, when the wait ended."""

    evaluation_guide: EvaluationGuide


class Rejection(msgspec.Struct, frozen=True, rename="camel"):
    """The structured body of a refused tool call (an ``isError`` result)."""

    protocol_version: str
    ok: bool
    code: ErrorCode
    error: str
    status_code: StatusCode | None
    agent_may_move: bool
    next_action: NextAction
    legal_moves: list[LegalMove]
