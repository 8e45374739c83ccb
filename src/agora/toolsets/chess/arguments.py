"""The refusal of a chess tool call whose arguments failed the inputSchema.

The body is a `Rejection` (code ``INVALID_ARGUMENTS``) whose next action fits the first
offending argument: ``timeout_ms`` and ``wait_for_human`` say what they take; an unknown
field says to drop it (naming the tool that was called: a move's refusal always names
``move_piece`` when the agent may move); a move's fields are fixed from legalMoves, and a
square that breaks its pattern is explained in words (two characters; a promotion piece goes
in ``promotion``), not as the bare pattern. With the table as it
stands (`tools.refuse_arguments` reads it), statusCode, agentMayMove and legalMoves are the
table's, as on any refusal, so the agent on move can retry from this reply alone; without
it (the table could not be read) statusCode is ``INVALID_ARGUMENTS``, agentMayMove false
and the next action re-reads the board. Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.chess.actions import next_action
from agora.toolsets.chess.position import position
from agora.toolsets.chess.render import status_code
from agora.toolsets.chess.replies import PROTOCOL_VERSION, NextAction, Rejection

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agora.mcp.validation import ValidationIssue
    from agora.toolsets.chess.replies import Seat, StatusCode
    from agora.toolsets.chess.snapshot import Snapshot

#: What to do about a bad argument of a tool that takes no move (say wait_for_turn's).
_FIXES: Final = {
    "timeout_ms": NextAction(
        "wait_for_turn",
        {},
        "timeout_ms is an integer of milliseconds from 1000 to 55000: call wait_for_turn again"
        " with one, or leave it out to wait 55000.",
    ),
    "wait_for_human": NextAction(
        "wait_for_turn",
        {"wait_for_human": True},
        "wait_for_human is a boolean (true or false): call wait_for_turn again with one.",
    ),
}
_MOVE_FIELDS: Final = frozenset({"from", "to", "promotion", "note"})
#: A square argument that broke its pattern, in words (an agent copying "a8q" from legalMoves
#: into ``to`` is the usual case).
_SQUARE_WORDS: Final = (
    "is not a square: a square is two characters, a file a-h then a rank 1-8, like e4."
)
#: A ``to`` that is a square followed by a promotion piece, as legalMoves writes one.
_SQUARE_AND_PIECE: Final = re.compile(r"[a-h][1-8][qrbnQRBN]")
_PROMOTION_WORDS: Final = (
    " A promotion piece is not part of the square: send it in promotion (q, r, b or n),"
    ' e.g. {"from": "a7", "to": "a8", "promotion": "q"}.'
)


#: The optional fields a client may send as null, with what leaving each out means: the
#: inputSchemas (the seed's) declare a type without null, so null is refused, in these words.
_OPTIONAL: Final = {
    "promotion": "optional: a pawn reaching the last rank becomes a queen without it",
    "note": "optional: the move is then played without a note",
    "timeout_ms": "optional: the wait then lasts up to 55000 ms",
    "wait_for_human": "optional: false without it",
}


def issue_rejection(
    issues: Sequence[ValidationIssue],
    table: tuple[Snapshot, Seat] | None = None,
    tool: str | None = None,
    args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`argument_rejection` for the validator's issues: the next action fits the first one.
    ``args``: the arguments as sent, when known (a ``to`` written as a square and a piece
    letter is told where the piece goes). Issues said in the same words are said once (a null
    ``promotion`` breaks both its type and its enum)."""
    first = str(issues[0].path[0]) if issues and issues[0].path else ""
    sent = args if args is not None else {}
    problems = list(dict.fromkeys(_describe(issue, sent) for issue in issues))
    return argument_rejection(problems, first, table, tool)


def _describe(issue: ValidationIssue, sent: Mapping[str, Any]) -> str:
    """One issue in words; a square's broken pattern says what a square is, a ``to`` that
    is a square and a promotion piece (``a8q``) where that piece goes, and a null optional
    field (the schemas take none) to leave it out."""
    name = issue.path[0] if len(issue.path) == 1 else None
    if name in _OPTIONAL and name in sent and sent[name] is None:
        return f"argument '{name}' is null: leave it out instead ({_OPTIONAL[name]})"
    sent_to = sent.get("to")
    if issue.rule == "pattern" and issue.path and issue.path[0] in ("from", "to"):
        promoted = isinstance(sent_to, str) and _SQUARE_AND_PIECE.fullmatch(sent_to) is not None
        promotion = _PROMOTION_WORDS if issue.path[0] == "to" and promoted else ""
        return f"argument '{issue.field}' {_SQUARE_WORDS}{promotion}"
    return issue.describe()


def argument_rejection(
    problems: list[str],
    field: str | None = None,
    table: tuple[Snapshot, Seat] | None = None,
    tool: str | None = None,
) -> dict[str, Any]:
    """The error body for arguments that failed the inputSchema.

    Args:
        problems: What the validator found, one line each.
        field: The first offending argument, when known: the next action says how to fix it
            (a move's fields from legalMoves); None keeps the move's wording.
        table: The table as the caller's seat sees it, when it could be read.
        tool: The tool called, when known: an unknown field of ``move_piece`` is fixed as
            a move's field is (``move_piece`` when the agent may move).

    Returns:
        A `Rejection` as builtins, code ``INVALID_ARGUMENTS``.
    """
    status: StatusCode
    if table is None:
        status = "INVALID_ARGUMENTS"
        may_move = False
        moves: dict[str, str] = {}
        fix = _argument_fix(field, next_action("INVALID_ARGUMENTS"), tool)
    else:
        snap, seat = table
        status = status_code(snap)
        may_move = seat == "agent" and snap.phase == "agent_turn"
        moves = position(snap.fen).legal_by_square if may_move else {}
        fix = _argument_fix(field, next_action(status, seat=seat), tool)
    body = Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code="INVALID_ARGUMENTS",
        error="; ".join(problems),
        status_code=status,
        agent_may_move=may_move,
        next_action=fix,
        legal_moves=moves,
    )
    result: dict[str, Any] = msgspec.to_builtins(body)
    return result


def _argument_fix(field: str | None, on_the_move: NextAction, tool: str | None) -> NextAction:
    """How to fix ``field``; ``on_the_move`` is what a move's field (or none known) gets."""
    if field is None or field in _MOVE_FIELDS:
        return on_the_move
    if field in _FIXES:
        return _FIXES[field]
    if tool == "move_piece":
        return NextAction(
            on_the_move.tool,
            on_the_move.arguments,
            f"Drop {field!r}: move_piece takes only from, to, promotion and note. "
            + on_the_move.instruction,
        )
    return NextAction(
        "get_board",
        {},
        "Fix the arguments as the error says (send only the tool's declared fields), then"
        " call again.",
    )
