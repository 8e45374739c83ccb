"""One Streamable HTTP session's state: its protocol session, calls, and resumable streams.

An `HttpSession` is what an ``Mcp-Session-Id`` names (a handshake session, across requests),
or the session of the 2026-07-28 requests of one TCP connection (`agora.transports.streamable`
builds and drops those). Its calls write into per-request `EventBuffer`s, so a reply stream can
be resumed with ``Last-Event-ID``; a POST that waits only for its answer gets it as plain JSON.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import TYPE_CHECKING, Any

import trio

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection
from agora.transports.sse import EventBuffer

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from agora.identity import Principal
    from agora.server.app import App, Endpoint

__all__ = ["DELETED", "KEEP_FINISHED_STREAMS", "SHUTDOWN", "HttpSession"]

#: Finished streams a session keeps for clients that resume late; older ones are dropped.
KEEP_FINISHED_STREAMS = 32
DELETED = "the session was deleted before this call finished"
SHUTDOWN = (
    "the server shut down before this call answered; a change it made may or may not have"
    " been saved: check before repeating it"
)


class HttpSession:
    """One Mcp-Session-Id: protocol state, calls in flight, open streams."""

    def __init__(
        self, app: App, endpoint: Endpoint, principal: Principal, nursery: trio.Nursery
    ) -> None:
        self.id = secrets.token_hex(16)
        self.principal = principal
        self.path_params = endpoint.params
        #: The endpoint's catalog: the session answers on its own endpoint only (`serves`).
        self.catalog = endpoint.catalog
        self.session = app.new_session(endpoint)
        self.conn = Connection(
            app,
            self.session,
            self.emit,
            nursery,
            principal=principal,
            endpoint=endpoint.params,
            hangup=self.hangup,
            unanswered=self.unanswered,
        )
        self.replies: dict[rpc.RequestId, EventBuffer] = {}
        self.streams: dict[str, EventBuffer] = {}
        self.standalone: EventBuffer | None = None
        self.last_used = trio.current_time()
        #: Told when the session is used (a request, a stream's end), to update
        #: ``last_used`` and its place among its principal's sessions (`SessionTable.touch`).
        self.used: Callable[[HttpSession], None] | None = None
        #: HTTP responses reading one of this session's streams now.
        self.readers = 0
        #: Calls running in their POST's own task, each with what turns its POST's answer
        #: into an SSE stream when the call sends something before its result.
        self.early: dict[rpc.RequestId, Callable[[], None]] = {}
        #: Serves 2026-07-28 requests (`agora.transports.streamable` sets it): a JSON answer's
        #: HTTP status then follows its error code, and SSE events carry no ids.
        self.modern = False

    def serves(self, endpoint: Endpoint) -> bool:
        """Whether a request on ``endpoint`` (its path's catalog, table and credential) is
        for this session: another endpoint's request answers as for a missing session."""
        return endpoint.catalog is self.catalog and endpoint.params == self.path_params

    def open_buffer(self, rid: rpc.RequestId | None) -> EventBuffer:
        """A new resumable stream; for ``rid``'s reply when given."""
        if len(self.streams) > KEEP_FINISHED_STREAMS:  # else there is nothing to drop
            finished = [sid for sid, old in self.streams.items() if old.closed]
            for sid in finished[: max(len(finished) - KEEP_FINISHED_STREAMS, 0)]:
                del self.streams[sid]
        buf = EventBuffer(resumable=not self.modern)
        self.streams[buf.stream_id] = buf
        if rid is not None:
            self.replies[rid] = buf
        return buf

    def open_batch(self, rids: list[rpc.RequestId], errors: list[dict[str, Any]]) -> EventBuffer:
        """A new resumable stream for the answers of a batch (`agora.transports.batch`):
        ``errors`` first, then those of its requests ``rids``; it ends with the last."""
        buf = self.open_buffer(None)
        buf.answers = []
        buf.expected = len(rids) + len(errors)
        for error in errors:
            _answer(buf, rpc.encode(error).decode(), error["error"]["code"])
        for rid in rids:
            self.replies[rid] = buf
        return buf

    async def emit(self, message: dict[str, Any], related: rpc.RequestId | None) -> None:
        """Route a message to its request's stream, else to the GET stream, else drop it."""
        own = self.replies.get(related) if related is not None else None
        buf = own or self.standalone
        if buf is None:
            return
        data = rpc.encode(message).decode()
        final = "method" not in message and message.get("id") == related
        if final and own is not None and not own.events and related in self.early:
            # The call's own POST waits for this answer alone: plain JSON, never an event.
            own.final = data
            if "error" in message:
                own.code = message["error"].get("code")
            own.close()
            self.replies.pop(related, None)
            await trio.lowlevel.checkpoint_if_cancelled()
            return
        if final and related is not None:
            self.replies.pop(related, None)
            _answer(buf, data, message["error"].get("code") if "error" in message else None)
        else:
            buf.append(data)
            if self.early and related in self.early:
                self.early.pop(related)()
        # Nothing here blocks; yield only to a cancellation (a full trip through the
        # scheduler would cost a call's reply as much as its parsing).
        await trio.lowlevel.checkpoint_if_cancelled()

    def hangup(self, rid: rpc.RequestId) -> None:
        """End the HTTP response carrying ``rid``'s stream; the client may resume it."""
        buf = self.replies.get(rid)
        if buf is not None:
            buf.hangup()
            if rid in self.early:
                self.early.pop(rid)()

    def unanswered(self, rid: rpc.RequestId) -> None:
        """End the response of ``rid``, which ended without an answer: the client cancelled
        it (``notifications/cancelled``, or a 2026-07-28 client's hang-up), and the receiver
        of a cancelled request should not answer it (basic/utilities/cancellation).

        Its stream ends without a response, after what the call sent before (a request of its
        own it withdrew, say). A POST still waiting to answer with plain JSON gets that SSE
        stream too: a POST with a request must be answered with JSON or a stream, and only
        the stream can end with no JSON-RPC response in it. A batch's answers go without it.
        """
        buf = self.replies.pop(rid, None)
        if buf is None:  # answered already, or not a request of this session's streams
            return
        if buf.answers is None:
            buf.close()
            return
        buf.expected -= 1
        if len(buf.answers) >= buf.expected:
            buf.final = buf.answers[-1] if buf.answers else None
            buf.close()

    def idle_since(self, cutoff: float) -> bool:
        """Unused since ``cutoff``: no request, no call in flight, no stream being read."""
        return self.last_used < cutoff and not self.conn.in_flight and not self.readers

    async def reading(self, events: AsyncGenerator[bytes]) -> AsyncGenerator[bytes]:
        """``events``, counted as a reader of this session while they are read."""
        self.readers += 1
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        finally:
            self.readers -= 1
            self.last_used = trio.current_time()
            if self.used is not None:
                self.used(self)

    def close(self, reason: str = DELETED) -> None:
        """Cancel every call, answer each one still open with an error, end every stream."""
        self.conn.cancel_all()
        for rid, buf in list(self.replies.items()):
            data = rpc.encode(rpc.error(rid, rpc.INTERNAL_ERROR, reason)).decode()
            _answer(buf, data, rpc.INTERNAL_ERROR)
        self.replies.clear()
        for buf in self.streams.values():
            buf.close()
        if not self.conn.in_flight:
            # Nothing will emit again: cut the cycle (the connection holds this session's
            # methods) so that an evicted or expired session is freed now, not frozen.
            self.conn.detach()


def _answer(buf: EventBuffer, data: str, code: int | None) -> None:
    """Write a request's answer to its stream, which ends with it (a batch's: with its last)."""
    buf.append(data)
    if buf.answers is not None:
        buf.answers.append(data)
        if len(buf.answers) < buf.expected:
            return
    buf.final = data
    buf.code = code
    buf.close()
