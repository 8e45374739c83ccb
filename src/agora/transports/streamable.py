"""MCP Streamable HTTP: POST (JSON or SSE replies), GET (server stream), DELETE, sessions.

A handshake session lives under an ``Mcp-Session-Id``; its calls run in the server's
nursery and write into per-request `EventBuffer`s, so a reply stream can be resumed with
``Last-Event-ID``. A 2026-07-28 request (``params._meta`` envelope) is served statelessly:
one POST, one reply. Host and Origin are checked against DNS rebinding before anything.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import trio

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc
from agora.mcp.session import HANDSHAKE_VERSIONS, META_VERSION, MODERN_VERSIONS
from agora.server.connection import Connection
from agora.transports.sse import EventBuffer, parse_event_id, read_stream
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.identity import Principal
    from agora.server.app import App, Endpoint

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
#: Sessions unused this long are closed.
SESSION_IDLE_SECONDS = 3600.0
PRIME_RETRY_MS = 1000
#: Finished streams a session keeps for clients that resume late; older ones are dropped.
KEEP_FINISHED_STREAMS = 32
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


class HttpSession:
    """One Mcp-Session-Id: protocol state, calls in flight, open streams."""

    def __init__(
        self, app: App, endpoint: Endpoint, principal: Principal, nursery: trio.Nursery
    ) -> None:
        self.id = secrets.token_hex(16)
        self.principal = principal
        self.path_params = endpoint.params
        self.session = app.new_session(endpoint)
        self.conn = Connection(
            app,
            self.session,
            self.emit,
            nursery,
            principal=principal,
            endpoint=endpoint.params,
            hangup=self.hangup,
        )
        self.replies: dict[rpc.RequestId, EventBuffer] = {}
        self.streams: dict[str, EventBuffer] = {}
        self.standalone: EventBuffer | None = None
        self.last_used = trio.current_time()

    def open_buffer(self, rid: rpc.RequestId | None) -> EventBuffer:
        """A new resumable stream; for ``rid``'s reply when given."""
        finished = [sid for sid, old in self.streams.items() if old.closed]
        for sid in finished[: max(len(finished) - KEEP_FINISHED_STREAMS, 0)]:
            del self.streams[sid]
        buf = EventBuffer()
        self.streams[buf.stream_id] = buf
        if rid is not None:
            self.replies[rid] = buf
        return buf

    async def emit(self, message: dict[str, Any], related: rpc.RequestId | None) -> None:
        """Route a message to its request's stream, else to the GET stream, else drop it."""
        buf = self.replies.get(related) if related is not None else None
        buf = buf or self.standalone
        if buf is None:
            return
        data = rpc.encode(message).decode()
        buf.append(data)
        if "method" not in message and message.get("id") == related and related is not None:
            buf.final = data
            buf.close()
            self.replies.pop(related, None)
        await trio.lowlevel.checkpoint()

    def hangup(self, rid: rpc.RequestId) -> None:
        """End the HTTP response carrying ``rid``'s stream; the client may resume it."""
        buf = self.replies.get(rid)
        if buf is not None:
            buf.hangup()

    def close(self) -> None:
        """End every stream and cancel every call."""
        self.conn.cancel_all()
        for buf in self.streams.values():
            buf.close()


def origin_allowed(headers: Mapping[str, str], allowed: list[str]) -> bool:
    """DNS-rebinding check: Host (and Origin, if sent) must name this machine or be allowed."""
    names = LOOPBACK | set(allowed)
    host = headers.get("host", "")
    host_name = urlsplit(f"//{host}").hostname or ""
    if host_name not in names and f"[{host_name}]" not in names:
        return False
    origin = headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    origin_name = urlsplit(origin).hostname or ""
    return origin_name in names or f"[{origin_name}]" in names


