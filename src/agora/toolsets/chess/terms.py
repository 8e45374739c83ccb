"""The chess toolset's words: roles, colours, phases, results, error codes and `ChessError`.

Shared by the game model, the table entity, the replies and the page, so that each names
the same things the same way; no logic beyond naming the other side.
"""

from __future__ import annotations

from typing import Final, Literal

import chess

from agora.logsafe import NAME_SEGMENT

Role = Literal["human", "agent"]
ColorName = Literal["white", "black"]
Phase = Literal["side_choice", "agent_turn", "human_turn", "over"]
#: Why no agent counts as present at a table (`agora.toolsets.chess.snapshot.Snapshot`).
AgentAbsence = Literal["token", "restart", "stale"]
Score = Literal["1-0", "0-1", "1/2-1/2", "*"]
Reason = Literal[
    "checkmate",
    "stalemate",
    "insufficient_material",
    "seventyfive_moves",
    "fivefold_repetition",
    "fifty_moves",
    "threefold_repetition",
    "resignation",
    "agreement",
    "abandoned",
]
ErrorCode = Literal[
    "INVALID_ARGUMENTS",
    "MALFORMED_SQUARE",
    "MALFORMED_PROMOTION",
    "NOTE_TOO_LONG",
    "SIDE_NOT_CHOSEN",
    "SIDE_ALREADY_CHOSEN",
    "NOT_YOUR_TURN",
    "ILLEGAL_MOVE",
    "GAME_OVER",
    "NO_DRAW_OFFER",
    "TABLE_NOT_FOUND",
    "TABLE_EXISTS",
    "FORBIDDEN",
    "AGENT_TOKEN_REQUIRED",
    "AGENT_TOKEN_INVALID",
    "INTERNAL_ERROR",
]

NOTE_MAX_CHARS: Final = 160
DRAW_MARK: Final = "(=)"


def color_name(color: chess.Color) -> ColorName:
    """The name of a python-chess colour (``chess.WHITE`` is ``"white"``)."""
    return "white" if color == chess.WHITE else "black"


def other(role: Role) -> Role:
    """The opponent of ``role``."""
    return "agent" if role == "human" else "human"


def other_color(color: ColorName) -> ColorName:
    """The colour that plays against ``color``."""
    return "black" if color == "white" else "white"


class ChessError(ValueError):
    """A command the rules refuse; nothing was changed.

    Attributes:
        code: What was wrong, in the toolset's vocabulary (see `ErrorCode`).
        legal_moves: For ``ILLEGAL_MOVE``, the UCI moves that are legal in the position.
        snapshot: The table as it stands, attached by the table entity so that the
            caller can say what to do next.
    """

    def __init__(self, code: ErrorCode, message: str, legal_moves: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.legal_moves = legal_moves
        self.snapshot: object | None = None


#: The page's words for a table name it cannot take, and for a token in its link that is not
#: the human's.
BAD_NAME: Final = (
    "cannot be a table name: use 1 to 40 letters a-z, digits, _ or -, starting with a letter"
    " or a digit (capitals become lower case; static, tables and api are taken)."
)
WRONG_TOKEN: Final = (
    "The token in this link is not this table's human token: it is mistyped, from another"
    " table, or an agent token the human has since replaced. You are not seated; open the page"
    " without ?token= to watch."
)


def agent_token_on_page(table: str) -> str:
    """What a page opened with table ``table``'s agent token says: whose token it is, where it
    belongs, and which link to open instead."""
    return (
        "This link carries the table's agent token: it belongs in your agent's MCP URL"
        f" (/mcp/chess/{table}?token=...), not in the page's. Open the human link agora serve"
        " printed (or the one you got when you created the table) to play; without ?token= you"
        " watch."
    )


def table_not_found(name: str) -> ChessError:
    """The refusal of a table that does not exist; a name that is none (a token typed after
    ``&`` instead of ``?`` lands in it) is not echoed to the agent."""
    named = repr(name) if NAME_SEGMENT.fullmatch(name) else "by that name (it is none)"
    return ChessError(
        "TABLE_NOT_FOUND",
        f"there is no chess table {named}; the human creates tables from the /play page.",
    )
