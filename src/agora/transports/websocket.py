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

After the handshake, bytes move with ``os.read``/``os.write`` on the socket's descriptor
(non-blocking, as Trio made it), waiting with Trio's ``wait_readable``/``wait_writable``
only when the socket has nothing to give or no room: a reply that fits the kernel's buffer
costs one system call and no trip through the scheduler, and the send timeout is armed
only when a send must wait. This needs a POSIX system, as agora does.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection
from agora.transports import frames
from agora.transports.frames import FrameError, MessageReader
from agora.transports.linger import linger_close

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.app import App, Endpoint
    from agora.transports.keepalive import Keepalive

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
#: Seconds a close handshake may take before the stream is dropped.
CLOSE_TIMEOUT = 1.0
#: Bytes asked of the socket per read.
RECEIVE_BYTES = 65536
#: Close code for a peer that stopped answering pings.
PING_TIMEOUT = 1011
_PING_FRAME = frames.control_frame(frames.PING, b"agora")


class Stalled(Exception):
    """The peer stopped reading: a send could not finish within the send timeout."""


class _Peer:
    """One upgraded connection: its socket, and how it should end.

    Attributes:
        close_code: The close frame to send when the session ends (None: send none). Until
            something decides otherwise, the server is going away (1001): nothing but its
            shutdown ends a session without saying why.
        pongs: Pongs received so far (the keepalive compares counts).
        peer_closed: The peer sent its close frame (ours is then the answer).
        scope: The session's cancel scope (the keepalive cancels it).
    """

    # Thousands of parked agents each hold one: no per-instance __dict__.
    __slots__ = (
        "_broken",
        "_closed_sent",
        "_decided",
        "_ending",
        "_finishing",
        "_queue",
        "_rest",
        "_sending",
        "answered",
        "close_code",
        "close_reason",
        "fd",
        "garbled",
        "missed",
        "peer_closed",
        "pinged",
        "pongs",
        "scope",
        "send_timeout",
        "slot",
        "stream",
    )

    def __init__(self, stream: trio.SocketStream, send_timeout: float) -> None:
        self.stream = stream
        self.fd = stream.socket.fileno()
        self.send_timeout = send_timeout
        self.close_code: int | None = frames.GOING_AWAY
        self.close_reason = "server shutting down"
        self._decided = False
        self.pongs = 0
        self.peer_closed = False
        self.garbled = False  # the peer broke the protocol: what follows is not read
        self._closed_sent = False
        self._broken = False  # a frame was cut short: nothing more may be written
        self._finishing: trio.CancelScope | None = None  # shields a begun frame's rest
        self._ending = False  # see `abandon_frame`
        # A FIFO lock over frames: `_sending` while one is being written, and the senders
        # waiting their turn in `_queue`, made on the first wait (a lock made up front would
        # cost every parked agent its ParkingLot, ~340 bytes).
        self._sending = False
        self._queue: trio.lowlevel.ParkingLot | None = None
        self._rest: memoryview | None = None  # a ping's tail the socket had no room for
        self.scope: trio.CancelScope | None = None
        self.slot = 0  # the keepalive's bucket
        self.pinged = False
        self.missed = 0
        self.answered = 0

    @property
    def remote(self) -> str:
        """The peer's address, for the log."""
        try:
            name = self.stream.socket.getpeername()
        except OSError:
            return "?"
        return f"{name[0]}:{name[1]}" if isinstance(name, tuple) else str(name) or "?"

    def end(self, code: int | None, reason: str = "") -> None:
        """Say how the connection should close (the first reason given wins)."""
        if not self._decided:
            self._decided = True
            self.close_code, self.close_reason = code, reason

    async def receive(self, *, waited: bool = False) -> bytes:
        """The next bytes from the peer; empty at end of stream.

        Args:
            waited: The caller has just waited for the socket to be readable (so this does
                not yield again when the bytes are there).

        Raises:
            trio.BrokenResourceError: the connection was reset.
        """
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

    async def send(self, frame: bytes, *, closing: bool = False) -> bool:
        """Write one frame; False if a close frame has already gone out.

        Frames are written whole and in turn (first come, first served), and nothing
        follows the close frame (``closing``). A send with nobody before it does not
        yield. A frame is never left half written for the next one to land in: once its
        first byte is out, a cancellation waits (shielded, for at most the send timeout)
        for the rest, and a frame that cannot be finished breaks the stream for good.

        Raises:
            trio.BrokenResourceError: the peer is gone, or an earlier frame was cut short.
            Stalled: the peer has not read for the send timeout.
        """
        if self._sending:  # another frame is being written: wait for our turn, in order
            if self._queue is None:
                self._queue = trio.lowlevel.ParkingLot()
            await self._queue.park()  # the sender before us hands its turn over
        else:
            self._sending = True
        try:
            if self._broken:
                raise trio.BrokenResourceError("an earlier frame was cut short")
            if self._closed_sent:
                return False
            self._closed_sent = closing
            if self._rest is not None:  # a keepalive ping began: it goes out first
                rest, self._rest = self._rest, None
                await self._write(rest, begun=True)
            await self._write(memoryview(frame))
            return True
        finally:
            if self._queue:  # the turn passes to the first waiter: still sending
                self._queue.unpark()
            else:
                self._sending = False

    async def emit(self, message: dict[str, Any], related: rpc.RequestId | None) -> None:
        """Send one JSON-RPC message (the session's ``emit``).

        Runs in the reader and in call tasks: a peer that is gone or stalled ends the whole
        connection here rather than failing one call task.
        """
        try:
            await self.send(frames.text_frame(rpc.encode(message)))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.end(None)
        except Stalled:
            log.info("websocket peer %s stopped reading; closing", self.remote)
            self.end(None)
        else:
            return
        if self.scope is not None:
            self.scope.cancel()

    def keepalive_round(self) -> bool:
        """One visit of the keepalive (`agora.transports.keepalive`): False when the peer
        missed two pongs in a row and its session is being cancelled (close code 1011).

        A peer that answers pings is alive however quiet it is. The ping is written only if
        the socket takes it now: a peer whose socket is full does not read, and misses its
        pong; a ping cut short is finished before the next frame (`send`). While another
        frame is being sent, this round neither pings nor judges.
        """
        if self.pinged:
            self.missed = 0 if self.pongs > self.answered else self.missed + 1
        if self.missed >= 2:
            log.info("websocket peer %s missed %d pongs; closing", self.remote, self.missed)
            self.end(PING_TIMEOUT, "ping timeout")
            if self.scope is not None:
                self.scope.cancel()
            return False
        self.answered = self.pongs
        if self._sending or self._broken or self._closed_sent:
            self.pinged = False
            return True
        self.pinged = True
        try:
            rest = self._rest if self._rest is not None else memoryview(_PING_FRAME)
            rest = self._write_now(rest)
        except trio.BrokenResourceError:
            self.end(None)
            if self.scope is not None:
                self.scope.cancel()
            return False
        self._rest = rest if rest else None
        return True

    def _write_now(self, view: memoryview) -> memoryview:
        """What is left of ``view`` after writing what the socket takes without waiting."""
        try:
            return view[os.write(self.fd, view) :]
        except BlockingIOError:
            return view
        except OSError as exc:
            self._broken = True
            raise trio.BrokenResourceError(f"write failed: {exc}") from exc

    async def _write(self, view: memoryview, *, begun: bool = False) -> None:
        size = len(view) + begun  # a begun frame counts as partly written from the start
        view = self._write_now(view)
        while view:  # the kernel's buffer is full: wait, but not for ever
            try:
                with trio.move_on_after(self.send_timeout) as slow:
                    await trio.lowlevel.wait_writable(self.fd)
            except trio.Cancelled:
                if len(view) < size and not await self._finish(view):
                    raise Stalled from None  # the connection ends: nothing can follow
                raise
            if slow.cancelled_caught:
                self._broken = len(view) < size
                raise Stalled
            view = self._write_now(view)

    async def _finish(self, view: memoryview) -> bool:
        """Write the rest of a begun frame although its sender was cancelled; whether it went.

        A frame that cannot be finished within the send timeout, or whose connection is
        ending anyway (`abandon_frame`), breaks the stream: no other frame may follow it,
        not even a close frame.
        """
        with trio.CancelScope(shield=True) as self._finishing:
            if self._ending:
                self._finishing.cancel()
            with trio.move_on_after(self.send_timeout):
                while view:
                    await trio.lowlevel.wait_writable(self.fd)
                    view = self._write_now(view)
        self._finishing = None
        self._broken = bool(view)
        return not view

    def closed(self) -> None:
        """The stream is about to close: from now on every send fails, none writes."""
        self._broken = True

    def abandon_frame(self) -> None:
        """Stop finishing a cancelled sender's frame, now or later: the connection is ending."""
        self._ending = True
        if self._finishing is not None:
            self._finishing.cancel()


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
    """
    peer = _Peer(stream, app.config.send_timeout)
    conn = Connection(
        app,
        app.new_session(endpoint),
        peer.emit,
        nursery,
        principal=principal,
        endpoint=endpoint.params,
    )
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


async def _read(peer: _Peer, conn: Connection, data: bytes) -> None:
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


async def _deliver(peer: _Peer, conn: Connection, received: list[frames.Received]) -> bool:
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


async def _close(peer: _Peer) -> None:
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
