"""MCP over WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``.

The HTTP front end has already read the upgrade request and checked the path, Host/Origin
and the bearer token. This module completes the handshake with wsproto
(`accept_websocket`), then runs the connection (`serve_websocket`) from one reader task:
bytes in, frames decoded by `agora.transports.frames`, whole messages to the session;
replies are framed and written in turn (first come, first served) by whichever task
produced them. The shared keepalive (`agora.transports.keepalive`) pings a quiet peer. A
peer that misses pongs, breaks the protocol (close code 1002, or 1007 for invalid UTF-8),
sends an oversize message (1009) or stops reading is closed; nobody else notices. Calls run
in the server's nursery (a parked session holds no nursery of its own); the connection
waits for its cancelled calls before its socket is closed in ``finally``, lingering so that
the peer reads the close frame (`agora.transports.linger`). Nothing here knows about tools.

After the handshake the socket is `agora.transports.ws_peer.Peer`'s: it writes frames whole
and in turn, with ``os.read``/``os.write`` on the descriptor; `Peer`, `Stalled` and
`PING_TIMEOUT` are importable from here too.
"""

from __future__ import annotations

import base64
import contextlib
from typing import TYPE_CHECKING

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection
from agora.transports import frames
from agora.transports.frames import FrameError, MessageReader
from agora.transports.linger import linger_close
from agora.transports.ws_peer import PING_TIMEOUT, RECEIVE_BYTES, Peer, Stalled

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.identity import Principal
    from agora.server.app import App, Endpoint
    from agora.server.workers import Workers
    from agora.transports.keepalive import Keepalive

__all__ = [
    "CLOSE_TIMEOUT",
    "HANDSHAKE_TIMEOUT",
    "PING_TIMEOUT",
    "Peer",
    "Stalled",
    "accept_websocket",
    "serve_websocket",
    "upgrade_attempt",
    "upgrade_refusal",
]

HANDSHAKE_TIMEOUT = 10.0
#: Bytes of a Sec-WebSocket-Key once decoded (RFC 6455 4.1).
KEY_BYTES = 16
#: Seconds a close handshake may take before the stream is dropped.
CLOSE_TIMEOUT = 1.0


#: The one WebSocket version there is (RFC 6455 4.1); an upgrade asking another gets 426.
WS_VERSION = "13"

#: How nginx passes a WebSocket handshake's hop-by-hop headers on.
_NGINX = (
    "(nginx: proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; "
    'proxy_set_header Connection "upgrade")'
)


#: The answer to a WebSocket handshake whose ``Upgrade`` and ``Connection: Upgrade`` did not
#: arrive (nginx's default: it sends ``Connection: close``).
_STRIPPED = (
    "Bad Request: this looks like a WebSocket upgrade (it has Sec-WebSocket-Key and "
    "Sec-WebSocket-Version) whose Upgrade: websocket and Connection: Upgrade headers did not "
    "arrive: both are hop-by-hop, so a proxy in between must pass them on, over HTTP/1.1 "
    f"{_NGINX}"
)
#: The answer to one whose ``Connection: Upgrade`` arrived but not its ``Upgrade`` (a
#: proxy that sets the one, not the other: a tester was told neither arrived).
_HALF_STRIPPED = (
    "Bad Request: this looks like a WebSocket upgrade (it has Sec-WebSocket-Key, "
    "Sec-WebSocket-Version and Connection: Upgrade) whose Upgrade: websocket header did not "
    "arrive: it is hop-by-hop, so a proxy in between must pass it on, over HTTP/1.1 "
    f"{_NGINX}"
)


def upgrade_attempt(version: str, method: str, headers: Mapping[str, str]) -> bool:
    """Whether a request asks for a WebSocket: ``Upgrade: websocket`` over HTTP/1.1 (an
    HTTP/1.0 request's Upgrade is ignored, RFC 9110 7.8), or a GET with the handshake's
    ``Sec-WebSocket-Key`` and ``Sec-WebSocket-Version`` whose ``Upgrade`` a proxy dropped
    (`upgrade_refusal` says so: it was told "GET needs an Mcp-Session-Id")."""
    if headers.get("upgrade", "").lower() == "websocket":
        return version == "1.1"
    return (
        method == "GET"
        and "upgrade" not in headers
        and "sec-websocket-key" in headers
        and "sec-websocket-version" in headers
    )


