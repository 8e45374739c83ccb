"""The one-port front end: parse each request head with h11, check it, then route it.

A WebSocket upgrade on an ``/mcp`` path goes to the WebSocket transport with the bytes
already read; other ``/mcp`` requests go to Streamable HTTP; everything else to the
toolsets' page routes. Every request passes the same Host/Origin check, and a state-changing
page request must not look cross-site (`agora.transports.guard`). The head, and the whole
body, are bounded in bytes and in time; every write is bounded by ``send_timeout``.
Connections stay open between requests (HTTP/1.1 keep-alive, SSE streams in chunked
encoding) up to ``keep_alive_requests`` requests and ``keep_alive_seconds`` of idleness.
Nothing here knows about MCP sessions or tools.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

import h11
import trio

from agora.mcp import jsonrpc as rpc
from agora.transports import guard
from agora.transports.linger import linger_close
from agora.transports.sse import format_event
from agora.transports.websocket import serve_websocket
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
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


class _Closed(Exception):
    """End the connection without another word."""


class FrontEnd:
    """All connections of one listener: counts them against ``max_connections``."""

    def __init__(self, app: App, mcp: StreamableHTTP) -> None:
        self.app = app
        self.mcp = mcp
        self.connections = 0
        #: Requests between head and the end of their response.
        self.busy = 0
        self._quiet = trio.Event()
        self._quiet.set()

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one accepted connection until it ends."""
        self.connections += 1
        try:
            conn = HttpConnection(self, stream)
            if self.connections > self.app.config.max_connections:
                await conn.refuse(503, "server full: too many connections; retry later")
            else:
                await conn.serve()
        finally:
            self.connections -= 1

    def started(self) -> None:
        """A request is being answered."""
        if self.busy == 0:
            self._quiet = trio.Event()
        self.busy += 1

    def finished(self) -> None:
        """A request's answer is written (or abandoned)."""
        self.busy -= 1
        if self.busy == 0:
            self._quiet.set()

    async def wait_quiet(self) -> None:
        """Until no response is being written (shutdown lets them finish)."""
        await self._quiet.wait()


