"""Workflow runs belong to the principal that made them, whatever session id it names.

The contract's ``context.session_id`` is chosen by the client: correlation, not authority. For
a named principal the router scopes that id by the principal's name before any rule sees it,
so another principal naming the same session id reaches other runs, replays and receipts, and
a foreign run answers exactly as a missing one. Callers without a token keep the session id as
their capability (a single-user server on loopback), as the chamber's anonymous handles do.
This module must not hold any other rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.toolsets.base import Handler, ToolCall

#: Separates the principal's name from the client's session id; no printable id contains it.
SEPARATOR = "\x1f"


def owned(handler: Handler) -> Handler:
    """``handler`` with the caller's ``context.session_id`` scoped by its principal."""

    async def scoped(call: ToolCall) -> dict[str, Any]:
        context = call.args.get("context")
        if not call.principal.anonymous and isinstance(context, dict):
            session = context.get("session_id")
            if isinstance(session, str):
                scoped_context = {
                    **context,
                    "session_id": call.principal.name + SEPARATOR + session,
                }
                call.args = {**call.args, "context": scoped_context}
        result: dict[str, Any] = await handler(call)
        return result

    return scoped
