"""The shapes of what the four chess tools return, as msgspec Structs.

Every reply shares `GameReply`: ``ok``, protocolVersion, statusCode, nextAction,
agentMayMove, the caller's seat, and the position as FEN plus a board picture, with the
legal moves (grouped by from-square) and the last move. Each tool adds its own part (the
collaboration contract, the full history and the evaluation guide). A refused call answers
`Rejection`, and every tool's outputSchema accepts either (`agora.toolsets.chess.schemas`),
so a field added here is a contract change. Replies are kept small (an agent makes hundreds
of calls a game): nothing is said twice, and a ``move_piece`` or ``wait_for_turn`` reply
is at most `REPLY_BUDGET` bytes of compact JSON in every position with up to
`BUDGET_LEGAL_MOVES` legal moves, whatever the notes (`agora.toolsets.chess.fit.fit`).
This module only declares shapes: no I/O.

Status codes:
    SIDE_CHOICE_REQUIRED: the human has not chosen sides; every agent move is refused.
    AGENT_TURN: the agent is to move (for the seated agent ``agentMayMove`` is true and
        ``legalMoves`` is filled).
    HUMAN_TURN: the human is to move; the agent waits with ``wait_for_turn``.
    GAME_OVER: the game has ended; ``result`` says how.
    WAIT_TIMEOUT: ``wait_for_turn`` ran out of time with nothing to act on; call it again.
        Marked ``shuttingDown: true`` when the wait was cut short because the server is
        shutting down: wait a few seconds (the client or relay reconnects), then call again.
    AGENT_TOKEN_REQUIRED: a refusal: the call needs the table's agent token (or carried one
        to ``/mcp``, which reads none: the token seats only at ``/mcp/chess/<table>``).
    AGENT_TOKEN_INVALID: a refusal: the endpoint URL's agent token is not this table's: every
        tool refuses it. Wrong, or replaced by the human with a new one: ask the human for the
        agent URL the page shows now; another table's: ``error`` and ``nextAction`` name the
        endpoint it seats at.
    INVALID_ARGUMENTS: a refusal: the arguments failed the tool's inputSchema and the table
        could not be read (such a refusal otherwise carries the table's status, with code
        ``INVALID_ARGUMENTS``).
    TABLE_NOT_FOUND: a refusal: the endpoint names no table.
    SERVER_ERROR: the call failed inside the server and changed nothing; ``error`` names the
        log line (correlation id).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

from agora.toolsets.chess.guide import CollaborationContract, EvaluationGuide
from agora.toolsets.chess.terms import ColorName, ErrorCode, Reason, Role, Score

PROTOCOL_VERSION: Final = "agora-chess/3"
#: The most bytes (compact UTF-8 JSON) of a ``move_piece`` or ``wait_for_turn`` reply.
REPLY_BUDGET: Final = 1500
#: Legal moves up to which `REPLY_BUDGET` holds in every position, with room to spare (real
#: games stay far below; the 218-move maximum answers at most about 1,780 bytes).
BUDGET_LEGAL_MOVES: Final = 100

StatusCode = Literal[
    "SIDE_CHOICE_REQUIRED",
    "AGENT_TURN",
    "HUMAN_TURN",
    "GAME_OVER",
    "WAIT_TIMEOUT",
    "AGENT_TOKEN_REQUIRED",
    "AGENT_TOKEN_INVALID",
    "INVALID_ARGUMENTS",
    "TABLE_NOT_FOUND",
    "SERVER_ERROR",
]
ToolName = Literal["join_game", "get_board", "move_piece", "wait_for_turn"]
PromotionName = Literal["q", "r", "b", "n"]
Seat = Literal["agent", "watcher"]


class NextAction(msgspec.Struct, frozen=True, rename="camel"):
    """The call to make next. ``tool`` is null when there is nothing left to do.

    For ``move_piece`` the arguments are a template: fill them from one ``legalMoves``
    entry.
    """

    tool: ToolName | None
    arguments: dict[str, Any]
    instruction: str


class LastMove(msgspec.Struct, frozen=True, rename="camel"):
    """The move just played, with the note its player attached."""

    san: str
    uci: str
    by: Role
    note: str | None


class MoveEntry(msgspec.Struct, frozen=True, rename="camel"):
    """One move of the history, as the page shows it."""

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
    """A move the human may play now (the page's form of a legal move)."""

    from_square: str = msgspec.field(name="from")
    to_square: str = msgspec.field(name="to")
    promotion: PromotionName | None
    san: str
    uci: str


class Ownership(msgspec.Struct, frozen=True, rename="camel"):
    """Who plays which colour; null until the human chooses sides."""

    white: Role | None
    black: Role | None


#: Whether the human is at the table now (kept in memory: a restart forgets it until their
#: page reconnects, which it does by itself).
HumanSeat = Annotated[
    Literal["connected", "away", "absent"],
    msgspec.Meta(
        description="Whether the human is at the table: connected (their page is open and"
        " live now), away (they came since the server started, but no page of theirs is"
        " connected now; a closed page is noticed within about 40 seconds) or absent (no"
        " sign of them since the server started: the seat is empty)."
    ),
]


class GameResult(msgspec.Struct, frozen=True, rename="camel"):
    """How the game ended. ``score`` is PGN's; ``*`` means abandoned for a new game."""

    score: Score
    reason: Reason
    winner: ColorName | None
    winner_role: Role | None
    summary: str


class GameReply(msgspec.Struct, frozen=True, rename="camel"):
    """What every chess reply carries.

    ``board`` is the position as text, rank 8 first (uppercase White, lowercase Black,
    ``.`` empty), the last line naming the files. ``legalMoves`` maps each from-square to
    its to-squares, space-separated, a fifth letter naming a promotion
    (``{"e2": "e3 e4", "b7": "a8q a8r a8b a8n"}``), and is only filled for the seated agent
    on its turn. ``lastMove.note`` may end in "…" when the whole note would not fit the
    reply's byte budget (then ``evaluationGuide`` is dropped first).
    """

    ok: bool
    protocol_version: str
    status_code: StatusCode
    message: str
    next_action: NextAction
    agent_may_move: bool
    seat: Seat
    table: str
    game_number: int
    fen: str
    board: list[str]
    side_to_move: ColorName
    in_check: bool
    agent_color: ColorName | None
    last_move: LastMove | None
    legal_moves: dict[str, str]
    draw_offer: Role | None
    draw_declined: bool
    result: GameResult | None


class JoinReply(GameReply, frozen=True):
    """``join_game``: the board, the game so far (SAN movetext) and the collaboration contract."""

    history: str
    collaboration_contract: CollaborationContract


class BoardReply(GameReply, frozen=True):
    """``get_board``: the board with pieces by square, history, ownership, whether the human
    is at the table, and the guide."""

    history: str
    pieces: dict[str, str]
    ownership: Ownership
    human: HumanSeat
    evaluation_guide: EvaluationGuide


class MoveReply(GameReply, frozen=True):
    """``move_piece``: the board after the move (``lastMove`` is the move just played)."""


class WaitReply(GameReply, frozen=True):
    """``wait_for_turn``: the board and whether the human is at the table, with the
    evaluation guide when the agent may move.

    ``shuttingDown`` is only there (and true) on a WAIT_TIMEOUT that the server's graceful
    shutdown cut short: this connection is going away, so the agent reconnects before it
    waits again, rather than calling again at once as after a real timeout.
    """

    human: HumanSeat
    evaluation_guide: EvaluationGuide | None
    shutting_down: Annotated[
        Literal[True] | msgspec.UnsetType,
        msgspec.Meta(
            description="Present only when the wait ended early, with nothing to act on, "
            "because the server is shutting down."
        ),
    ] = msgspec.UNSET


class Rejection(msgspec.Struct, frozen=True, rename="camel"):
    """The structured body of a refused tool call (an ``isError`` result).

    ``statusCode`` is the table's state when the table was read (e.g. HUMAN_TURN for
    NOT_YOUR_TURN), else the reason the call never reached it.
    """

    ok: bool
    protocol_version: str
    code: ErrorCode
    error: str
    status_code: StatusCode
    agent_may_move: bool
    next_action: NextAction
    legal_moves: dict[str, str]
