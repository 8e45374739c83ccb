"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

Reads run in a worker thread (stdin is not pollable everywhere) and never hold more than one
message's worth of bytes: an oversize line is answered with an error and skipped. Writes are
serialized by a lock. End of input ends the session after the calls in flight have answered.
Nothing here knows about tools.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import trio

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.app import App, Endpoint

#: One message plus its newline (and a CR, for peers that send CRLF).
_LINE_LIMIT = rpc.MAX_MESSAGE_BYTES + 2


async def serve_stdio(
    app: App,
    endpoint: Endpoint,
    principal: Principal,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> None:
    """Serve one session over the process's stdin/stdout until stdin closes."""
    rin = stdin or sys.stdin.buffer
    wout = stdout or sys.stdout.buffer
    lock = trio.Lock()

    async def emit(message: dict[str, Any], related: rpc.RequestId | None) -> None:
        data = rpc.encode(message) + b"\n"
        async with lock:
            await trio.to_thread.run_sync(_write, wout, data)

    async with trio.open_nursery() as calls:
        conn = Connection(
            app,
            app.new_session(endpoint),
            emit,
            calls,
            principal=principal,
            endpoint=endpoint.params,
        )
        while True:
            line = await trio.to_thread.run_sync(_read_line, rin, abandon_on_cancel=True)
            if line is None:
                break
            if len(line) > rpc.MAX_MESSAGE_BYTES:
                message = f"message larger than {rpc.MAX_MESSAGE_BYTES} bytes"
                await emit(rpc.error(None, rpc.INVALID_REQUEST, message), None)
                continue
            if line.strip():
                await conn.feed_bytes(line)


def _read_line(rin: BinaryIO) -> bytes | None:
    """The next line without its newline; None at end of input.

    A line longer than the limit is consumed to its end and returned truncated to
    ``_LINE_LIMIT`` bytes, so the caller sees it is too long without holding all of it.
    """
    line = rin.readline(_LINE_LIMIT)
    if not line:
        return None
    if line.endswith(b"\n"):
        return line.rstrip(b"\r\n")
    if len(line) < _LINE_LIMIT:
        return line  # the last line, without a newline
    while True:  # skip the rest of an oversize line
        rest = rin.readline(_LINE_LIMIT)
        if not rest or rest.endswith(b"\n"):
            return line


def _write(out: BinaryIO, data: bytes) -> None:
    out.write(data)
    out.flush()
