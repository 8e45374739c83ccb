"""The refusal of a chess tool call whose arguments failed the inputSchema.

Before any table is read: the body is a `Rejection` (code and statusCode
``INVALID_ARGUMENTS``) whose next action fits the first offending argument. A move's fields
are fixed from legalMoves (`render.next_action`); ``timeout_ms`` and ``wait_for_human`` say
what they take; an unknown field says to drop it. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.chess.render import next_action
from agora.toolsets.chess.replies import PROTOCOL_VERSION, NextAction, Rejection

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.mcp.validation import ValidationIssue

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


def issue_rejection(issues: Sequence[ValidationIssue]) -> dict[str, Any]:
    """`argument_rejection` for the validator's issues: the next action fits the first one.

    A move's fields are fixed from legalMoves; ``timeout_ms`` and ``wait_for_human`` say what
    they take; an unknown field says to drop it.
    """
    first = str(issues[0].path[0]) if issues and issues[0].path else ""
    return argument_rejection([issue.describe() for issue in issues], first)


def argument_rejection(problems: list[str], field: str | None = None) -> dict[str, Any]:
    """The error body for arguments that failed the inputSchema (before any table is read).

    Args:
        problems: What the validator found, one line each.
        field: The first offending argument, when known: the next action says how to fix it
            (a move's fields from legalMoves); None keeps the move's wording.

    Returns:
        A `Rejection` as builtins: code and statusCode ``INVALID_ARGUMENTS``, a
        ``get_board`` next action.
    """
    body = Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code="INVALID_ARGUMENTS",
        error="; ".join(problems),
        status_code="INVALID_ARGUMENTS",
        agent_may_move=False,
        next_action=_argument_fix(field),
        legal_moves={},
    )
    result: dict[str, Any] = msgspec.to_builtins(body)
    return result


def _argument_fix(field: str | None) -> NextAction:
    if field is None or field in _MOVE_FIELDS:
        return next_action("INVALID_ARGUMENTS")
    if field in _FIXES:
        return _FIXES[field]
    return NextAction(
        "get_board",
        {},
        "Fix the arguments as the error says (send only the tool's declared fields), then"
        " call again.",
    )
