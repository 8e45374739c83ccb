"""One upgraded WebSocket connection's socket: frames written whole and in turn, read raw.

`agora.transports.websocket` completes the handshake and runs the session; this module owns
the socket after that (`Peer`). Bytes move with ``os.read``/``os.write`` on the socket's
descriptor (non-blocking, as Trio made it), waiting with Trio's ``wait_readable`` /
``wait_writable`` only when the socket has nothing to give or no room: a reply that fits the
kernel's buffer costs one system call and no trip through the scheduler, and the send
timeout is armed only when a send must wait. A frame once begun is finished before any other
(or breaks the stream for good), a peer that stops reading is `Stalled`, and the keepalive's
ping is written only when the socket takes it at once. This needs a POSIX system, as agora
does. Nothing here reads frames or knows about sessions.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import trio

from agora.logsafe import peer_name
from agora.mcp import jsonrpc as rpc
from agora.transports import frames

log = logging.getLogger(__name__)

#: Bytes asked of the socket per read.
RECEIVE_BYTES = 65536
#: Close code for a peer that stopped answering pings.
PING_TIMEOUT = 1011
_PING_FRAME = frames.control_frame(frames.PING, b"agora")


class Stalled(Exception):
    """The peer stopped reading: a send could not finish within the send timeout."""


class Peer:
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
        return peer_name(self.stream.socket)

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
                await self._write(self._write_now(rest), len(rest) + 1)
            # Written here first: `_write`, a coroutine more, only when the socket is full.
            view = self._write_now(memoryview(frame))
            if view:
                await self._write(view, len(frame))
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
            await self.send(frames.frame(rpc.encode(message)))
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

    async def _write(self, view: memoryview, size: int) -> None:
        """Write ``view``, the rest of a frame of ``size`` bytes that the socket had no room
        for (a ping begun by the keepalive counts as partly written however much is left)."""
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
