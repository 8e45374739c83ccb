"""The one-port front end: parse each request head with h11, then route it.

A WebSocket upgrade on an ``/mcp`` path goes to the WebSocket transport with the bytes
already read; other ``/mcp`` requests go to Streamable HTTP; everything else to the
toolsets' page routes. Heads and bodies are size- and time-bounded; keep-alive is honoured.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

import h11
import trio

from agora.mcp import jsonrpc as rpc
from agora.transports.linger import linger_close
from agora.transports.sse import format_event
from agora.transports.streamable import origin_allowed
from agora.transports.websocket import serve_websocket
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
    from agora.server.app import App
    from agora.transports.streamable import StreamableHTTP

log = logging.getLogger(__name__)

HEAD_TIMEOUT = 30.0
BODY_TIMEOUT = 30.0
MAX_HEAD = 16384
MAX_PAGE_BODY = 1 << 20


class _Closed(Exception):
    pass


class HttpConnection:
    """One TCP connection: a loop of requests until close, or a WebSocket hand-off."""

    def __init__(self, app: App, mcp: StreamableHTTP, stream: trio.SocketStream) -> None:
        self.app = app
        self.mcp = mcp
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.raw = bytearray()
        self.refused = False

    async def serve(self) -> None:
        """Serve requests until the peer closes, misbehaves, or upgrades."""
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

    async def _next(self, timeout: float) -> h11.Event:  # noqa: ASYNC109 - per-phase limit
        with trio.fail_after(timeout):
            while True:
                event = self.h11.next_event()
                if event is h11.PAUSED:
                    raise _Closed  # pipelined bytes after an upgrade: not served
                if event is not h11.NEED_DATA:
                    return event  # type: ignore[return-value]
                data = await self.stream.receive_some(65536)
                self.raw += data
                self.h11.receive_data(data)
                if not data and self.h11.their_state is not h11.DONE:
                    raise _Closed

    async def _one(self) -> bool:
        try:
            event = await self._next(HEAD_TIMEOUT)
        except trio.TooSlowError:
            return False
        if isinstance(event, h11.ConnectionClosed):
            return False
        if not isinstance(event, h11.Request):
            raise _Closed
        # Bytes after the head that h11 has read but not consumed: a body, or the first
        # frames of a WebSocket client that did not wait for the 101.
        after_head = self.h11.trailing_data[0]
        head_size = len(self.raw) - len(after_head)
        if head_size > MAX_HEAD:  # h11 limits only heads that arrive in pieces
            await self._send_error(431, f"request head larger than {MAX_HEAD} bytes")
            return False
        target = urlsplit(event.target.decode("latin-1"))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
        req = Request(
            method=event.method.decode("ascii"),
            path=target.path,
            query=dict(parse_qsl(target.query)),
            headers=headers,
        )
        endpoint = self.app.endpoint(req.path)
        if endpoint is not None:
            principal = self.app.authenticate(headers.get("authorization"))
            if principal is None:
                await self._drain_and_send(
                    Response.json(
                        rpc.error(None, rpc.INVALID_REQUEST, "Unauthorized: unknown bearer token"),
                        401,
                    ),
                    [("www-authenticate", 'Bearer realm="agora"')],
                )
                return False
            req.principal = principal
            if headers.get("upgrade", "").lower() == "websocket":
                if req.method != "GET":
                    await self._send(Response.error(405, "WebSocket upgrade needs GET"))
                    return False
                if not origin_allowed(headers, self.app.config.allowed_hosts):
                    await self._send(
                        Response.error(403, "Forbidden: Host or Origin is not allowed")
                    )
                    return False
                head = bytes(self.raw[:head_size])
                await serve_websocket(self.app, self.stream, head, after_head, endpoint, principal)
                return False
        limit = rpc.MAX_MESSAGE_BYTES if endpoint is not None else MAX_PAGE_BODY
        body = await self._body(limit)
        if body is None:
            await self._send(Response.error(413, f"request body larger than {limit} bytes"))
            return False
        req.body = body
        reply = await self._route(req, endpoint)
        if isinstance(reply, EventStream):
            await self._stream(reply)
            return False
        await self._send(reply)
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    async def _body(self, limit: int) -> bytes | None:
        chunks = bytearray()
        while True:
            try:
                event = await self._next(BODY_TIMEOUT)
            except trio.TooSlowError:
                raise _Closed from None
            if isinstance(event, h11.EndOfMessage):
                return bytes(chunks)
            if isinstance(event, h11.Data):
                chunks += event.data
                if len(chunks) > limit:
                    return None
            elif isinstance(event, h11.ConnectionClosed):
                raise _Closed

    async def _route(self, req: Request, endpoint: object) -> Response | EventStream:
        if endpoint is not None:
            return await self.mcp.handle(req, endpoint)  # type: ignore[arg-type]
        for route in self.app.routes:
            params = route.match(req.method, req.path)
            if params is not None:
                req.params = params
                req.principal = self.app.authenticate(req.headers.get("authorization"))
                try:
                    return await route.handler(req, self.app.runtime)
                except Exception:
                    log.exception("page %s %s failed", req.method, req.path)
                    return Response.error(500, "internal error")
        if req.path == "/healthz":
            return Response.json({"ok": True, "in_flight": self.app.in_flight})
        return Response.error(404, f"no such page: {req.path}")

    async def _send(self, resp: Response, extra: list[tuple[str, str]] | None = None) -> None:
        headers = [
            ("content-type", resp.content_type),
            ("content-length", str(len(resp.body))),
            *resp.headers,
            *(extra or []),
        ]
        if resp.status >= 400 and resp.status != 404:
            headers.append(("connection", "close"))
            self.refused = True
        data = self.h11.send(h11.Response(status_code=resp.status, headers=headers))
        data = (
            (data or b"") + (self.h11.send(h11.Data(data=resp.body)) or b"") if resp.body else data
        )
        data = (data or b"") + (self.h11.send(h11.EndOfMessage()) or b"")
        await self.stream.send_all(data)

    async def _drain_and_send(self, resp: Response, extra: list[tuple[str, str]]) -> None:
        with trio.move_on_after(1):
            await self._body(rpc.MAX_MESSAGE_BYTES)
        await self._send(resp, extra)

    async def _send_error(self, status: int, message: str) -> None:
        if self.h11.our_state is not h11.IDLE and self.h11.our_state is not h11.SEND_RESPONSE:
            return
        with contextlib.suppress(
            h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError
        ):
            await self._send(Response.error(status, message))

    async def _stream(self, reply: EventStream) -> None:
        headers = [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("connection", "close"),
            *reply.headers,
        ]
        await self.stream.send_all(self.h11.send(h11.Response(status_code=200, headers=headers)))
        async for item in reply.events:
            data = item if isinstance(item, bytes) else format_event(item[1], event=item[0])
            await self.stream.send_all(self.h11.send(h11.Data(data=data)) or b"")
        await self.stream.send_all(self.h11.send(h11.EndOfMessage()))
