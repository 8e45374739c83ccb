"""MCP over WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``.

The HTTP front end has already read the upgrade request and checked the path, Host/Origin
and the bearer token; this module completes the handshake and runs the connection, driving
sans-io wsproto from one reader task: bytes in, messages to the session; replies framed
and sent under a FIFO lock by whichever task produced them. A keepalive pings a quiet peer.
A peer that misses pongs, sends an oversize message or invalid UTF-8, or stops reading is
closed; nobody else notices. Every connection has its own nursery and its socket is closed
in ``finally``. Nothing here knows about tools.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from typing import TYPE_CHECKING, Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection

if TYPE_CHECKING:
    from agora.server.app import App, Endpoint
    from agora.server.connection import Emit
    from agora.toolsets.base import Principal

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
#: Seconds a close handshake may take before the stream is dropped.
CLOSE_TIMEOUT = 1.0
#: Bytes asked of the socket per read.
RECEIVE_BYTES = 65536
#: Close codes (RFC 6455): normal, invalid payload data, message too big, server error.
NORMAL = 1000
INVALID_DATA = 1007
MESSAGE_TOO_BIG = 1009
#: Close code for a peer that stopped answering pings.
PING_TIMEOUT = 1011
_HEAD_END = re.compile(rb"\r?\n\r?\n")
#: UTF-8 needs at most this many bytes per character: a shorter text is within limits.
_MAX_UTF8 = 4


class Stalled(Exception):
    """The peer stopped reading: a send could not finish within the send timeout."""


class _Peer:
    """One upgraded connection: the socket, its wsproto state, and how it should end.

    After the handshake, bytes move with ``os.read``/``os.write`` on the socket's descriptor
    (non-blocking, as Trio made it) and Trio's ``wait_readable``/``wait_writable`` only when
    the socket has nothing to give or no room: a reply that fits the kernel's buffer costs
    one system call and no trip through the scheduler, and the send timeout is armed only
    when a send must wait. The `trio.SocketStream` still owns the descriptor and closes it.

    Attributes:
        close_code: The close frame to send when the session ends (None: send none).
        pongs: Pongs received so far (the keepalive compares counts).
    """

    def __init__(self, stream: trio.SocketStream, ws: WSConnection, send_timeout: float) -> None:
        self.stream = stream
        self.ws = ws
        self.fd = stream.socket.fileno()
        self.send_timeout = send_timeout
        self.close_code: int | None = NORMAL
        self.close_reason: str | None = None
        self.pongs = 0
        self._lock = trio.StrictFIFOLock()
        try:
            host, port = stream.socket.getpeername()[:2]
            self.remote = f"{host}:{port}"
        except OSError:
            self.remote = "?"

    def end(self, code: int | None, reason: str | None = None) -> None:
        """Say how the connection should close (the first reason given wins)."""
        if self.close_code == NORMAL:
            self.close_code, self.close_reason = code, reason

    async def receive(self) -> bytes:
        """The next bytes from the peer; empty at end of stream.

        Raises:
            trio.BrokenResourceError: the connection was reset.
        """
        waited = False
        while True:
            try:
                data = os.read(self.fd, RECEIVE_BYTES)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.fd)
                waited = True
                continue
            except OSError as exc:
                raise trio.BrokenResourceError(f"read failed: {exc}") from exc
            if not waited:  # it was there already: a flooding peer must not starve the rest
                await trio.lowlevel.checkpoint()
            return data

    async def send(self, event: Event) -> bool:
        """Frame ``event`` and send it; False if the connection is already closing.

        Frames are made and written under a FIFO lock, so bytes leave in the order wsproto
        produced them and nothing follows a close frame. Taking a free lock does not yield.

        Raises:
            trio.BrokenResourceError: the peer is gone.
            Stalled: the peer has not read for the send timeout.
        """
        lock = self._lock
        if lock.locked():
            await lock.acquire()
        else:
            lock.acquire_nowait()
        try:
            if self.ws.state not in (ConnectionState.OPEN, ConnectionState.REMOTE_CLOSING):
                return False
            try:
                data = self.ws.send(event)
            except LocalProtocolError:  # e.g. a message after the peer's close frame
                return False
            await self._write(memoryview(data))
            return True
        finally:
            lock.release()

    async def _write(self, view: memoryview) -> None:
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                pass
            except OSError as exc:
                raise trio.BrokenResourceError(f"write failed: {exc}") from exc
            if view:  # the kernel's buffer is full: wait, but not for ever
                with trio.move_on_after(self.send_timeout) as slow:
                    await trio.lowlevel.wait_writable(self.fd)
                if slow.cancelled_caught:
                    raise Stalled


async def serve_websocket(
    app: App, stream: trio.SocketStream, head: bytes, endpoint: Endpoint, principal: Principal
) -> None:
    """Complete the upgrade whose request ``head`` was read, then serve the connection.

    Args:
        app: The server.
        stream: The client's socket, positioned after ``head``.
        head: Every byte read from the socket so far (the request head, maybe early frames).
        endpoint: The MCP endpoint of the request path.
        principal: Who the bearer token says the client is.
    """
    ws = WSConnection(ConnectionType.SERVER)
    peer = _Peer(stream, ws, app.config.send_timeout)
    try:
        accepted = False
        with trio.move_on_after(HANDSHAKE_TIMEOUT):
            accepted = await _accept(peer, head)
        if accepted:
            await _session(app, peer, endpoint, principal)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
            await stream.aclose()


async def _accept(peer: _Peer, data: bytes) -> bool:
    # wsproto's server handshake drops bytes that follow the request head (a client's
    # first frames, sent without waiting for the 101): hold them back until accepted.
    ws = peer.ws
    end = _HEAD_END.search(data)
    early = b""
    if end is not None:
        data, early = data[: end.end()], data[end.end() :]
    while True:
        try:
            ws.receive_data(data)
            request = next((e for e in ws.events() if isinstance(e, Request)), None)
        except RemoteProtocolError as err:  # a bad upgrade: answer as wsproto suggests
            if err.event_hint is not None:
                with contextlib.suppress(LocalProtocolError, trio.BrokenResourceError):
                    await peer.stream.send_all(ws.send(err.event_hint))
            return False
        if request is not None:
            sub = "mcp" if "mcp" in request.subprotocols else None
            await peer.stream.send_all(ws.send(AcceptConnection(subprotocol=sub)))
            if early:
                ws.receive_data(early)
            return True
        data = await peer.stream.receive_some(RECEIVE_BYTES)
        if not data:
            return False


async def _session(app: App, peer: _Peer, endpoint: Endpoint, principal: Principal) -> None:
    try:
        async with trio.open_nursery() as nursery:

            async def emit(message: dict[str, Any], related: rpc.RequestId | None) -> None:
                # Runs in the reader and in call tasks: a peer that is gone or stalled ends
                # the whole connection here rather than failing one call task.
                try:
                    await peer.send(TextMessage(rpc.encode(message).decode()))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    peer.end(None)
                    nursery.cancel_scope.cancel()
                except Stalled:
                    log.info("websocket peer %s stopped reading; closing", peer.remote)
                    peer.end(None)
                    nursery.cancel_scope.cancel()

            conn = Connection(
                app,
                app.new_session(endpoint),
                emit,
                nursery,
                principal=principal,
                endpoint=endpoint.params,
            )
            if app.config.ping_interval > 0:
                nursery.start_soon(_keepalive, peer, app.config.ping_interval, nursery.cancel_scope)
            try:
                await _read(peer, conn, emit)
            except (trio.BrokenResourceError, trio.ClosedResourceError, Stalled):
                peer.end(None)
            finally:
                conn.cancel_all()
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await _close(peer)


async def _read(peer: _Peer, conn: Connection, emit: Emit) -> None:
    """Feed each whole message to the session until the peer closes or breaks a rule."""
    ws = peer.ws
    limit = rpc.MAX_MESSAGE_BYTES
    parts: list[str | bytes | bytearray] = []
    chars = 0
    while True:
        for event in ws.events():
            if isinstance(event, (TextMessage, BytesMessage)):
                parts.append(event.data)
                chars += len(event.data)
                if chars * _MAX_UTF8 > limit and _size(parts) > limit:
                    peer.end(MESSAGE_TOO_BIG, f"message larger than {limit} bytes")
                    return
                if not event.message_finished:
                    continue
                if isinstance(event, BytesMessage):
                    await emit(rpc.error(None, rpc.INVALID_REQUEST, "send text frames"), None)
                else:
                    text = event.data if len(parts) == 1 else "".join(parts)  # type: ignore[arg-type]
                    await conn.feed_bytes(text)
                parts.clear()
                chars = 0
            elif isinstance(event, Ping):
                await peer.send(event.response())
            elif isinstance(event, Pong):
                peer.pongs += 1
            elif isinstance(event, CloseConnection):
                # The peer's close frame (answered in `_close`), or wsproto's report of a
                # frame it could not parse, such as invalid UTF-8 (1007) or a bad opcode.
                if ws.state is ConnectionState.REMOTE_CLOSING:
                    peer.end(event.code)
                else:
                    peer.end(event.code, event.reason)
                return
        data = await peer.receive()
        if not data:
            peer.end(None)  # the socket ended without a close frame
            return
        ws.receive_data(data)


def _size(parts: list[str | bytes | bytearray]) -> int:
    return sum(len(p.encode()) if isinstance(p, str) else len(p) for p in parts)


async def _close(peer: _Peer) -> None:
    """Send the close frame decided on, and wait briefly for the peer's."""
    ws = peer.ws
    if peer.close_code is None:
        return  # the peer is gone or stalled: there is nobody to tell
    with trio.move_on_after(CLOSE_TIMEOUT):
        try:
            if ws.state is ConnectionState.REMOTE_CLOSING:
                await peer.send(CloseConnection(code=peer.close_code))
                return
            if not await peer.send(CloseConnection(peer.close_code, peer.close_reason)):
                return
            while ws.state is not ConnectionState.CLOSED:  # until the peer's close frame
                data = await peer.receive()
                if not data:
                    return
                ws.receive_data(data)
                for _ in ws.events():
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError, Stalled):
            return


async def _keepalive(peer: _Peer, interval: float, scope: trio.CancelScope) -> None:
    # A peer that answers pings is alive however quiet it is; one that misses two in a row
    # is not, and is closed so its calls and memory are released.
    missed = 0
    answered = peer.pongs
    pinged = False
    while True:
        await trio.sleep(interval)
        if pinged:
            missed = 0 if peer.pongs > answered else missed + 1
        if missed >= 2:
            log.info("websocket peer %s missed %d pongs; closing", peer.remote, missed)
            peer.end(PING_TIMEOUT, "ping timeout")
            scope.cancel()
            return
        answered = peer.pongs
        try:
            pinged = await peer.send(Ping(b"agora"))
        except (trio.BrokenResourceError, trio.ClosedResourceError, Stalled):
            peer.end(None)
            scope.cancel()
            return
