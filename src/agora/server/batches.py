"""JSON-RPC batches on a stdio or WebSocket session negotiated at MCP 2025-03-26.

Served as Streamable HTTP serves them (`agora.transports.batch`), from the same parse
(`agora.mcp.batch`): the messages are handled in order and the calls run as any others; the
answers of the batch's requests, after the errors of its invalid elements, are held back and
go out as one JSON array with the last of them, while anything else a call sends (progress, a
log, a request to the client) goes out at once. A call cancelled before its answer gets none
(the array goes without it); a batch with nothing to answer gets no reply. A batch refused
whole, or one naming a request id in flight, gets one error without an id and none of it runs.

A connection's ``emit`` is wrapped (`BatchReplies`) when it is first sent a batch, so that a
session that never is costs nothing more. Nothing here knows about a transport.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from agora.mcp import batch
from agora.mcp import jsonrpc as rpc

if TYPE_CHECKING:
    import trio

    from agora.server.connection import Connection, Emit

__all__ = ["BatchReplies", "feed_batch"]

#: The error of a batch that names a request id still in flight.
IN_FLIGHT = "a request id of the batch is in flight"


class _Held:
    """One batch's answers so far, and how many of its requests are still owed one."""

    __slots__ = ("answers", "owed")

    def __init__(self, answers: list[bytes], owed: int) -> None:
        self.answers = answers
        self.owed = owed


class BatchReplies:
    """The ``emit`` of a connection that was sent a batch: it holds back the answers of the
    requests of open batches, and passes everything else on to the transport's ``emit``."""

    __slots__ = ("_emit", "_nursery", "_open")

    def __init__(self, emit: Emit, nursery: trio.Nursery) -> None:
        self._emit = emit
        self._nursery = nursery
        self._open: dict[rpc.RequestId, _Held] = {}

    def open(self, requests: list[rpc.RequestId], errors: list[bytes]) -> None:
        """Hold the answers of ``requests``; ``errors`` lead the batch's array."""
        held = _Held(errors, len(requests))
        for rid in requests:
            self._open[rid] = held

    async def __call__(self, message: dict[str, Any], related: rpc.RequestId | None) -> None:
        held = self._open.get(related) if related is not None else None
        if held is None or related is None or "method" in message or message.get("id") != related:
            await self._emit(message, related)
            return
        held.answers.append(rpc.encode(message))  # (before it is counted: this may raise)
        del self._open[related]
        held.owed -= 1
        if not held.owed:
            await self._emit(batch.joined(held.answers), None)

    def unanswered(self, rid: rpc.RequestId) -> None:
        """Call ``rid`` ended without an answer (it was cancelled, which JSON-RPC answers
        with nothing): its batch's array goes without it."""
        held = self._open.pop(rid, None)
        if held is None:
            return
        held.owed -= 1
        if not held.owed and held.answers:
            with contextlib.suppress(RuntimeError):  # the nursery closed: nobody to tell
                self._nursery.start_soon(self._emit, batch.joined(held.answers), None)


async def feed_batch(conn: Connection, data: bytes | str) -> None:
    """Serve batch ``data`` in ``conn``'s session, which was negotiated at 2025-03-26."""
    parsed = batch.parse(data)
    if isinstance(parsed, dict):
        await conn._emit(parsed, None)
        return
    requests = parsed.requests
    session = conn.session
    if any(rid in session.running or rid in (session.listens or ()) for rid in requests):
        await conn._emit(rpc.error(None, rpc.INVALID_REQUEST, IN_FLIGHT), None)
        return
    errors = [rpc.encode(error) for error in parsed.errors]
    if requests:
        replies = conn._emit
        if not isinstance(replies, BatchReplies):
            replies = conn._emit = BatchReplies(conn._emit, conn._nursery)
            conn._unanswered = replies.unanswered
        replies.open(requests, errors)
    elif errors:
        await conn._emit(batch.joined(errors), None)
    for msg in parsed.messages:
        await conn.feed(msg)
