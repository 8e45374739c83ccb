"""Workflow runs and Memory belong to the principal that made them, whatever session it names.

The contract's ``context.session_id`` is chosen by the client: correlation, not authority. For
a named principal the router scopes that id by the principal's name before any rule sees it,
so another principal naming the same session id reaches other runs, replays and receipts, and
a foreign run answers exactly as a missing one. Callers without a token keep the session id as
their capability (a single-user server on loopback), as the chamber's anonymous handles do.
Memory is one entity per principal (`memory_key`): every row it writes carries its owner
(the principal's name, ``''`` for a caller without a token), and every read, digest and
delete names it, so another principal's Memory answers as an empty one.
This module must not hold any other rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.toolsets.base import Handler, ToolCall

#: Separates the principal's name from the client's session id; no printable id contains it.
SEPARATOR: Final = "\x1f"


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


def as_sent(session: str) -> str:
    """The session id a client sent, from the one `owned` scoped (or left as it was)."""
    return session.rpartition(SEPARATOR)[2]


#: The Memory entity of the caller without a token (a local, single-user server).
ANONYMOUS_MEMORY: Final = "global"
#: Prefixes a named principal's Memory entity key (its name follows).
_PRINCIPAL_MEMORY: Final = "principal" + SEPARATOR


def memory_key(principal: Principal) -> str:
    """The key of ``principal``'s Memory entity."""
    return memory_key_of("" if principal.anonymous else principal.name)


def memory_key_of(owner: str) -> str:
    """The Memory entity key of the rows owned by ``owner`` (``''``: anonymous/local)."""
    return _PRINCIPAL_MEMORY + owner if owner else ANONYMOUS_MEMORY


def memory_owner(key: str) -> str:
    """The owner column of the Memory entity ``key``'s rows."""
    return key.removeprefix(_PRINCIPAL_MEMORY) if key != ANONYMOUS_MEMORY else ""
