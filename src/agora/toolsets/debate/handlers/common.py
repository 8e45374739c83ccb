"""What every debate handler shares: the caller, running a command, session owners.

Handlers do the shape checks the schema cannot express (timestamps, JSON, csv items) before
anything that consults ownership, then send one command to the topic's actor. A
`DebateError` from anywhere becomes a `ToolError` with its body.
"""

from __future__ import annotations

import os
import random
import time
from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.replies import redacted, sessions_named, tool_error
from agora.toolsets.debate.rules import DebateError
from agora.toolsets.debate.topic import KIND

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall


def caller(call: ToolCall) -> Caller:
    """The debate view of the call's principal."""
    principal = call.principal
    # Principals are few and immutable (from the config) and every call asks. Each connection
    # has its own principal object: the view is found by the object's identity (the entry
    # keeps the object alive, so its id names no other), and only a connection's first call
    # compares it with the one last seen under its name (an equal principal shares its
    # view). The comparison on every call was 1% of the main thread under the debate load.
    known = _BY_OBJECT.get(id(principal))
    if known is not None and known[0] is principal:
        return known[1]
    named = _BY_NAME.get(principal.name)
    if named is not None and named[0] == principal:
        view = named[1]
    else:
        view = Caller.of(principal)
        if len(_BY_NAME) >= 1024:
            _BY_NAME.clear()
        _BY_NAME[principal.name] = (principal, view)
    if len(_BY_OBJECT) >= 4096:
        _BY_OBJECT.clear()
    _BY_OBJECT[id(principal)] = (principal, view)
    return view


_BY_OBJECT: dict[int, tuple[Principal, Caller]] = {}
_BY_NAME: dict[str, tuple[Principal, Caller]] = {}


def new_msg_id() -> str:
    """A fresh time-ordered (version 7) UUID for a message: 48 bits of Unix milliseconds,
    then 74 random bits. Messages are appended in time order, so their ids land at the
    right edge of the id indexes (the messages' and delivery markers' primary keys)
    instead of on a random page each: about a fifth less written per commit."""
    ms = time.time_ns() // 1_000_000
    # Not os.urandom: a message id is no secret (its readers see it; access is checked
    # apart), and the syscall would hand the GIL to the writer thread on every post.
    h = f"{_IDS.getrandbits(80):020x}"
    return (
        f"{ms >> 16:08x}-{ms & 0xFFFF:04x}-7{h[:3]}-{'89ab'[int(h[3], 16) & 3]}{h[4:7]}-{h[8:20]}"
    )


_IDS = random.Random(os.urandom(32))


def new_id() -> str:
    """A fresh lowercase random (version 4) UUID (topics, sessions, worker sessions)."""
    h = os.urandom(16).hex()  # what uuid.uuid4() draws, formatted in a third of its time
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def opt(call: ToolCall, name: str) -> Any:
    """An optional argument; an empty string counts as absent."""
    value = call.args.get(name)
    return None if value == "" else value


async def run(call: ToolCall, topic_id: str, command: Any) -> Any:
    """Run ``command`` on the topic's actor.

    Raises:
        ToolError: the command was rejected.
    """
    try:
        return await call.runtime.call(KIND, topic_id, command)
    except DebateError as err:
        raise tool_error(err) from None


async def owners(call: ToolCall, *session_ids: str) -> dict[str, str]:
    """The owner of each named session that exists (sessions never change owner)."""
    ids = sorted({s for s in session_ids if s})
    return await call.runtime.read(lambda conn: sql.session_owners(conn, ids))


def own_sessions_only(
    conn: ReadConn, who: Caller, messages: list[dict[str, Any]], mine: str | None = None
) -> list[dict[str, Any]]:
    """``messages`` as ``who`` may see them: the session ids it does not own (its own, or
    its worker sessions') shown as null, as debate_list_bindings shows them; a star caller
    sees them all. ``mine``: a session the call already proved the caller's."""
    if who.star:
        return messages
    named = sessions_named(messages)
    named.discard(mine or "")
    if not named:
        return messages
    principals = sql.session_principals(conn, sorted(named))
    return redacted(messages, {s for s in named if principals.get(s) != who.name})


def checked(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, with a `DebateError` turned into a `ToolError`.

    Raises:
        ToolError: ``fn`` rejected its input.
    """
    try:
        return fn(*args)
    except DebateError as err:
        raise tool_error(err) from None
