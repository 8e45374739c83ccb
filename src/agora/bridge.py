"""``agora stdio --connect URL``: a stdio MCP client's session on a running agora server.

Clients that only speak stdio (Claude Desktop and the like) start this process; it relays
every JSON-RPC line between its stdin/stdout and one WebSocket to the server, untouched:
requests, answers, cancellations, progress and server requests alike. The client then
shares the live server, its pages and its wake-ups, instead of opening the database a second
time. When the connection drops (the server restarts), requests in flight get a JSON-RPC
error, one line on stderr says so, and the bridge reconnects with backoff, replaying the
client's handshake (see `agora.relay`) so the session goes on. End of input ends the bridge
(or SIGINT, SIGTERM: `Bridge.stop_reading`) once the requests in flight have answered, and
the server's errors for malformed lines have come (`Relay.barrier`); a request still
unanswered after `GRACE_SECONDS` is cancelled at the server and answered with a JSON-RPC
error saying the bridge is closing and the call may or may not have taken effect: a client
never waits on silence.

Client side only: nothing here imports the server.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import msgspec
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError

from agora.client import open_websocket
from agora.logsafe import one_line, shown_url
from agora.mcp import jsonrpc as rpc
from agora.relay import Relay, ReplayRefused
from agora.transports.pipes import READ_BYTES, Lines, Oversize, open_stdio

if TYPE_CHECKING:
    from trio_websocket import WebSocketConnection

    from agora.transports.pipes import LineWriter

#: Seconds between reconnection attempts: doubling from the first to the last.
BACKOFF = (0.05, 2.0)
#: Seconds the first connection and its upgrade may take, and the replayed handshake.
HANDSHAKE_SECONDS = 10.0
#: Seconds a reconnection and its upgrade may take before the next try. Short: a server that
#: dies as we connect can leave the upgrade unanswered, and trying again costs nothing.
RECONNECT_SECONDS = 2.0
#: Seconds requests in flight may take to answer once the input has ended: the server's own
#: default ``grace_seconds``, the time a call in flight gets when the server shuts down.
GRACE_SECONDS = 5.0
#: Seconds the cancellations of the calls given up at the end may take to send.
CANCEL_SECONDS = 1.0

_NOT_UTF8 = rpc.encode(rpc.error(None, rpc.PARSE_ERROR, "message is not valid UTF-8"))


class BridgeError(Exception):
    """The bridge cannot start or go on; its message is one line for stderr.

    Attributes:
        exit_code: 2 for a refusal that configuration must fix (401, 404), 1 otherwise.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _say(line: str) -> None:
    print(f"agora stdio: {line}", file=sys.stderr, flush=True)


def _why(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRejected):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, trio.TooSlowError):
        return "no answer in time"
    if isinstance(exc, ConnectionClosed):
        reason = exc.reason
        if reason is None:
            return "closed"
        return f"closed {reason.code}" + (f" {reason.reason}" if reason.reason else "")
    cause = exc.__cause__ or exc
    return str(cause) or type(cause).__name__


