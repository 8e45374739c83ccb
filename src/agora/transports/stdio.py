"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

Reads and writes go through `agora.transports.pipes`: non-blocking file descriptors on pipes,
no thread per operation. A line never holds more than one message's worth of bytes: an
oversize line is answered with an error and skipped. Lines are written whole, one at a
time. End of input ends the session as a shutdown ends the server: parked long-polls answer
at once, the other calls in flight get ``grace_seconds`` to answer, then are cancelled, so a
client that dies mid-wait does not leave the process (and its database lock) behind. A
`StopReading` (``agora stdio`` pulls it on SIGTERM or SIGINT) ends the input the same way
while the client still listens, so the calls in flight are answered before the process goes.
Nothing here knows about tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection
from agora.transports.pipes import READ_BYTES, Lines, Oversize, open_stdio

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.app import App, Endpoint


class StopReading:
    """Ends a stdio session's input as if the client had closed it (a graceful stop): no
    message is read after it, and what was read is served as at the end of input."""

    def __init__(self) -> None:
        self.pulled = False
        self._waiting: trio.CancelScope | None = None  # the read it cuts short

    def __call__(self) -> None:
        self.pulled = True
        if self._waiting is not None:
            self._waiting.cancel()

    async def read(self, receive: Any) -> bytes:
        """The next chunk of input: ``b""`` at its end or once pulled. Only the wait for
        input is cut short, never the serving of a message already read."""
        if self.pulled:
            return b""
        try:
            with trio.CancelScope() as self._waiting:
                chunk: bytes = await receive.receive_some(READ_BYTES)
                return chunk
        finally:
            self._waiting = None
        return b""  # pulled while waiting


async def serve_stdio(
    app: App,
    endpoint: Endpoint,
    principal: Principal,
    stdin: int | None = None,
    stdout: int | None = None,
    stop: StopReading | None = None,
) -> None:
    """Serve one session over stdin/stdout (or the given fds) until the input ends or
    ``stop`` is pulled.

    If stdout's reader goes away, nobody can hear the session any more: it ends at once,
    cancelling the calls in flight. At the end of input, long-polls are woken and the calls in
    flight get the configured ``grace_seconds`` before they are cancelled.
    """
    stop = stop or StopReading()
    async with open_stdio(stdin, stdout) as (receive, writer), trio.open_nursery() as calls:

        async def emit(message: dict[str, Any], related: rpc.RequestId | None) -> None:
            try:
                await writer.send(rpc.encode(message))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                calls.cancel_scope.cancel()

        conn = Connection(
            app,
            app.new_session(endpoint),
            emit,
            calls,
            principal=principal,
            endpoint=endpoint.params,
            local_client=True,
        )
        lines = Lines(rpc.MAX_MESSAGE_BYTES, rpc.OVERSIZE_HEAD_BYTES)
        while chunk := await stop.read(receive):
            for line in lines.feed(chunk):
                await _feed(conn, emit, line)
        last = lines.end()
        if last is not None and not stop.pulled:  # (cut short, a last line may be a part)
            await _feed(conn, emit, last)
        # The client is done or dead (a host killed with -9 closes both pipes): a 55 s wait
        # must not keep this process and its database lock until it times out.
        # Not `App.drain`: calls read just before the end may not have started yet, and this
        # nursery's exit waits for them too, which the app's count of calls in flight cannot.
        app.runtime.begin_shutdown()
        conn.end_listens()  # each listen stream gets its result, as at a server's shutdown
        calls.start_soon(_cut_off, app, conn, calls.cancel_scope)


async def _cut_off(app: App, conn: Connection, scope: trio.CancelScope) -> None:
    """The end of the input: the calls in flight get ``grace_seconds``; past it, the writes
    still waiting for their commit get their outcome and their calls answer (a write saved
    is never left without its reply: the client would take it for lost and repeat it), and
    then what still runs is cancelled."""
    with trio.move_on_after(app.config.grace_seconds):
        await conn.wait_finished()
        return
    await app.settle_commits()
    scope.cancel()


async def _feed(conn: Connection, emit: Any, line: bytes | Oversize) -> None:
    if isinstance(line, Oversize):  # refused with its id, if it has one: its call then fails
        rid = rpc.request_id_in(line.head)
        await emit(rpc.error(rid, rpc.INVALID_REQUEST, rpc.OVERSIZE_MESSAGE), rid)
    elif line.strip():
        await conn.feed_bytes(line)
