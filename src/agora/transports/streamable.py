"""MCP Streamable HTTP: POST (JSON or SSE replies), GET (server stream), DELETE, sessions.

A handshake session lives under an ``Mcp-Session-Id``; its calls run in the server's
nursery and write into per-request `EventBuffer`s, so a reply stream can be resumed with
``Last-Event-ID``. A POST whose call sends nothing before its result is answered with plain
JSON; it turns into an SSE stream only when the call streams (progress, log, a request to the
client) first. A 2026-07-28 request (``params._meta`` envelope, its standard headers checked by
`agora.transports.standard_headers`) carries no session id: one POST, one reply, served by the
session of its TCP connection (`Link.modern`; a notification is accepted and dropped,
`agora.transports.modern_notices`), so that its calls' ``call.connection`` is one object
across the connection's keep-alive requests (a toolset's per-connection limits bind) and never
outlives it. What a client's hang-up before its answer does to its call, at either kind of
session, is `agora.transports.hangup_policy`. Handshake sessions are capped (``max_sessions``,
and a share per principal: a new one evicts its principal's least recently used idle one,
`agora.transports.session_table`) and expire after ``session_idle_seconds`` unused. The front
end has checked Host and Origin.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import trio

from agora.errors import ProtocolError
from agora.mcp import batch
from agora.mcp import jsonrpc as rpc
from agora.mcp.session import (
    HANDSHAKE_VERSIONS,
    META_CAPABILITIES,
    META_VERSION,
    MODERN_VERSIONS,
)
from agora.transports import hangup_policy, modern_notices
from agora.transports.batch import exchange as exchange_batch
from agora.transports.episodes import UNKNOWN_SESSION, UnknownSessions
from agora.transports.guard import mcp_post_refusal
from agora.transports.http_session import SHUTDOWN, HttpSession
from agora.transports.session_table import SessionTable
from agora.transports.sse import (
    EventBuffer,
    accepts_event_stream,
    parse_event_id,
    read_stream,
)
from agora.transports.standard_headers import VERSION_HEADER, header_mismatch, sessionless_refusal
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.identity import Principal
    from agora.server.app import App, Endpoint

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
PRIME_RETRY_MS = 1000
#: The HTTP status of a 2026-07-28 JSON answer that is one of these JSON-RPC errors (-32601:
#: the method is not served, basic/transports/streamable-http; -32602, a malformed request or
#: envelope; -32020 to -32022, header mismatch, missing client capability, unsupported
#: version: basic/index). Every other answer, and every SSE stream, is 200.
MODERN_STATUS = {
    rpc.METHOD_NOT_FOUND: 404,
    rpc.PARSE_ERROR: 400,
    rpc.INVALID_REQUEST: 400,
    rpc.INVALID_PARAMS: 400,
    rpc.HEADER_MISMATCH: 400,
    rpc.MISSING_CLIENT_CAPABILITY: 400,
    rpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
}
OTHER_METHOD = (
    "Method Not Allowed: an MCP endpoint takes POST (a message), and GET (the stream) and"
    " DELETE (the end) of a handshake session; not {}"
)
NO_SESSION_METHOD = (
    "Method Not Allowed: {} needs an Mcp-Session-Id (a handshake session's);"
    " a 2026-07-28 request is a POST"
)
REPEATED_SESSION_ID = (
    "Bad Request: the Mcp-Session-Id header was given more than once; send it once, with the"
    " session's id"
)
NO_ENVELOPE = (
    f"a 2026-07-28 request needs params._meta with {META_VERSION!r} and {META_CAPABILITIES!r}"
)


class Link(Protocol):
    """What the front end offers the requests of one TCP connection (`agora.transports.http`).

    Attributes:
        modern: The session serving this connection's 2026-07-28 requests, made by the first
            one and closed by the front end when the connection ends (None until then).
    """

    modern: HttpSession | None

    def stream_early(self, reply: EventStream) -> None:
        """Send the SSE response ``reply`` while the request's task still runs its call."""

    def watch_hangup(self, hung_up: Callable[[], None]) -> None:
        """Call ``hung_up`` if the client closes the connection before the request's response
        is over (a listen's SSE stream included); the connection is then closed at once."""