class Bridge:
    """One stdio session carried over successive WebSocket connections."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        #: The URL as stderr and error messages show it: its query (a seat token) is secret.
        self.shown = shown_url(url)
        self.token = token
        self.relay = Relay(self.shown)
        self._ws: WebSocketConnection | None = None
        self._drained = trio.Event()
        #: `stop_reading` was called (SIGINT or SIGTERM): the input counts as ended.
        self._stopping = False
        self._read: trio.CancelScope | None = None  # around the read of stdin under way

    async def run(self, stdin: int | None = None, stdout: int | None = None) -> None:
        """Relay until stdin ends (or stdout's reader goes away).

        Raises:
            BridgeError: the first connection failed, or the server refused the replayed
                handshake.
        """
        async with open_stdio(stdin, stdout) as (receive, writer):
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self._links, writer)
                    await self._pump_input(receive, writer)
                    with trio.move_on_after(GRACE_SECONDS):
                        await self._send_barrier()
                        while self.relay.owing:
                            self._drained = trio.Event()
                            await self._drained.wait()
                    await self._give_up(writer)
                    nursery.cancel_scope.cancel()
            except* (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client stopped reading our stdout: nobody is left to serve

    async def _send_barrier(self) -> None:
        """Ask the server for a last answer (`Relay.barrier`), so that the bridge exits only
        once what it owes the client has come, its answers to malformed lines included."""
        ws = self._ws
        if ws is None:
            return  # no connection: nothing more can come
        barrier = self.relay.barrier()
        # A drop is noticed by `_links`, whose `Relay.lost` ends the wait for answers.
        with contextlib.suppress(ConnectionClosed):
            await ws.send_message(barrier)

    async def _give_up(self, writer: LineWriter) -> None:
        """Answer the requests still in flight at the end of the grace (an error each),
        then tell the server they are cancelled, so it stops working on them."""
        if not self.relay.in_flight:
            return
        why = (
            f"the agora stdio bridge is closing (its input ended) and the agora server at "
            f"{self.shown} had not answered within {GRACE_SECONDS:g} s"
        )
        cancels, lines = self.relay.closing(why)
        for line in lines:
            await writer.send(line)
        ws = self._ws
        if ws is None:
            return
        with trio.move_on_after(CANCEL_SECONDS):
            try:
                for text in cancels:
                    await ws.send_message(text)
            except ConnectionClosed:
                pass  # gone: the server ends the calls of a closed connection itself

    async def _links(self, writer: LineWriter, *, task_status: trio.TaskStatus[None]) -> None:
        """Hold a connection, and a new one whenever it drops, until cancelled."""
        started = False
        delay, shown = BACKOFF[0], ""
        while True:
            connected = False
            try:
                limit = RECONNECT_SECONDS if started else HANDSHAKE_SECONDS
                async with open_websocket(self.url, token=self.token, connect_timeout=limit) as ws:
                    if started:
                        await self._replay(ws, writer)
                        _say(f"reconnected to {self.shown}")
                    self._ws, connected = ws, True
                    delay, shown = BACKOFF[0], ""
                    if not started:
                        started = True
                        task_status.started()
                    why = await self._pump_output(ws, writer)
            except (OSError, HandshakeError, ConnectionClosed, trio.TooSlowError) as exc:
                if not started:
                    raise _first_failure(self.shown, exc) from None
                why = _why(exc)
                if not connected:
                    if why != shown:
                        shown = why
                        _say(f"cannot reach {self.shown} yet ({why}); retrying")
                    await trio.sleep(delay)
                    delay = min(delay * 2, BACKOFF[1])
                    continue
            except ValueError as exc:
                raise BridgeError(str(exc), exit_code=2) from None
            self._ws = None
            for line in self.relay.lost():
                await writer.send(line)
            self._drained.set()
            _say(f"lost the connection to {self.shown} ({why}); reconnecting")

    async def _replay(self, ws: WebSocketConnection, writer: LineWriter) -> None:
        """Carry the client's session onto a new connection before anything else is sent."""
        handshake = self.relay.handshake()
        if handshake is None:
            return
        with trio.fail_after(HANDSHAKE_SECONDS):
            await ws.send_message(handshake)
            while True:
                text = await ws.get_message()
                try:
                    line = self.relay.from_server(_text(text))
                except ReplayRefused as exc:
                    raise BridgeError(
                        f"{self.shown} refused the session's handshake: {exc}"
                    ) from None
                if line is not None:
                    await writer.send(line)
                if self.relay.is_handshake_answer(_text(text)):
                    break
            for message in self.relay.session_state():
                await ws.send_message(message)

    async def _pump_output(self, ws: WebSocketConnection, writer: LineWriter) -> str:
        """Write every message from the server to stdout; the reason the connection closed."""
        try:
            while True:
                line = self.relay.from_server(_text(await ws.get_message()))
                if line is not None:
                    await writer.send(line)
                if not self.relay.owing:
                    self._drained.set()
        except ConnectionClosed as exc:
            return _why(exc)

    def stop_reading(self) -> None:
        """End the input as its end would (SIGINT, SIGTERM): read no more, then answer the
        calls in flight (the server's reply within the grace, else an error) and exit."""
        self._stopping = True
        if self._read is not None:
            self._read.cancel()

    async def _pump_input(self, receive: trio.abc.ReceiveStream, writer: LineWriter) -> None:
        lines = Lines(rpc.MAX_MESSAGE_BYTES, rpc.OVERSIZE_HEAD_BYTES)
        while not self._stopping:
            # Only the wait for stdin is cut by `stop_reading`, never a message half sent.
            chunk: bytes | bytearray = b""
            with trio.CancelScope() as self._read:
                chunk = await receive.receive_some(READ_BYTES)
            self._read = None
            if not chunk:
                break
            for line in lines.feed(chunk):
                await self._forward(line, writer)
        last = None if self._stopping else lines.end()  # stopped: a part line is no message
        if last is not None:
            await self._forward(last, writer)

    async def _forward(self, line: bytes | Oversize, writer: LineWriter) -> None:
        if isinstance(line, Oversize):  # refused here, with its id so its call fails at once
            rid = rpc.request_id_in(line.head)
            await writer.send(rpc.encode(rpc.error(rid, rpc.INVALID_REQUEST, rpc.OVERSIZE_MESSAGE)))
            return
        if not line.strip():
            return
        try:
            text = self.relay.from_client(line)
        except UnicodeDecodeError:
            await writer.send(_NOT_UTF8)
            return
        if text is None:
            return
        if self._ws is not None:
            try:
                await self._ws.send_message(text)
                return
            except ConnectionClosed:
                pass
        error = self.relay.unsent(line)
        if error is not None:
            await writer.send(error)


def _text(message: str | bytes) -> str:
    return message if isinstance(message, str) else message.decode(errors="replace")


def _first_failure(url: str, exc: BaseException) -> BridgeError:
    if isinstance(exc, ConnectionRejected):
        hint = " (check --token or AGORA_TOKEN)" if exc.status_code in (401, 403) else ""
        return BridgeError(f"{url} refused the connection: {rejected(exc)}{hint}", 2)
    return BridgeError(f"cannot connect to {url}: {_why(exc)}")


def rejected(exc: ConnectionRejected) -> str:
    """A refused WebSocket handshake as the server said it: ``HTTP 401: <its words>`` (the
    message of its JSON body, which names the fix), or ``HTTP 401`` when it sent none."""
    body = getattr(exc, "body", None) or b""
    words = ""
    try:
        said = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        said = None
    if isinstance(said, dict):
        error = said.get("error")
        words = error.get("message", "") if isinstance(error, dict) else error or ""
    words = one_line(words) if isinstance(words, str) else ""
    return f"HTTP {exc.status_code}: {words}" if words else f"HTTP {exc.status_code}"


async def run_bridge(url: str, token: str | None, bridge: Bridge | None = None) -> None:
    """Relay stdin/stdout to ``url`` until stdin ends (or ``bridge.stop_reading``: give the
    bridge to call it on, e.g. on a signal).

    Raises:
        BridgeError: the bridge could not start or go on (one line for stderr).
    """
    await (bridge or Bridge(url, token)).run()