class StreamableHTTP:
    """All HTTP sessions of one server."""

    def __init__(self, app: App, nursery: trio.Nursery) -> None:
        self.app = app
        self.nursery = nursery
        self.sessions: dict[str, HttpSession] = {}

    async def handle(self, req: Request, endpoint: Endpoint) -> Response | EventStream:
        """Serve one request on an ``/mcp`` path."""
        if not origin_allowed(req.headers, self.app.config.allowed_hosts):
            return Response.error(403, "Forbidden: Host or Origin is not allowed")
        principal = req.principal
        assert principal is not None
        if req.method == "POST":
            return await self._post(req, endpoint, principal)
        session = self._session(req)
        if isinstance(session, Response):
            return session
        if req.method == "GET":
            return self._get(req, session)
        if req.method == "DELETE":
            session.close()
            del self.sessions[session.id]
            return Response(200)
        return Response(405, b"", headers=[("allow", "GET, POST, DELETE")])

    def _session(self, req: Request) -> HttpSession | Response:
        sid = req.headers.get(SESSION_HEADER)
        if not sid:
            return _rpc_error(400, "Bad Request: Mcp-Session-Id header is required")
        session = self.sessions.get(sid)
        if session is None:
            return _rpc_error(404, "Session not found: initialize a new session")
        if req.principal != session.principal:
            return _rpc_error(403, "this session belongs to another principal")
        version = req.headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            return _rpc_error(400, f"Bad Request: unsupported MCP-Protocol-Version {version}")
        session.last_used = trio.current_time()
        return session

    async def _post(
        self, req: Request, endpoint: Endpoint, principal: Principal
    ) -> Response | EventStream:
        try:
            msg = rpc.decode(req.body)
        except ProtocolError as exc:
            return Response.json(rpc.error(rpc.error_id(exc), exc.code, exc.message), 400)
        if isinstance(msg, rpc.Request) and _is_modern(msg):
            return await self._stateless(req, msg, endpoint, principal)
        if isinstance(msg, rpc.Request) and msg.method == "initialize":
            if req.headers.get(SESSION_HEADER):
                return _rpc_error(400, "Bad Request: initialize must not carry a session id")
            session = HttpSession(self.app, endpoint, principal, self.nursery)
            self.sessions[session.id] = session
            reply = await self._exchange(req, session, msg)
            if (
                isinstance(reply, Response)
                and reply.status == 200
                and session.session.protocol_version
            ):
                reply.headers.append((SESSION_HEADER, session.id))
            else:
                del self.sessions[session.id]
            return reply
        found = self._session(req)
        if isinstance(found, Response):
            return found
        if not isinstance(msg, rpc.Request):
            await found.conn.feed(msg)
            return Response(202)
        return await self._exchange(req, found, msg)

    async def _exchange(
        self, req: Request, session: HttpSession, msg: rpc.Request
    ) -> Response | EventStream:
        if msg.id in session.replies:
            return Response.json(
                rpc.error(msg.id, rpc.INVALID_REQUEST, "duplicate request id"), 400
            )
        buf = session.open_buffer(msg.id)
        await session.conn.feed(msg)
        if buf.closed and buf.final is not None:  # answered at once: plain JSON
            session.streams.pop(buf.stream_id, None)
            return Response(200, buf.final.encode(), "application/json")
        if "text/event-stream" in req.headers.get("accept", ""):
            prime = PRIME_RETRY_MS if session.session.protocol_version == "2025-11-25" else None
            return EventStream(read_stream(buf, 0, prime_retry_ms=prime))
        while not buf.closed:
            await buf.signal().wait()
        session.streams.pop(buf.stream_id, None)
        return Response(200, (buf.final or "").encode(), "application/json")

    async def _stateless(
        self, req: Request, msg: rpc.Request, endpoint: Endpoint, principal: Principal
    ) -> Response | EventStream:
        meta = msg.params.get("_meta", {})
        version = req.headers.get(VERSION_HEADER)
        if version != meta.get(META_VERSION) or req.headers.get("mcp-method") != msg.method:
            body = rpc.error(
                msg.id,
                rpc.HEADER_MISMATCH,
                "MCP-Protocol-Version / Mcp-Method headers must match the request",
            )
            return Response.json(body, 400)
        session = HttpSession(self.app, endpoint, principal, self.nursery)
        reply = await self._exchange(req, session, msg)
        if isinstance(reply, Response) and version not in MODERN_VERSIONS:
            reply.status = 400
        return reply

    def _get(self, req: Request, session: HttpSession) -> Response | EventStream:
        if "text/event-stream" not in req.headers.get("accept", ""):
            return Response.error(406, "Not Acceptable: GET needs Accept: text/event-stream")
        last = req.headers.get("last-event-id")
        if last:
            parsed = parse_event_id(last)
            buf = session.streams.get(parsed[0]) if parsed else None
            if parsed is None or buf is None:
                return Response.error(404, "unknown Last-Event-ID: that stream is gone")
            return EventStream(read_stream(buf, parsed[1], prime_retry_ms=None))
        if session.standalone is not None:
            # One GET stream per session: a new GET replaces the old one, which may be a
            # connection that died silently. Undelivered events stay resumable by id.
            session.standalone.close()
        session.standalone = session.open_buffer(None)
        return EventStream(read_stream(session.standalone, 0, prime_retry_ms=None))

    async def sweep(self) -> None:
        """Close sessions idle past SESSION_IDLE_SECONDS; runs until cancelled."""
        while True:
            await trio.sleep(60)
            cutoff = trio.current_time() - SESSION_IDLE_SECONDS
            for sid, session in list(self.sessions.items()):
                if session.last_used < cutoff and not session.conn.in_flight:
                    session.close()
                    del self.sessions[sid]

    def close_all(self) -> None:
        """End every session (shutdown)."""
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()


def _is_modern(msg: rpc.Request) -> bool:
    meta = msg.params.get("_meta")
    return isinstance(meta, dict) and META_VERSION in meta


def _rpc_error(status: int, message: str) -> Response:
    return Response.json(rpc.error(None, rpc.INVALID_REQUEST, message), status)