class HttpConnection:
    """One TCP connection: a loop of requests until close, or a WebSocket hand-off."""

    def __init__(self, front: FrontEnd, stream: trio.SocketStream) -> None:
        self.front = front
        self.app = front.app
        self.config = front.app.config
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.raw = bytearray()
        self.refused = False
        self.served = 0

    async def serve(self) -> None:
        """Serve requests until the peer closes, misbehaves, idles, or upgrades."""
        try:
            while await self._one():
                self.h11.start_next_cycle()
                self.raw = bytearray(self.h11.trailing_data[0])
        except (_Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except h11.RemoteProtocolError as exc:
            await self._send_error(exc.error_status_hint, str(exc))
        finally:
            if self.refused:  # the peer may still be sending: let it read the refusal
                await linger_close(self.stream)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await self.stream.aclose()

    async def refuse(self, status: int, message: str) -> None:
        """Read the head (briefly), answer ``status`` and close."""
        try:
            with trio.move_on_after(REFUSE_TIMEOUT):
                await self._next(trio.current_time() + REFUSE_TIMEOUT)
            await self._send_error(status, message, [("retry-after", "1")])
        except (_Closed, trio.TooSlowError, h11.RemoteProtocolError):
            pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if self.refused:
                await linger_close(self.stream)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await self.stream.aclose()

    async def _receive(self, deadline: float) -> None:
        with trio.move_on_at(deadline):
            data = await self.stream.receive_some(RECEIVE_BYTES)
            if not data:
                raise _Closed
            self.raw += data
            self.h11.receive_data(data)
            return
        raise trio.TooSlowError

    async def _next(self, deadline: float) -> h11.Event:
        while True:
            event = self.h11.next_event()
            if event is h11.PAUSED:
                raise _Closed  # pipelined bytes after an upgrade: not served
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            await self._receive(deadline)

    async def _head(self) -> h11.Event:
        if self.served and not self.h11.trailing_data[0]:
            # Kept alive: wait for the next request's first bytes, then bound its head.
            try:
                await self._receive(trio.current_time() + self.config.keep_alive_seconds)
            except trio.TooSlowError:
                raise _Closed from None
        return await self._next(trio.current_time() + HEAD_TIMEOUT)

    async def _one(self) -> bool:
        try:
            event = await self._head()
        except trio.TooSlowError:
            return False
        if isinstance(event, h11.ConnectionClosed):
            return False
        if not isinstance(event, h11.Request):
            raise _Closed
        self.served += 1
        self.front.started()
        try:
            return await self._answer(event)
        finally:
            self.front.finished()

    async def _answer(self, event: h11.Request) -> bool:
        # Bytes after the head that h11 has read but not consumed: a body, or the first
        # frames of a WebSocket client that did not wait for the 101.
        after_head = self.h11.trailing_data[0]
        head_size = len(self.raw) - len(after_head)
        if head_size > MAX_HEAD:  # h11 limits only heads that arrive in pieces
            await self._send_error(431, f"request head larger than {MAX_HEAD} bytes")
            return False
        names = [k for k, _ in event.headers]
        if b"content-length" in names and b"transfer-encoding" in names:
            # Two framings: a proxy in front may pick the other one (request smuggling).
            await self._send_error(400, "Content-Length and Transfer-Encoding together")
            return False
        target = urlsplit(event.target.decode("latin-1"))
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in event.headers}
        req = Request(
            method=event.method.decode("ascii"),
            path=target.path,
            query=dict(parse_qsl(target.query)),
            headers=headers,
        )
        if not guard.origin_allowed(headers, self.config.allowed_hosts):
            await self._send_error(403, "Forbidden: Host or Origin is not allowed")
            return False
        principal = self.app.authenticate(headers.get("authorization"))
        if principal is None:
            unknown = rpc.error(None, rpc.INVALID_REQUEST, "Unauthorized: unknown bearer token")
            await self._send_error(401, unknown, [("www-authenticate", 'Bearer realm="agora"')])
            return False
        req.principal = principal
        endpoint = self.app.endpoint(req.path)
        if endpoint is not None and headers.get("upgrade", "").lower() == "websocket":
            if req.method != "GET":
                await self._send_error(405, "WebSocket upgrade needs GET")
                return False
            head = bytes(self.raw[:head_size])
            await serve_websocket(self.app, self.stream, head, after_head, endpoint, principal)
            return False
        limit = rpc.MAX_MESSAGE_BYTES if endpoint is not None else MAX_PAGE_BODY
        declared = headers.get("content-length", "0")
        if declared.isdigit() and int(declared) > limit:
            await self._send_error(413, f"request body larger than {limit} bytes")
            return False
        if self.h11.client_is_waiting_for_100_continue:
            await self._write(self.h11.send(h11.InformationalResponse(status_code=100, headers=[])))
        body = await self._body(limit)
        if body is None:
            return False
        req.body = body
        reply = await self._route(req, endpoint)
        keep = self.served < self.config.keep_alive_requests
        if isinstance(reply, EventStream):
            await self._stream(reply, keep)
        else:
            await self._send(reply, keep)
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    async def _body(self, limit: int) -> bytes | None:
        """The whole body, or None once refused (413 or 408 sent)."""
        chunks = bytearray()
        deadline = trio.current_time() + BODY_TIMEOUT
        while True:
            try:
                event = await self._next(deadline)
            except trio.TooSlowError:
                await self._send_error(408, f"request body not received within {BODY_TIMEOUT} s")
                return None
            if isinstance(event, h11.EndOfMessage):
                return bytes(chunks)
            if isinstance(event, h11.Data):
                chunks += event.data
                if len(chunks) > limit:
                    await self._send_error(413, f"request body larger than {limit} bytes")
                    return None
            elif isinstance(event, h11.ConnectionClosed):
                raise _Closed

    async def _route(self, req: Request, endpoint: Endpoint | None) -> Response | EventStream:
        if endpoint is not None:
            return await self.front.mcp.handle(req, endpoint)
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
            resp.headers.append(("www-authenticate", 'Bearer realm="agora"'))
            return resp
        return None

    async def _write(self, data: bytes | None) -> None:
        """Send bytes; a peer that leaves them unread for ``send_timeout`` is dropped."""
        if not data:
            return
        with trio.move_on_after(self.config.send_timeout):
            await self.stream.send_all(data)
            return
        raise _Closed

    async def _send(self, resp: Response, keep: bool = False) -> None:
        headers = [
            ("content-type", resp.content_type),
            ("content-length", str(len(resp.body))),
            *resp.headers,
        ]
        if not keep or (resp.status >= 400 and resp.status != 404):
            headers.append(_CLOSE)
            # Refused: the peer may still be sending; closing lingers so it reads this.
            self.refused = resp.status >= 400
        send = self.h11.send
        data = send(h11.Response(status_code=resp.status, headers=headers)) or b""
        if resp.body:
            data += send(h11.Data(data=resp.body)) or b""
        await self._write(data + (send(h11.EndOfMessage()) or b""))

    async def _send_error(
        self,
        status: int,
        message: str | dict[str, object],
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        """Answer ``status`` (and close) if no response has started; never raises."""
        if self.h11.our_state is not h11.IDLE and self.h11.our_state is not h11.SEND_RESPONSE:
            return
        resp = Response.error(status, message) if isinstance(message, str) else None
        resp = resp or Response.json(message, status)
        resp.headers.extend(extra or [])
        with contextlib.suppress(
            h11.LocalProtocolError, _Closed, trio.BrokenResourceError, trio.ClosedResourceError
        ):
            await self._send(resp)

    async def _stream(self, reply: EventStream, keep: bool) -> None:
        headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
        if not keep:
            headers.append(_CLOSE)
        headers += reply.headers
        # No Content-Length: h11 frames the stream in chunks (HTTP/1.1), so the connection
        # can carry the next request once the stream ends.
        await self._write(self.h11.send(h11.Response(status_code=200, headers=headers)))
        try:
            async for item in reply.events:
                data = item if isinstance(item, bytes) else format_event(item[1], event=item[0])
                await self._write(self.h11.send(h11.Data(data=data)))
        finally:
            # Finish the source now (a stalled or vanished reader), not when it is collected.
            aclose = getattr(reply.events, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await aclose()
        await self._write(self.h11.send(h11.EndOfMessage()))