def upgrade_refusal(
    method: str, headers: Mapping[str, str], has_body: bool
) -> tuple[int, str | dict[str, object], list[tuple[str, str]]] | None:
    """The answer to an upgrade request (`upgrade_attempt`) that cannot open a WebSocket
    (status, body, extra headers), else None: 405 for a method other than GET, 400 for a
    handshake whose Upgrade header did not arrive or a malformed request (`_malformed`), 426
    for a version other than 13 (as wsproto would, but with a body)."""
    if method != "GET":
        return 405, "WebSocket upgrade needs GET", []
    if "upgrade" not in headers:
        said = _HALF_STRIPPED if _connection_upgrade(headers) else _STRIPPED
        return 400, rpc.error(None, rpc.INVALID_REQUEST, said), []
    problem = _malformed(headers, has_body)
    if problem is not None:
        return 400, rpc.error(None, rpc.INVALID_REQUEST, problem), []
    if headers.get("sec-websocket-version") != WS_VERSION:
        said = f"Upgrade Required: this server speaks WebSocket version {WS_VERSION}"
        version = [("sec-websocket-version", WS_VERSION), ("upgrade", "websocket")]
        return 426, rpc.error(None, rpc.INVALID_REQUEST, said), version
    return None


def _connection_upgrade(headers: Mapping[str, str]) -> bool:
    """Whether ``Connection`` has the ``upgrade`` token (RFC 6455 4.2.1)."""
    return "upgrade" in {t.strip().lower() for t in headers.get("connection", "").split(",")}


def _malformed(headers: Mapping[str, str], has_body: bool) -> str | None:
    """Why an upgrade request cannot open a WebSocket, else None: a body (its bytes would be
    read as frames), no ``upgrade`` token in ``Connection`` or a ``Sec-WebSocket-Key`` that
    is not 16 bytes in base64 (RFC 6455 4.2.1)."""
    if has_body:
        return "Bad Request: a WebSocket upgrade request has no body"
    if not _connection_upgrade(headers):
        return (
            "Bad Request: a WebSocket upgrade needs Connection: Upgrade (RFC 6455 4.2.1; it is"
            " hop-by-hop, so a proxy in between must pass it on)"
        )
    key = headers.get("sec-websocket-key", "")
    if "," in key:  # (the head joins a repeated field's values with ", ")
        return "Bad Request: Sec-WebSocket-Key is repeated; send it once (RFC 6455 4.2.1)"
    try:
        valid = len(base64.b64decode(key, validate=True)) == KEY_BYTES
    except ValueError:
        valid = False
    if not valid:
        return "Bad Request: Sec-WebSocket-Key must be 16 bytes in base64 (RFC 6455 4.2.1)"
    if "sec-websocket-version" not in headers:  # (another version than 13 gets a 426)
        return f"Bad Request: Sec-WebSocket-Version {WS_VERSION} is required (RFC 6455 4.2.1)"
    return None


async def accept_websocket(stream: trio.SocketStream, head: bytes) -> bool:
    """Answer the upgrade request ``head`` (101, or the refusal wsproto suggests) within
    `HANDSHAKE_TIMEOUT`; whether it was accepted (if not, close the stream lingering).
    """
    with trio.move_on_after(HANDSHAKE_TIMEOUT):
        ws = WSConnection(ConnectionType.SERVER)
        try:
            ws.receive_data(head)
            request = next((e for e in ws.events() if isinstance(e, Request)), None)
        except RemoteProtocolError as err:
            if err.event_hint is not None:
                with contextlib.suppress(LocalProtocolError, trio.BrokenResourceError):
                    await stream.send_all(ws.send(err.event_hint))
            return False
        if request is None:  # the front end hands over a whole head: this cannot happen
            return False
        sub = "mcp" if "mcp" in request.subprotocols else None
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(ws.send(AcceptConnection(subprotocol=sub)))
            return True
    return False