class StreamableHTTP:
    """All HTTP sessions of one server."""

    def __init__(self, app: App, nursery: trio.Nursery) -> None:
        self.app = app
        self.nursery = nursery
        self.config = app.config
        self.table = SessionTable(app.config)
        #: The handshake sessions held, by id.
        self.sessions = self.table.sessions
        self.unknown = UnknownSessions(log)  # requests naming none of them
        #: Sessions of 2026-07-28 requests (one per TCP connection) while they serve one.
        self._one_shot: set[HttpSession] = set()

    async def handle(
        self, req: Request, endpoint: Endpoint, link: Link | None = None
    ) -> Response | EventStream:
        """Serve one request on an ``/mcp`` path (Host and Origin already checked).

        With ``link`` (the request's TCP connection, which can send a response while this
        request's task is busy), a POST's call runs in this task; if it streams before its
        result, its SSE stream is handed to ``link.stream_early`` at once and is also what
        this returns. Without it, each 2026-07-28 request gets a session of its own.
        """
        principal = req.principal
        assert principal is not None
        if req.method == "POST":
            return await self._post(req, endpoint, principal, link)
        if req.method not in ("GET", "DELETE"):
            # (HEAD too: a GET here opens a session's stream, nothing to describe by a head)
            refused = _rpc_error(405, OTHER_METHOD.format(req.method))
            refused.headers.append(("allow", "GET, POST, DELETE"))
            return refused
        if not req.headers.get(SESSION_HEADER):
            # Only a handshake session has a GET stream or a DELETE; a 2026-07-28 client
            # has neither (basic/transports/streamable-http, Backward Compatibility).
            refused = _rpc_error(405, NO_SESSION_METHOD.format(req.method))
            refused.headers.append(("allow", "POST"))
            return refused
        session = self._session(req, endpoint)
        if isinstance(session, Response):
            return session
        if req.method == "GET":
            return self._get(req, session)
        self.table.drop(session.id)  # a DELETE
        return Response(200)

    def _session(self, req: Request, endpoint: Endpoint) -> HttpSession | Response:
        sid = req.headers.get(SESSION_HEADER)
        if not sid:
            return _rpc_error(400, sessionless_refusal(req.headers))
        if "," in sid:  # (the head joins a repeated field's values with ", "; ids are hex)
            # Not 404, which tells a client to drop its session: this one may be alive.
            return _rpc_error(400, REPEATED_SESSION_ID)
        session = self.sessions.get(sid)
        # Another principal's session answers as a missing one, in the same bytes: a caller
        # learns nothing of the ids others hold (it was a 403, "belongs to another principal");
        # so does one of another endpoint (a path, a table, a token), which it served as its own.
        if session is None or req.principal != session.principal or not session.serves(endpoint):
            self.unknown.unknown(req.method)
            return _rpc_error(404, UNKNOWN_SESSION)
        version = req.headers.get(VERSION_HEADER)
        if version in MODERN_VERSIONS:  # (its requests carry params._meta and no session)
            said = (
                f"{version} is not this session's: it negotiated {session.session.protocol_version}"
            )
            return _rpc_error(400, f"Bad Request: MCP-Protocol-Version {said}")
        if version is not None and version not in HANDSHAKE_VERSIONS:
            return _rpc_error(400, f"Bad Request: unsupported MCP-Protocol-Version {version}")
        self.table.touch(session)
        return session

    async def _post(
        self, req: Request, endpoint: Endpoint, principal: Principal, link: Link | None
    ) -> Response | EventStream:
        refused = mcp_post_refusal(req.headers)
        if refused is not None:
            return _rpc_error(*refused)
        if batch.is_batch(req.body) and req.headers.get(SESSION_HEADER):
            served = await self._batch(req, endpoint, link)
            if served is not None:
                return served
        try:
            msg = batch.decode(req.body)  # (a batch, where not served, is refused here: 400)
        except ProtocolError as exc:
            return Response.json(rpc.error(rpc.error_id(exc), exc.code, exc.message), 400)
        if isinstance(msg, rpc.Request) and _is_modern(msg, req):
            return await self._stateless(req, msg, endpoint, principal, link)
        if isinstance(msg, rpc.Request) and msg.method == "initialize":
            return await self._initialize(req, msg, endpoint, principal, link)
        if (
            not isinstance(msg, rpc.Request)
            and not req.headers.get(SESSION_HEADER)
            and modern_notices.is_modern(msg, req.headers)
        ):
            return modern_notices.answer(msg, req.headers)
        found = self._session(req, endpoint)
        if isinstance(found, Response):
            return found
        if not isinstance(msg, rpc.Request):
            await found.conn.feed(msg)  # (a cancelled call's POST ends as it ends: unanswered)
            return Response(202)
        if link is not None:
            hangup_policy.watch(link, found, msg)
        return await self._exchange(found, msg, link)

    async def _batch(
        self, req: Request, endpoint: Endpoint, link: Link | None
    ) -> Response | EventStream | None:
        """Serve a batch on its session if that one was negotiated at 2025-03-26; None if
        it was not (the batch is then refused)."""
        found = self._session(req, endpoint)
        if isinstance(found, Response):
            return found
        if found.session.protocol_version != batch.VERSION:
            return None
        return await exchange_batch(found, req.body, self._stream, link)

    async def _initialize(
        self,
        req: Request,
        msg: rpc.Request,
        endpoint: Endpoint,
        principal: Principal,
        link: Link | None,
    ) -> Response | EventStream:
        """A new handshake session, held if the caps allow (`SessionTable.add`)."""
        if req.headers.get(SESSION_HEADER):
            return _rpc_error(400, "Bad Request: initialize must not carry a session id")
        session = HttpSession(self.app, endpoint, principal, self.nursery)
        full = self.table.add(session)
        if full is not None:
            busy = _rpc_error(503, full)
            busy.headers.append(("retry-after", "10"))
            return busy
        reply = await self._exchange(session, msg, link)
        if isinstance(reply, Response) and reply.status == 200 and session.session.protocol_version:
            reply.headers.append((SESSION_HEADER, session.id))
        elif session.id in self.sessions:
            self.table.drop(session.id)
        return reply

    async def _exchange(
        self, session: HttpSession, msg: rpc.Request, link: Link | None
    ) -> Response | EventStream:
        if msg.id in session.replies:
            return Response.json(
                rpc.error(msg.id, rpc.INVALID_REQUEST, "duplicate request id"), 400
            )
        buf = session.open_buffer(msg.id)
        hangups = buf.hangups
        if link is None:
            await session.conn.feed(msg)
        else:
            # The call runs here; what it streams before its result goes out at once.
            started: list[EventStream] = []

            def stream_now() -> None:
                started.append(self._stream(session, buf, hangups))
                link.stream_early(started[0])

            session.early[msg.id] = stream_now
            try:
                await session.conn.feed(msg, inline=True)
            finally:
                session.early.pop(msg.id, None)
            if started:
                return started[0]
        # Plain JSON unless the call streams something before its result.
        while not (buf.events or buf.closed or buf.hangups != hangups):
            await buf.signal().wait()
        if buf.final is not None and len(buf.events) <= 1:  # the answer, as its only event
            session.streams.pop(buf.stream_id, None)
            status = 200
            if buf.code is not None and session.modern:
                status = MODERN_STATUS.get(buf.code, 200)
            return Response(status, buf.final.encode(), "application/json")
        return self._stream(session, buf, hangups)

    @staticmethod
    def _stream(session: HttpSession, buf: EventBuffer, hangups: int) -> EventStream:
        if session.modern:  # basic/transports/streamable-http: proxies must not hold events
            events = read_stream(buf, 0, prime_retry_ms=None, hangups=hangups)
            return EventStream(session.reading(events), [("x-accel-buffering", "no")])
        prime = PRIME_RETRY_MS if session.session.protocol_version == "2025-11-25" else None
        events = read_stream(buf, 0, prime_retry_ms=prime, hangups=hangups)
        return EventStream(session.reading(events))

    async def _stateless(
        self,
        req: Request,
        msg: rpc.Request,
        endpoint: Endpoint,
        principal: Principal,
        link: Link | None,
    ) -> Response | EventStream:
        meta = msg.params.get("_meta")
        if not isinstance(meta, dict) or META_VERSION not in meta:
            return Response.json(rpc.error(msg.id, rpc.INVALID_PARAMS, NO_ENVELOPE), 400)
        mismatch = header_mismatch(req.headers, msg, meta[META_VERSION])
        if mismatch is not None:
            return Response.json(rpc.error(msg.id, rpc.HEADER_MISMATCH, mismatch), 400)
        session = self._modern(link, endpoint, principal)
        self._one_shot.add(session)
        if link is not None:
            hangup_policy.watch(link, session, msg)
        try:
            return await self._exchange(session, msg, link)
        finally:
            self._one_shot.discard(session)
            session.streams.clear()  # nothing of this revision is resumed

    def _modern(self, link: Link | None, endpoint: Endpoint, principal: Principal) -> HttpSession:
        """The session of a 2026-07-28 request: its TCP connection's, while the endpoint and
        principal stay those it was made for (else a new one: a client may change either
        between two requests on one connection, and a toolset's per-connection state must
        not follow it)."""
        held = link.modern if link is not None else None
        if held is not None:
            if (
                held.principal == principal
                and held.session.catalog is endpoint.catalog
                and held.path_params == endpoint.params
            ):
                return held
            held.close()
        session = HttpSession(self.app, endpoint, principal, self.nursery)
        session.modern = True
        if link is not None:
            link.modern = session
        return session

    def _get(self, req: Request, session: HttpSession) -> Response | EventStream:
        if not accepts_event_stream(req.headers.get("accept", "")):
            return Response.error(406, "Not Acceptable: GET needs Accept: text/event-stream")
        last = req.headers.get("last-event-id")
        if last:
            parsed = parse_event_id(last)
            buf = session.streams.get(parsed[0]) if parsed else None
            if parsed is None or buf is None:
                # Not 404: to an MCP client that means the session is gone, and it would drop
                # a session that is alive (only this stream is not there to resume).
                return Response.error(
                    400,
                    "unknown Last-Event-ID: no stream of this session to resume from it; the "
                    "session itself is alive (open a GET without Last-Event-ID to listen)",
                )
            # The newest resumption takes the stream over: a response still reading it ends
            # (MCP 2025-06-18: no message broadcast across streams). Refusing it instead would
            # lock out a client whose earlier connection died silently, until a write fails.
            buf.take_over()
            return EventStream(session.reading(read_stream(buf, parsed[1], prime_retry_ms=None)))
        if session.standalone is not None:
            # One GET stream per session: a new GET replaces the old one, which may be a
            # connection that died silently. Undelivered events stay resumable by id.
            session.standalone.close()
        session.standalone = session.open_buffer(None)
        standalone = read_stream(session.standalone, 0, prime_retry_ms=None)
        return EventStream(session.reading(standalone))

    def expire(self) -> int:
        """Close the sessions unused for ``session_idle_seconds``; how many were closed."""
        return self.table.expire()

    async def sweep(self) -> None:
        """Expire idle sessions every eighth of ``session_idle_seconds``, until cancelled."""
        while True:
            await trio.sleep(self.config.session_idle_seconds / 8)
            self.expire()

    def close_all(self) -> None:
        """End every session (shutdown): calls still open are answered with an error."""
        for sid in list(self.sessions):
            self.table.drop(sid, SHUTDOWN)
        for session in self._one_shot:
            session.close(SHUTDOWN)


def _is_modern(msg: rpc.Request, req: Request) -> bool:
    """A 2026-07-28 request: its envelope says so, or else its MCP-Protocol-Version header
    (`_stateless` then refuses the missing envelope); an ``initialize`` is a handshake, and
    a request naming a handshake session without the envelope is that session's (`_session`
    refuses a 2026-07-28 header as not the session's version)."""
    meta = msg.params.get("_meta")
    if isinstance(meta, dict) and META_VERSION in meta:
        return True
    if msg.method == "initialize" or req.headers.get(SESSION_HEADER):
        return False
    return req.headers.get(VERSION_HEADER) in MODERN_VERSIONS


def _rpc_error(status: int, message: str) -> Response:
    return Response.json(rpc.error(None, rpc.INVALID_REQUEST, message), status)
