"""The four chess tools: each maps one MCP call to one command on the endpoint's table.

The table comes from the endpoint (``/mcp/chess/<table>``, ``default`` otherwise), never
from arguments, and so does the agent token (``?token=`` on the endpoint URL): a call that
carries it acts for the seated agent, any other call watches (but a URL that carries one
to ``/mcp``, which reads none, is refused, saying where the token counts, and so is one
that carries another table's agent token, naming that table). These handlers
only build agent commands (`Look`, `AgentMove`): no tool can reach a human action. They
must not hold game logic; rules live in the entity and replies in
`agora.toolsets.chess.render` (refusals in `agora.toolsets.chess.refusals`).
"""

from __future__ import annotations

import secrets
import weakref
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.errors import StoreError, ToolError
from agora.toolsets.base import IGNORED_QUERY
from agora.toolsets.chess import refusals, render, sql
from agora.toolsets.chess.arguments import issue_rejection
from agora.toolsets.chess.commands import AgentMove, Look
from agora.toolsets.chess.table import KIND
from agora.toolsets.chess.terms import ChessError
from agora.toolsets.chess.waiting import WaitCondition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.mcp.validation import ValidationIssue
    from agora.toolsets.base import Handler, ToolCall
    from agora.toolsets.chess.replies import Seat
    from agora.toolsets.chess.snapshot import Snapshot

WAIT_MIN_MS: Final = 1000
WAIT_MAX_MS: Final = 55000


def _table(call: ToolCall) -> str:
    return call.endpoint.get("table", "default")


def _agent_token(call: ToolCall) -> str | None:
    """The agent token of the caller's endpoint URL, or None: a watcher."""
    return call.endpoint.get("token") or None


#: An opaque id per connection (MCP session), for the table to remember what each was shown.
_SESSIONS: Final[weakref.WeakKeyDictionary[object, str]] = weakref.WeakKeyDictionary()


def _session(call: ToolCall) -> str | None:
    """The caller's connection as an id (the same for every call of one session), or None."""
    connection = call.connection
    if connection is None:
        return None
    try:
        found = _SESSIONS.get(connection)
        if found is None:
            found = _SESSIONS[connection] = secrets.token_hex(8)
    except TypeError:  # no weak reference to it: no record, so no move is refused for it
        return None
    return found


def _look(call: ToolCall) -> Look:
    return Look(_agent_token(call), _session(call))


def _seat(call: ToolCall) -> Seat:
    # A wrong token never gets this far: the table refuses it.
    return "agent" if _agent_token(call) is not None else "watcher"


def _body(reply: msgspec.Struct) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(reply)
    return body


async def _refused(call: ToolCall, err: ChessError) -> ToolError:
    """The tool error for a refused command: its `refusals.rejection` as the body, or, for
    a URL that carries another table's current agent token, where that token seats."""
    if err.code == "AGENT_TOKEN_INVALID":
        other = await _token_table(call)
        if other is not None:
            return ToolError(_body(refusals.token_of_another_table(_table(call), other)))
    return ToolError(_body(refusals.rejection(err)))


async def _token_table(call: ToolCall) -> str | None:
    """The other table whose current agent token the caller's URL carries, or None (a wrong
    or replaced token, or the store cannot be read: the plain refusal says enough)."""
    token = _agent_token(call)
    if token is None:
        return None
    try:
        name = await call.runtime.read(lambda conn: sql.agent_token_table(conn, token))
    except StoreError:
        return None
    return name if name != _table(call) else None


def _token_ignored(call: ToolCall) -> bool:
    """Whether the caller's URL carried ``?token=`` to an endpoint that ignores it (``/mcp``)."""
    return "token" in call.endpoint.get(IGNORED_QUERY, "").split(",")


async def _run(call: ToolCall, command: Look | AgentMove) -> Snapshot:
    if _token_ignored(call):
        raise ToolError(_body(refusals.token_ignored()))
    try:
        snap: Snapshot = await call.runtime.call(KIND, _table(call), command)
    except ChessError as err:
        raise await _refused(call, err) from None
    return snap


async def join_game(call: ToolCall) -> dict[str, Any]:
    """Announce the agent; return the collaboration contract and the board."""
    snap = await _run(call, _look(call))
    return _body(render.join_reply(snap, _seat(call)))


async def get_board(call: ToolCall) -> dict[str, Any]:
    """Return the board with its history, pieces and evaluation guide."""
    snap = await _run(call, _look(call))
    return _body(render.board_reply(snap, _seat(call)))


async def move_piece(call: ToolCall) -> dict[str, Any]:
    """Play the agent's move; refusals become tool errors with the next action."""
    args = call.args
    command = AgentMove(
        agent_token=_agent_token(call),
        from_square=args.get("from", ""),
        to_square=args.get("to", ""),
        promotion=args.get("promotion"),
        note=args.get("note"),
        session=_session(call),
    )
    snap = await _run(call, command)
    return _body(render.move_reply(snap))


async def wait_for_turn(call: ToolCall) -> dict[str, Any]:
    """Long-poll until the agent has something to act on, the timeout passes, or shutdown."""
    timeout_ms = min(max(int(call.args.get("timeout_ms", WAIT_MAX_MS)), WAIT_MIN_MS), WAIT_MAX_MS)
    seat = _seat(call)
    condition = WaitCondition(
        wait_for_human=bool(call.args.get("wait_for_human", False)),
        watching=seat == "watcher",
        patient="timeout_ms" in call.args,
    )
    look = _look(call)
    if _token_ignored(call):
        raise ToolError(_body(refusals.token_ignored()))
    try:
        snap: Snapshot = await call.runtime.poll(
            KIND, _table(call), look, ready=condition, timeout=timeout_ms / 1000
        )
    except ChessError as err:
        raise await _refused(call, err) from None
    # Shutdown answers a parked poll at once with its latest snapshot: the reply says so
    # (unless that snapshot is ready), so the agent waits for the restart before calling again.
    closing = call.runtime.closing
    return _body(render.wait_reply(snap, condition, seat, shutting_down=closing))


async def refuse_arguments(call: ToolCall, issues: Sequence[ValidationIssue]) -> dict[str, Any]:
    """The refusal of arguments that failed the inputSchema, with the table as it stands
    (its turn, agentMayMove and legal moves, as on any other refusal); without it when the
    table cannot be read (say a wrong token: the next call is told that)."""
    if _token_ignored(call):
        return _body(refusals.token_ignored())
    try:
        snap: Snapshot = await call.runtime.call(KIND, _table(call), _look(call))
    except ChessError:
        return issue_rejection(issues, tool=call.tool, args=call.args)
    return issue_rejection(issues, (snap, _seat(call)), call.tool, call.args)


HANDLERS: Final[dict[str, Handler]] = {
    "join_game": join_game,
    "get_board": get_board,
    "move_piece": move_piece,
    "wait_for_turn": wait_for_turn,
}
