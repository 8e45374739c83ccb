"""The one-port front end: read each request (`agora.transports.http1`), check it, route it.

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
one system call and no trip through the scheduler. Nothing here knows about MCP sessions.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

import trio

from agora.mcp import jsonrpc as rpc
from agora.transports import guard, http1
from agora.transports.deadlines import Sweeper
from agora.transports.http1 import BodyReader, Head, HttpError
from agora.transports.keepalive import Keepalive
from agora.transports.linger import linger_close
from agora.transports.sse import format_event
from agora.transports.websocket import accept_websocket, serve_websocket
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.app import App, Endpoint
    from agora.transports.streamable import StreamableHTTP

log = logging.getLogger(__name__)

#: Seconds the head of a request may take to arrive once its first byte has.
HEAD_TIMEOUT = 30.0
#: Seconds the whole body of a request may take, however it is trickled.
BODY_TIMEOUT = 30.0
#: Seconds a client over ``max_connections`` has to send its head before the 503.
REFUSE_TIMEOUT = 1.0
MAX_HEAD = 16384
MAX_PAGE_BODY = 1 << 20
RECEIVE_BYTES = 65536
_CLOSE = ("connection", "close")
_BEARER = ("www-authenticate", 'Bearer realm="agora"')


class _Closed(Exception):
    """End the connection without another word."""


class FrontEnd:
    """All connections of one listener: counts them against ``max_connections``."""

    def __init__(self, app: App, mcp: StreamableHTTP) -> None:
        self.app = app
        self.mcp = mcp
        self.connections = 0
        #: Resolved ``/mcp...`` paths (a handful in practice; bounded all the same).
        self._endpoints: dict[str, Endpoint | None] = {}
        #: Requests between head and the end of their response.
        self.busy = 0
        #: Set once `busy` drops to 0, for `wait_quiet` (made only when someone waits).
        self._quiet: trio.Event | None = None
        #: Pings every WebSocket peer from one task.
        self.keepalive = Keepalive(app.config.ping_interval, mcp.nursery)
        #: Ends the connections that wait too long for their peer, from one task.
        self.sweeper = Sweeper(mcp.nursery)

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one accepted connection until it ends."""
        self.connections += 1
        try:
            conn = HttpConnection(self, stream)
            if self.connections > self.app.config.max_connections:
                await conn.refuse(503, "server full: too many connections; retry later")
                return
            self.sweeper.add(conn)
            try:
                await conn.serve()
            finally:
                self.sweeper.discard(conn)
            upgrade = conn.upgrade
            # A WebSocket may stay parked for hours: nothing of its HTTP exchange stays with it.
            del conn
            if upgrade is not None:
                await serve_websocket(self.app, stream, *upgrade, keepalive=self.keepalive)
        finally:
            self.connections -= 1

    def endpoint(self, path: str) -> Endpoint | None:
        """The MCP endpoint at ``path`` with no query, if any (`App.endpoint`, remembered)."""
        try:
            return self._endpoints[path]
        except KeyError:
            found = self.app.endpoint(path)
            if len(self._endpoints) >= 1024:
                self._endpoints.clear()
            self._endpoints[path] = found
            return found

    def started(self) -> None:
        """A request is being answered."""
        self.busy += 1

    def finished(self) -> None:
        """A request's answer is written (or abandoned)."""
        self.busy -= 1
        if self.busy == 0 and self._quiet is not None:
            self._quiet.set()
            self._quiet = None

    async def wait_quiet(self) -> None:
        """Until no response is being written (shutdown lets them finish)."""
        if self.busy:
            if self._quiet is None:
                self._quiet = trio.Event()
            await self._quiet.wait()


