"""The refusal of a chess tool call whose arguments failed the inputSchema.

The body is a `Rejection` (code ``INVALID_ARGUMENTS``) whose next action fits the first
offending argument: ``timeout_ms`` and ``wait_for_human`` say what they take; an unknown
field says to drop it; a move's fields are fixed from legalMoves. With the table as it
stands (`tools.refuse_arguments` reads it), statusCode, agentMayMove and legalMoves are the
table's, as on any refusal, so the agent on move can retry from this reply alone; without
it (the table could not be read) statusCode is ``INVALID_ARGUMENTS``, agentMayMove false
and the next action re-reads the board. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.chess.position import position
from agora.toolsets.chess.render import next_action, status_code
from agora.toolsets.chess.replies import PROTOCOL_VERSION, NextAction, Rejection

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.mcp.validation import ValidationIssue
    from agora.toolsets.chess.replies import Seat, StatusCode
    from agora.toolsets.chess.table import Snapshot

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


def issue_rejection(
    issues: Sequence[ValidationIssue], table: tuple[Snapshot, Seat] | None = None
) -> dict[str, Any]:
    """`argument_rejection` for the validator's issues: the next action fits the first one."""
    first = str(issues[0].path[0]) if issues and issues[0].path else ""
    return argument_rejection([issue.describe() for issue in issues], first, table)


def argument_rejection(
    problems: list[str], field: str | None = None, table: tuple[Snapshot, Seat] | None = None
) -> dict[str, Any]:
    """The error body for arguments that failed the inputSchema.

    Args:
        problems: What the validator found, one line each.
        field: The first offending argument, when known: the next action says how to fix it
            (a move's fields from legalMoves); None keeps the move's wording.
        table: The table as the caller's seat sees it, when it could be read.

    Returns:
        A `Rejection` as builtins, code ``INVALID_ARGUMENTS``.
    """
    status: StatusCode
    if table is None:
        status = "INVALID_ARGUMENTS"
        may_move = False
        moves: dict[str, str] = {}
        fix = _argument_fix(field, next_action("INVALID_ARGUMENTS"))
    else:
        snap, seat = table
        status = status_code(snap)
        may_move = seat == "agent" and snap.phase == "agent_turn"
        moves = position(snap.fen).legal_by_square if may_move else {}
        fix = _argument_fix(field, next_action(status, seat=seat))
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


def _argument_fix(field: str | None, on_the_move: NextAction) -> NextAction:
    """How to fix ``field``; ``on_the_move`` is what a move's field (or none known) gets."""
    if field is None or field in _MOVE_FIELDS:
        return on_the_move
    if field in _FIXES:
        return _FIXES[field]
    return NextAction(
        "get_board",
        {},
        "Fix the arguments as the error says (send only the tool's declared fields), then"
        " call again.",
    )
