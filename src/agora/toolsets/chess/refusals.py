"""A refused chess call's tool error body, in the shape every tool's outputSchema declares.

`rejection` turns a `ChessError` (a move out of turn, an illegal move, a missing or replaced
agent token, an unknown table) into a `Rejection` with the statusCode and nextAction of the
table as it stands; `token_ignored` and `token_of_another_table` refuse a token sent where it
seats nobody; `internal_failure` does the same for a call that failed inside the server.
Pure: no I/O, no trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.chess.actions import next_action
from agora.toolsets.chess.position import position
from agora.toolsets.chess.render import missed_text, status_code
from agora.toolsets.chess.replies import PROTOCOL_VERSION, NextAction, Rejection, StatusCode
from agora.toolsets.chess.sessions import OTHER_CONNECTION
from agora.toolsets.chess.snapshot import Snapshot

if TYPE_CHECKING:
    from agora.errors import Failure
    from agora.toolsets.chess.terms import ChessError

_TOKEN_CODES: Final = ("AGENT_TOKEN_REQUIRED", "AGENT_TOKEN_INVALID")


def rejection(err: ChessError) -> Rejection:
    """The tool error body for a refused call: the code, what to do next, legal moves."""
    snap = err.snapshot if isinstance(err.snapshot, Snapshot) else None
    status: StatusCode
    if err.code == "AGENT_TOKEN_INVALID":  # not "connect with a token": ask for the new one
        status = "AGENT_TOKEN_INVALID"
    elif err.code in _TOKEN_CODES:
        status = "AGENT_TOKEN_REQUIRED"
    elif snap is None:
        status = "TABLE_NOT_FOUND"
    else:
        status = status_code(snap)
    seated = err.code not in _TOKEN_CODES
    moves: dict[str, str] = {}
    if err.code == "ILLEGAL_MOVE" and snap is not None:
        moves = position(snap.fen).legal_by_square
    action = next_action(status)
    error = err.message
    if err.code == "NOT_YOUR_TURN" and snap is not None:
        error += _last_move_text(snap)
        if snap.phase == "agent_turn":  # a move chosen for a position the caller last saw
            moves = position(snap.fen).legal_by_square
            action = _CHOOSE_AGAIN
    return Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code=err.code,
        error=_told(snap, error),
        status_code=status,
        agent_may_move=seated and snap is not None and snap.phase == "agent_turn",
        next_action=action,
        legal_moves=moves,
    )


#: After a move chosen for a position that is gone: choose again for the one on the board,
#: which the refusal shows (and counts as the caller's look).
_CHOOSE_AGAIN: Final = NextAction(
    "move_piece",
    {"from": "<square>", "to": "<square>", "note": "<why>"},
    "Your move was not played: it was chosen for another position. Choose again for the FEN"
    " this refusal gives, from its legalMoves (this refusal counts as your look, so that move"
    " is played); get_board shows the whole board.",
)


def _last_move_text(snap: Snapshot) -> str:
    """The board's last move in words (the `Rejection` has no lastMove field), and who may
    have played it when it was the agent's."""
    if not snap.moves:
        return f" Game {snap.game_number}: no move yet; FEN {snap.fen}."
    last = snap.moves[-1]
    text = f" Game {snap.game_number}, last move {last.san} ({last.uci}) by the {last.by}"
    if last.by == "agent":
        text += f" ({OTHER_CONNECTION}, if not you)"
    return f"{text}; FEN {snap.fen}."


def _told(snap: Snapshot | None, error: str) -> str:
    """``error``, after what the agent missed of its last game if the snapshot says."""
    if snap is None or snap.missed is None:
        return error
    return f"{missed_text(snap)} {error[:1].upper()}{error[1:]}"


#: A wrong or replaced token is refused on every tool, watching ones included.


def token_ignored() -> Rejection:
    """The refusal of every tool on an endpoint that ignores ``?token=`` (``/mcp``, all
    toolsets): the agent sent its token, which would only seat it at ``/mcp/chess/<table>``,
    and must not be left watching table ``default`` as if it had none."""
    where = "/mcp/chess/<table>?token=<agent token>"
    return Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code="AGENT_TOKEN_REQUIRED",
        error="This endpoint ignores ?token=: it serves every toolset and no chess table, so"
        f" your agent token seats you nowhere here. Connect to {where} (the human's page shows"
        " the exact URL, with the table's name).",
        status_code="AGENT_TOKEN_REQUIRED",
        agent_may_move=False,
        next_action=NextAction(
            None,
            {},
            f"Reconnect to {where}: the chess endpoint of the table your token belongs to;"
            " only there does the token give you the agent's seat.",
        ),
        legal_moves={},
    )


def token_of_another_table(table: str, other: str) -> Rejection:
    """The refusal of a call to table ``table``'s endpoint whose URL carries table
    ``other``'s current agent token (``/mcp/chess?token=...`` is table ``default``'s): the
    token is good, the endpoint is not, so the holder is sent to its table's endpoint rather
    than told to ask for a new token."""
    where = f"/mcp/chess/{other}?token=<this same agent token>"
    bare = " (the one /mcp/chess without a table's name serves)" if table == "default" else ""
    return Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code="AGENT_TOKEN_INVALID",
        error=f"This endpoint serves table {table!r}{bare}, but your agent token belongs to"
        f" another table's seat: table {other!r}. Connect to {where}.",
        status_code="AGENT_TOKEN_INVALID",
        agent_may_move=False,
        next_action=NextAction(
            None,
            {},
            f"Reconnect to {where}: your token is the current agent token of table {other!r}"
            " and seats you there; every tool refuses it on this endpoint.",
        ),
        legal_moves={},
    )


def internal_failure(failure: Failure) -> dict[str, Any]:
    """The refusal body for a call that failed inside the server (nothing was changed).

    Args:
        failure: What is safe to say, with the correlation id of the server's log line.

    Returns:
        A `Rejection` as builtins: code ``INTERNAL_ERROR``, statusCode ``SERVER_ERROR`` and
        a ``get_board`` next action, so it validates against every tool's outputSchema.
    """
    retry = "retry" if failure.retryable else "report it"
    if failure.outcome_unknown:
        retry = "read the board before deciding to retry"
    body = Rejection(
        ok=False,
        protocol_version=PROTOCOL_VERSION,
        code="INTERNAL_ERROR",
        error=f"{failure.message} ({retry}; correlation id {failure.correlation_id})",
        status_code="SERVER_ERROR",
        agent_may_move=False,
        next_action=next_action("SERVER_ERROR"),
        legal_moves={},
    )
    result: dict[str, Any] = msgspec.to_builtins(body)
    return result