async def serve_websocket(
    app: App,
    stream: trio.SocketStream,
    early: bytes,
    endpoint: Endpoint,
    principal: Principal,
    *,
    nursery: trio.Nursery,
    keepalive: Keepalive | None = None,
    workers: Workers | None = None,
) -> None:
    """Serve an accepted WebSocket (`accept_websocket`) until it ends; close the stream.

    Args:
        app: The server.
        stream: The client's socket, positioned after the upgrade request.
        early: Bytes received after the request's head: frames of a client that did not
            wait for the 101 (wsproto's server handshake would drop them, so they are fed
            after it).
        endpoint: The MCP endpoint of the request path.
        principal: Who the bearer token says the client is.
        nursery: Runs the session's calls (the server's: a parked WebSocket costs no
            nursery of its own); it must outlive the connection.
        keepalive: Pings the peer while the session lasts (None: it is not pinged).
        workers: Idle tasks of ``nursery`` that run the session's calls (None: each call
            gets a task of its own); one more is prepared for this connection.
    """
    peer = Peer(stream, app.config.send_timeout)
    conn = Connection(
        app,
        app.new_session(endpoint),
        peer.emit,
        nursery,
        principal=principal,
        endpoint=endpoint.params,
        workers=workers,
    )
    if workers is not None:
        workers.prepare()  # a wave of connections is often followed by a burst of calls
    try:
        with trio.CancelScope() as peer.scope:
            if keepalive is not None:
                keepalive.add(peer)
            try:
                await _read(peer, conn, early)
            except (trio.BrokenResourceError, trio.ClosedResourceError, Stalled):
                peer.end(None)
            finally:
                if keepalive is not None:
                    keepalive.discard(peer)
                conn.cancel_all()
                if not peer.peer_closed:  # nobody will read the rest of a begun frame
                    peer.abandon_frame()
        # The calls run in ``nursery``, which outlives us: none may write after the close.
        with trio.CancelScope(shield=True):
            await conn.wait_finished()
    finally:
        try:
            with trio.CancelScope(shield=True):
                await _close(peer)
        finally:
            peer.closed()
            await linger_close(stream)


async def _read(peer: Peer, conn: Connection, data: bytes) -> None:
    """Feed each whole message to the session until the peer closes or breaks a rule.

    A parked session sleeps in this frame: it keeps neither the bytes it last read nor the
    messages they held (`_deliver` has them).
    """
    reader = MessageReader(rpc.MAX_MESSAGE_BYTES)
    while True:
        drained = len(data) < RECEIVE_BYTES
        try:
            received = reader.feed(data)
        except FrameError as err:
            peer.end(err.code, err.reason)
            peer.garbled = True
            return
        del data
        if not await _deliver(peer, conn, received):
            return
        del received
        if drained:
            # The last read emptied the socket: a client that waits for each reply has sent
            # nothing more, so wait before reading.
            await trio.lowlevel.wait_readable(peer.fd)
            data = await peer.receive(waited=True)
        else:
            data = await peer.receive()
        if not data:
            peer.end(None)  # the socket ended without a close frame
            return


async def _deliver(peer: Peer, conn: Connection, received: list[frames.Received]) -> bool:
    """Hand what the peer sent to the session; False once it sent its close frame."""
    for opcode, payload in received:
        if opcode == frames.TEXT:
            await conn.feed_bytes(payload)
        elif opcode == frames.BINARY:
            await peer.emit(rpc.error(None, rpc.INVALID_REQUEST, "send text frames"), None)
        elif opcode == frames.PING:
            await peer.send(frames.control_frame(frames.PONG, payload))
        elif opcode == frames.PONG:
            peer.pongs += 1
        else:  # the peer's close frame: answered with its own code in `_close`
            code, _ = payload
            peer.peer_closed = True
            peer.end(code)
            return False
    return True


async def _close(peer: Peer) -> None:
    """Send the close frame decided on; if it opens the close handshake, await the answer."""
    if peer.close_code is None:
        return  # the peer is gone or stalled: there is nobody to tell
    with trio.move_on_after(CLOSE_TIMEOUT):
        try:
            frame = frames.close_frame(peer.close_code, peer.close_reason)
            if not await peer.send(frame, closing=True) or peer.peer_closed or peer.garbled:
                return  # a garbled stream cannot be read for the answer: linger instead
            reader = MessageReader(rpc.MAX_MESSAGE_BYTES)
            while data := await peer.receive():  # until the peer's close frame
                if any(opcode == frames.CLOSE for opcode, _ in reader.feed(data)):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, Stalled, FrameError):
            return
