"""One front-end connection: read each request (`agora.transports.http1`), check it, route it.

A WebSocket upgrade on an ``/mcp`` path goes to the WebSocket transport with the bytes
already read; other ``/mcp`` requests go to Streamable HTTP; everything else to the
toolsets' page routes. Every request passes the same Host/Origin check, and a state-changing
page request must not look cross-site (`agora.transports.guard`). The head, and the whole
body, are bounded in bytes and in time (one `Sweeper` per listener ends the connections
waiting past their deadline); every write is bounded by ``send_timeout``.
Connections stay open between requests (HTTP/1.1 keep-alive, SSE streams in chunked
encoding) up to ``keep_alive_requests`` requests and ``keep_alive_seconds`` of idleness.

Bytes move with ``os.read``/``os.write`` on the socket's descriptor (non-blocking, as Trio
made it), as the WebSocket transport does: a response that fits the kernel's buffer costs
one system call and no trip through the scheduler (the writing half of a connection is
`agora.transports.respond`). What all connections share, and the connection cap, is
`agora.transports.front`. Nothing here knows about MCP sessions.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
from typing import TYPE_CHECKING

import trio

from agora.logsafe import shown_url
from agora.mcp import jsonrpc as rpc
from agora.server import start
from agora.server.failed import page_failure
from agora.server.health import health, readiness
from agora.transports import http1
from agora.transports.http1 import BodyReader, Head, HttpError, body_refusal
from agora.transports.linger import linger_close
from agora.transports.overflow import PROBES, REFUSE_TIMEOUT, is_probe
from agora.transports.respond import Closed, Responder, refusal_response
from agora.transports.routing import (
    PAGE_CAUSES,
    gate,
    methods_of,
    not_allowed,
    page_refusal,
    request_of,
)
from agora.transports.websocket import accept_websocket, upgrade_attempt, upgrade_refusal
from agora.web.http import EventStream, Request, Response, wants_html
from agora.web.prefix import unprefixed

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.identity import Principal
    from agora.server.app import Endpoint
    from agora.transports.front import FrontEnd
    from agora.transports.http_session import HttpSession
    from agora.web.http import Route

log = logging.getLogger(__name__)

#: Seconds the head of a request may take to arrive once its first byte has.
HEAD_TIMEOUT = 30.0
#: Seconds the whole body of a request may take, however it is trickled.
BODY_TIMEOUT = 30.0
MAX_HEAD = 16384
MAX_PAGE_BODY = 1 << 20
RECEIVE_BYTES = 65536
CUT_BY_SHUTDOWN = (
    "the server shut down before this request was answered; a change it asked for may or may"
    " not have been saved: reload the page once the server is back"
)


class HttpConnection(Responder):
    """One TCP connection: a loop of requests until close, or a WebSocket hand-off."""

    def __init__(self, front: FrontEnd, stream: trio.SocketStream) -> None:
        super().__init__(stream, front.app.config.send_timeout)
        self.front = front
        self.app = front.app
        self.config = front.app.config
        self.base = front.base
        self.buf = bytearray()
        self.served = 0
        #: Bounds each wait for the peer's bytes: the front end's `Sweeper` cancels it once
        #: `deadline` has passed (a refused connection sets its own deadline). Once it
        #: fires, the connection ends; a body that was late gets its 408 first.
        self.timer = trio.CancelScope()
        #: When the current wait for the peer's bytes must end (inf: not waiting).
        self.deadline = math.inf
        self.reading_body = False
        #: The request being read is for an MCP endpoint: a refusal of its body (too large,
        #: late, malformed) is then a JSON-RPC error too, which an MCP client reports.
        self.mcp_request = False
        #: The WebSocket the connection became (what `serve_websocket` needs but the
        #: stream): the stream stays open for it.
        self.upgrade: tuple[bytes, Endpoint, Principal] | None = None
        #: The session of this connection's 2026-07-28 requests (`streamable.Link.modern`):
        #: their calls share one ``call.connection``, which ends with the connection.
        self.modern: HttpSession | None = None
        #: A refusal ended before its head came, for a newer one (`agora.transports.overflow`).
        self.evicted = False

    async def serve(self) -> None:
        """Serve requests until the peer closes, misbehaves, idles, or upgrades (see
        `upgrade`: the stream is then left open)."""
        try:
            async with trio.open_nursery() as self.nursery:
                await self._serve()
        finally:
            if self.modern is not None:
                self.modern.close()
                self.modern = None
            if self.upgrade is None:
                if self.refused:
                    await linger_close(self.stream)
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await self.stream.aclose()

    async def _serve(self) -> None:
        try:
            with self.timer:
                while await self._one():
                    pass
            if self.timer.cancelled_caught and self.reading_body:
                await self._refuse_body(408, f"request body not received within {BODY_TIMEOUT} s")
            elif self.timer.cancelled_caught and self.buf:  # a head begun, not ended
                await self._send_error(408, f"request head not received within {HEAD_TIMEOUT} s")
        except (Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except HttpError as exc:
            await self._refuse_body(exc.status, exc.message)

    async def _refuse_body(self, status: int, message: str) -> None:
        """Answer ``status``: as a JSON-RPC error when the request was for an MCP endpoint
        (the client then fails the call with ``message``, not with a bare HTTP status)."""
        if self.mcp_request:
            await self._send_error(status, rpc.error(None, rpc.INVALID_REQUEST, message))
        else:
            await self._send_error(status, message)

    async def refuse(self, status: int, message: str) -> None:
        """Read the head (briefly), answer ``status`` and close.

        A liveness or readiness probe (`PROBES`) gets its real answer instead, then the
        close: a node that is merely full must not look dead to the balancer or the
        supervisor that restarts it.
        """
        head = None
        with self.timer, contextlib.suppress(Closed, HttpError, trio.BrokenResourceError):
            self.timer.deadline = trio.current_time() + REFUSE_TIMEOUT
            head = await self._head(self.timer.deadline)
        if self.evicted:
            return  # (`Overflow` writes its short 503)
        if head is not None and is_probe(head):
            await self._probe(head)
        else:
            await self._send_error(status, message, [("retry-after", "1")])
        # Only unread bytes can turn the close into a reset: a silent peer is not waited for.
        if self.refused and (self.buf or (head is not None and head.has_body)):
            await linger_close(self.stream)
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await self.stream.aclose()

    async def _probe(self, head: Head) -> None:
        """Answer a probe as any request is answered (Host check and all), as this
        connection's only request: its response says ``connection: close``."""
        self.served = self.config.keep_alive_requests
        self.front.started()
        try:
            await self._answer(head)
        except (Closed, HttpError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.front.finished()

    async def _receive(self, deadline: float) -> None:
        """Append what the peer sends next to ``buf``.

        Nothing by ``deadline`` cancels `timer` (see `expire`), which ends the connection.

        Raises:
            Closed: the peer closed its side (or had, and its socket is closed).
            trio.BrokenResourceError: the connection was reset.
        """
        if self.gone:  # the hang-up closed the socket (`_close_now`): its number may be reused
            raise Closed
        self.deadline = deadline
        if deadline < self.front.sweeper.wake_at:
            self.front.sweeper.due(deadline)
        try:
            await trio.lowlevel.wait_readable(self.fd)
        finally:
            self.deadline = math.inf
        try:
            data = os.read(self.fd, RECEIVE_BYTES)
        except BlockingIOError:
            return
        except OSError as exc:
            raise trio.BrokenResourceError(f"read failed: {exc}") from exc
        if not data:
            raise Closed
        self.buf += data

    def watch_hangup(self, hung_up: Callable[[], None]) -> None:
        """Call ``hung_up`` if the client closes the connection before the current request's
        response is over (`streamable.Link.watch_hangup`; a listen's lasts a while).

        The socket joins the front end's `HangupWatch` (one task for every connection) until
        the response is over; where that cannot watch, a task of this connection's nursery
        does, from when the request's task waits (an answer that never waited has cancelled
        its scope by then; bytes of a next request, pipelined, end it unread).
        """
        if not self.buf and self.nursery is not None:  # else the next request is here already
            self.watching = trio.CancelScope()
            watched = self.hung_up = lambda: self._close_now(hung_up)
            if not self.front.hangups.add(self.fd, watched):
                self.hung_up = None
                self.nursery.start_soon(self._watch, self.watching, hung_up)

    async def _watch(self, scope: trio.CancelScope, hung_up: Callable[[], None]) -> None:
        if scope.cancel_called:
            return
        with scope:
            await trio.lowlevel.wait_readable(self.fd)
            try:
                peeked = await self.stream.socket.recv(1, socket.MSG_PEEK)
            except OSError:  # reset: gone as surely as closed
                peeked = b""
            if not peeked:
                self._close_now(hung_up)

    def _close_now(self, hung_up: Callable[[], None]) -> None:
        """The client closed the connection while a response was due: tell ``hung_up``, close
        the socket now and leave the front end's count (``/healthz`` `connections`), not once
        the request's task ends, which runs a call that may go on (a resumable stream's)."""
        hung_up()
        self.gone = True
        self.front.left()
        self.stream.socket.close()

    def expire(self) -> None:
        """The wait for the peer's bytes is past its deadline (called by the `Sweeper`)."""
        self.timer.cancel()

    async def _head(self, deadline: float) -> Head:
        while (head := http1.parse_head(self.buf, MAX_HEAD)) is None:
            await self._receive(deadline)
        return head

    async def _one(self) -> bool:
        self.mcp_request = self.head_only = False
        if self.served and not self.buf:
            # Kept alive: wait for the next request's first bytes, then bound its head.
            await self._receive(trio.current_time() + self.config.keep_alive_seconds)
        self.responding = False  # (the last response is whole: a late head gets its 408)
        head = await self._head(trio.current_time() + HEAD_TIMEOUT)
        self.served += 1
        self.front.started()
        try:
            return await self._answer(head)
        finally:
            self.front.finished()
            if self.watching is not None:  # the response is over: so is the watch
                self.watching.cancel()
                self.watching = None
                if self.hung_up is not None:
                    self.front.hangups.discard(self.fd, self.hung_up)
                    self.hung_up = None

    async def _answer(self, head: Head) -> bool:
        self.head_only = head.method == "HEAD"
        headers = head.headers
        req = request_of(head)
        req.path = unprefixed(req.path, self.base)
        config = self.config
        probe = req.path in PROBES
        anonymous, named = config.allow_anonymous, bool(config.principals)
        refused = gate(
            head, req, config.allowed_hosts, self.app.authenticate, probe, anonymous, named
        )
        if refused is not None:
            self.front.refusals.refused(refused.cause, self.remote, req.path, refused.detail)
            await self._send_error(refused.status, refused.body, refused.headers)
            return False
        principal = req.principal
        assert principal is not None  # (`gate` set it)
        endpoint = (
            self.app.endpoint(req.path, req.query) if req.query else self.front.endpoint(req.path)
        )
        if endpoint is not None and upgrade_attempt(head.version, req.method, headers):
            problem = upgrade_refusal(req.method, headers, head.has_body)
            if problem is not None:
                await self._send_error(*problem)
            elif await accept_websocket(self.stream, head.raw):
                self.upgrade = (bytes(self.buf), endpoint, principal)
            else:
                self.refused = True  # the refusal went out: linger so that it is read
            return False
        limit = rpc.MAX_MESSAGE_BYTES if endpoint is not None else MAX_PAGE_BODY
        self.mcp_request = endpoint is not None
        refusal = body_refusal(head, limit)
        if refusal is not None:
            await self._refuse_body(*refusal)
            return False
        if head.expects_continue:
            await self._write(http1.CONTINUE)
        req.body = await self._body(head, limit)
        keep = head.keep_alive and self.served < self.config.keep_alive_requests
        self.chunked = keep and head.version == "1.1"
        reply = await self._route(req, endpoint)
        if req.negotiated and isinstance(reply, Response):
            reply.headers.append(("vary", "Accept"))
        if reply is self.early:  # already being sent (`stream_early`)
            self.early = None
            await self.early_done.wait()
            return self.early_keep
        if isinstance(reply, EventStream):
            return await self._stream(reply, self.chunked)
        await self._send(reply, keep)
        return keep and not self.refused

    async def _body(self, head: Head, limit: int) -> bytes:
        """The whole body, read within BODY_TIMEOUT (else `timer` ends the connection)."""
        length = head.length
        if not head.chunked and len(self.buf) >= length:  # all here (limit checked before)
            body = bytes(self.buf[:length])
            del self.buf[:length]
            return body
        reader = BodyReader(head, limit)
        deadline = trio.current_time() + BODY_TIMEOUT
        reader.feed(self.buf)
        self.reading_body = True
        while not reader.done:
            await self._receive(deadline)
            reader.feed(self.buf)
        self.reading_body = False
        return bytes(reader.body)

    async def _route(self, req: Request, endpoint: Endpoint | None) -> Response | EventStream:
        if endpoint is not None:
            return await self.front.mcp.handle(req, endpoint, self)
        for route in self.app.routes:
            params = route.match(req.method, req.path)
            if params is not None:
                # A path a route names literally ("/play/tables") is that route's, by its
                # methods: a GET of it is a 405, not the parameter route's 404 (no such table).
                if params and (named := methods_of(self.app.routes, req.path, literal=True)):
                    return not_allowed(req, named)
                refusal = page_refusal(req, route.needs_principal, bool(self.config.principals))
                if refusal is not None:
                    self.front.refusals.refused(
                        PAGE_CAUSES.get(refusal.status), self.remote, req.path
                    )
                    return refusal
                req.params = params
                return await self._page(route, req)
        routes = self.app.routes
        allowed = methods_of(routes, req.path, literal=True) or methods_of(routes, req.path)
        if allowed:
            return not_allowed(req, allowed)
        if req.path == start.PATH:
            if req.method not in ("GET", "HEAD"):  # an MCP client given the server's address
                return not_allowed(req, ["GET"], start.MCP_HINT)
            return start.start_page(self.app.toolsets.values(), wants_html(req), self.base)
        if req.path in PROBES:
            if req.method not in ("GET", "HEAD"):
                return not_allowed(req, ["GET"])
            if req.path == "/healthz":
                return health(
                    self.app.runtime,
                    in_flight=self.app.in_flight,
                    # served ones, within max_connections; those past it apart
                    connections=self.front.connections - self.front.overflow.refusing,
                    refusing=self.front.overflow.refusing,
                    sessions=len(self.front.mcp.sessions),
                    unknown_sessions=self.front.mcp.unknown.count,
                )
            return await readiness(self.app.runtime, draining=self.app.draining)
        return refusal_response(req, 404, f"no such page: {shown_url(req.path)}")

    async def _page(self, route: Route, req: Request) -> Response | EventStream:
        """Run a page's handler, counted in flight as a call is: shutdown gives it the grace
        a call gets, and one it cancels still answers (503: it may or may not be saved)."""
        self.app.call_started()
        try:
            return await route.handler(req, self.app.runtime)
        except trio.Cancelled:
            if self.app.draining:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await self._send_error(503, refusal_response(req, 503, CUT_BY_SHUTDOWN))
            raise
        except Exception as exc:  # the store's safe words, or "internal error"
            return page_failure(req, exc)
        finally:
            self.app.call_finished()