class HttpConnection:
    """One TCP connection: a loop of requests until close, or a WebSocket hand-off."""

    def __init__(self, front: FrontEnd, stream: trio.SocketStream) -> None:
        self.front = front
        self.app = front.app
        self.config = front.app.config
        self.stream = stream
        self.fd = stream.socket.fileno()
        self.buf = bytearray()
        self.served = 0
        #: A response to the current request has begun: no other may be sent.
        self.responding = False
        #: The last response refused the request: close lingering, so the peer reads it.
        self.refused = False
        #: Bounds each wait for the peer's bytes: the front end's `Sweeper` cancels it once
        #: `deadline` has passed (a refused connection sets its own deadline). Once it
        #: fires, the connection ends; a body that was late gets its 408 first.
        self.timer = trio.CancelScope()
        #: When the current wait for the peer's bytes must end (inf: not waiting).
        self.deadline = math.inf
        self.reading_body = False
        #: The WebSocket the connection became (what `serve_websocket` needs but the
        #: stream): the stream stays open for it.
        self.upgrade: tuple[bytes, Endpoint, Principal] | None = None
        #: Runs an SSE response that starts while its request's task still runs the call.
        self.nursery: trio.Nursery | None = None
        #: Whether the current request may be answered in chunked encoding and kept alive.
        self.chunked = False
        #: The SSE response started early for the current request, once there is one.
        self.early: EventStream | None = None
        self.early_done = trio.Event()
        self.early_keep = False

    async def serve(self) -> None:
        """Serve requests until the peer closes, misbehaves, idles, or upgrades (see
        `upgrade`: the stream is then left open)."""
        try:
            async with trio.open_nursery() as self.nursery:
                await self._serve()
        finally:
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
                await self._send_error(408, f"request body not received within {BODY_TIMEOUT} s")
        except (_Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except HttpError as exc:
            await self._send_error(exc.status, exc.message)

    async def refuse(self, status: int, message: str) -> None:
        """Read the head (briefly), answer ``status`` and close."""
        with (
            self.timer,
            contextlib.suppress(_Closed, HttpError, trio.BrokenResourceError),
        ):
            self.timer.deadline = trio.current_time() + REFUSE_TIMEOUT
            await self._head(self.timer.deadline)
        await self._send_error(status, message, [("retry-after", "1")])
        if self.refused:
            await linger_close(self.stream)
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await self.stream.aclose()

    async def _receive(self, deadline: float) -> None:
        """Append what the peer sends next to ``buf``.

        Nothing by ``deadline`` cancels `timer` (see `expire`), which ends the connection.

        Raises:
            _Closed: the peer closed its side.
            trio.BrokenResourceError: the connection was reset.
        """
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
            raise _Closed
        self.buf += data

    def expire(self) -> None:
        """The wait for the peer's bytes is past its deadline (called by the `Sweeper`)."""
        self.timer.cancel()

    async def _head(self, deadline: float) -> Head:
        while (head := http1.parse_head(self.buf, MAX_HEAD)) is None:
            await self._receive(deadline)
        return head

    async def _one(self) -> bool:
        if self.served and not self.buf:
            # Kept alive: wait for the next request's first bytes, then bound its head.
            await self._receive(trio.current_time() + self.config.keep_alive_seconds)
        head = await self._head(trio.current_time() + HEAD_TIMEOUT)
        self.served += 1
        self.responding = False
        self.front.started()
        try:
            return await self._answer(head)
        finally:
            self.front.finished()

    def _request(self, head: Head) -> Request:
        target = head.target
        if target.startswith("/"):
            path, _, query = target.partition("?")
        else:
            parts = urlsplit(target)
            path, query = parts.path, parts.query
        return Request(
            method=head.method,
            path=path,
            query=dict(parse_qsl(query)) if query else {},
            headers=head.headers,
        )

    async def _answer(self, head: Head) -> bool:
        headers = head.headers
        req = self._request(head)
        if not guard.origin_allowed(headers, self.config.allowed_hosts):
            await self._send_error(403, "Forbidden: Host or Origin is not allowed")
            return False
        principal = self.app.authenticate(headers.get("authorization"))
        if principal is None:
            unknown = rpc.error(None, rpc.INVALID_REQUEST, "Unauthorized: unknown bearer token")
            await self._send_error(401, unknown, [_BEARER])
            return False
        req.principal = principal
        endpoint = (
            self.app.endpoint(req.path, req.query) if req.query else self.front.endpoint(req.path)
        )
        if endpoint is not None and headers.get("upgrade", "").lower() == "websocket":
            if req.method != "GET":
                await self._send_error(405, "WebSocket upgrade needs GET")
                return False
            if await accept_websocket(self.stream, head.raw):
                self.upgrade = (bytes(self.buf), endpoint, principal)
            else:
                self.refused = True  # the refusal went out: linger so that it is read
            return False
        limit = rpc.MAX_MESSAGE_BYTES if endpoint is not None else MAX_PAGE_BODY
        if head.length > limit:
            await self._send_error(413, f"request body larger than {limit} bytes")
            return False
        if head.expects_continue:
            await self._write(http1.CONTINUE)
        req.body = await self._body(head, limit)
        keep = head.keep_alive and self.served < self.config.keep_alive_requests
        self.chunked = keep and head.version == "1.1"
        reply = await self._route(req, endpoint)
        if reply is self.early:  # already being sent (`_stream_early`)
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
            return await self.front.mcp.handle(req, endpoint, self._stream_early)
        for route in self.app.routes:
            params = route.match(req.method, req.path)
            if params is not None:
                refusal = self._page_refusal(req, route.needs_principal)
                if refusal is not None:
                    return refusal
                req.params = params
                try:
                    return await route.handler(req, self.app.runtime)
                except Exception:
                    log.exception("page %s %s failed", req.method, req.path)
                    return Response.error(500, "internal error")
        if req.path == "/healthz":
            return Response.json(
                {
                    "ok": True,
                    "in_flight": self.app.in_flight,
                    "connections": self.front.connections,
                    "sessions": len(self.front.mcp.sessions),
                    "actors": len(self.app.runtime.registry),
                    "parked": self.app.runtime.registry.parked(),
                    "store": self.app.runtime.counters(),
                }
            )
        return Response.error(404, f"no such page: {req.path}")

    def _page_refusal(self, req: Request, needs_principal: bool) -> Response | None:
        reason = guard.cross_site_refusal(req.method, req.headers)
        if reason is not None:
            return Response.error(403, reason)
        assert req.principal is not None
        if needs_principal and self.config.principals and req.principal.anonymous:
            resp = Response.error(401, "Unauthorized: this action needs a bearer token")
            resp.headers.append(_BEARER)
            return resp
        return None

    async def _write(self, data: bytes) -> None:
        """Send bytes; a peer that leaves them unread for ``send_timeout`` is dropped."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                pass
            except OSError as exc:
                raise trio.BrokenResourceError(f"write failed: {exc}") from exc
            if view:  # the kernel's buffer is full: wait, but not for ever
                with trio.move_on_after(self.config.send_timeout) as slow:
                    await trio.lowlevel.wait_writable(self.fd)
                if slow.cancelled_caught:
                    raise _Closed

    async def _send(self, resp: Response, keep: bool = False) -> None:
        """Send a whole response; with ``keep`` (the request was read whole) stay open."""
        if keep and not resp.headers:  # the usual answer: its head from a template
            self.responding = True
            await self._write(
                http1.plain_head(resp.status, resp.content_type, len(resp.body)) + resp.body
            )
            return
        headers = [
            ("content-type", resp.content_type),
            ("content-length", str(len(resp.body))),
            *resp.headers,
        ]
        if not keep:
            headers.append(_CLOSE)
            self.refused = resp.status >= 400
        self.responding = True
        await self._write(http1.response_head(resp.status, headers) + resp.body)

    async def _send_error(
        self,
        status: int,
        message: str | dict[str, object],
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        """Answer ``status`` (and close) if no response has started; never raises."""
        if self.responding:
            return
        resp = Response.error(status, message) if isinstance(message, str) else None
        resp = resp or Response.json(message, status)
        resp.headers.extend(extra or [])
        with contextlib.suppress(_Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            await self._send(resp)

    def _stream_early(self, reply: EventStream) -> None:
        """Start sending ``reply`` from another task: this one is still running the call."""
        assert self.nursery is not None
        self.responding = True
        self.early = reply
        self.early_done = trio.Event()
        self.nursery.start_soon(self._send_early, reply, self.chunked)

    async def _send_early(self, reply: EventStream, chunked: bool) -> None:
        self.early_keep = False
        try:
            self.early_keep = await self._stream(reply, chunked)
        except (_Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.early_done.set()

    async def _stream(self, reply: EventStream, chunked: bool) -> bool:
        """Send an SSE response; whether the connection can carry another request."""
        headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
        headers.append(("transfer-encoding", "chunked") if chunked else _CLOSE)
        headers += reply.headers
        self.responding = True
        frame = http1.chunk if chunked else bytes
        await self._write(http1.response_head(200, headers))
        try:
            async for item in reply.events:
                data = item if isinstance(item, bytes) else format_event(item[1], event=item[0])
                await self._write(frame(data))
        finally:
            # Finish the source now (a stalled or vanished reader), not when it is collected.
            aclose = getattr(reply.events, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await aclose()
        if chunked:
            await self._write(http1.LAST_CHUNK)
        return chunked
