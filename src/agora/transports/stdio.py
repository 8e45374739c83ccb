"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

Reads and writes go through `agora.transports.pipes`: non-blocking file descriptors on pipes,
no thread per operation. A line never holds more than one message's worth of bytes: an
oversize line is answered with an error and skipped. Lines are written whole, one at a
time. End of input ends the session as a shutdown ends the server: parked long-polls answer
at once, the other calls in flight get ``grace_seconds`` to answer, then are cancelled, so a
client that dies mid-wait does not leave the process (and its database lock) behind. Nothing
here knows about tools.
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


async def serve_stdio(
    app: App,
    endpoint: Endpoint,
    principal: Principal,
    stdin: int | None = None,
    stdout: int | None = None,
) -> None:
    """Serve one session over stdin/stdout (or the given fds) until the input ends.

    If stdout's reader goes away, nobody can hear the session any more: it ends at once,
    cancelling the calls in flight. At the end of input, long-polls are woken and the calls in
    flight get the configured ``grace_seconds`` before they are cancelled.
    """
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
        )
        lines = Lines(rpc.MAX_MESSAGE_BYTES, rpc.OVERSIZE_HEAD_BYTES)
        while chunk := await receive.receive_some(READ_BYTES):
            for line in lines.feed(chunk):
                await _feed(conn, emit, line)
        last = lines.end()
        if last is not None:
            await _feed(conn, emit, last)
        # The client is done or dead (a host killed with -9 closes both pipes): a 55 s wait
        # must not keep this process and its database lock until it times out.
        # Not `App.drain`: calls read just before the end may not have started yet, and this
        # nursery's exit waits for them too, which the app's count of calls in flight cannot.
        app.runtime.begin_shutdown()
        calls.cancel_scope.deadline = trio.current_time() + app.config.grace_seconds


async def _feed(conn: Connection, emit: Any, line: bytes | Oversize) -> None:
    if isinstance(line, Oversize):  # refused with its id, if it has one: its call then fails
        rid = rpc.request_id_in(line.head)
        await emit(rpc.error(rid, rpc.INVALID_REQUEST, rpc.OVERSIZE_MESSAGE), rid)
    elif line.strip():
        await conn.feed_bytes(line)
