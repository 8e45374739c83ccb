"""MCP over stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

Reads run in a worker thread (stdin is not pollable everywhere); writes are serialized by
a lock. End of input ends the session after the calls in flight have answered.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import trio

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection

if TYPE_CHECKING:
    from agora.server.app import App, Endpoint
    from agora.toolsets.base import Principal


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
            line = await trio.to_thread.run_sync(rin.readline, abandon_on_cancel=True)
            if not line:
                break
            if len(line) > rpc.MAX_MESSAGE_BYTES + 1:
                await emit(rpc.error(None, rpc.INVALID_REQUEST, "message too large"), None)
                continue
            if line.strip():
                await conn.feed_bytes(line)


def _write(out: BinaryIO, data: bytes) -> None:
    out.write(data)
    out.flush()
