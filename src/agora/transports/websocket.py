"""MCP over WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``.

The HTTP front end has already checked the path and the bearer token; this module completes
the handshake with trio-websocket, then runs one reader loop and a keepalive. A peer that
misses pongs, sends binary or oversize frames, or stops reading is closed; nobody else
notices. Every connection has its own nursery and is closed in ``finally``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio
from trio_websocket import ConnectionClosed, wrap_server_stream

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection

if TYPE_CHECKING:
    from trio_websocket import WebSocketConnection

    from agora.server.app import App, Endpoint
    from agora.toolsets.base import Principal
    from agora.transports.replay import ReplayStream

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
#: A peer that does not take a message within this many seconds is closed.
SEND_TIMEOUT = 30.0


async def serve_websocket(
    app: App, stream: ReplayStream, endpoint: Endpoint, principal: Principal
) -> None:
    """Serve one WebSocket connection until either side closes it."""
    async with trio.open_nursery() as nursery:
        try:
            with trio.move_on_after(HANDSHAKE_TIMEOUT):
                request = await wrap_server_stream(
                    nursery, stream, max_message_size=rpc.MAX_MESSAGE_BYTES
                )
                sub = "mcp" if "mcp" in request.proposed_subprotocols else None
                ws = await request.accept(subprotocol=sub)
                nursery.start_soon(_session, app, ws, endpoint, principal, nursery.cancel_scope)
                nursery.start_soon(_keepalive, ws, app.config.ping_interval)
                return
            nursery.cancel_scope.cancel()  # the handshake did not finish in time
        except ConnectionClosed:
            nursery.cancel_scope.cancel()
        finally:
            if nursery.cancel_scope.cancel_called:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await stream.aclose()


async def _session(
    app: App,
    ws: WebSocketConnection,
    endpoint: Endpoint,
    principal: Principal,
    scope: trio.CancelScope,
) -> None:
    async def emit(message: dict[str, Any], related: rpc.RequestId | None) -> None:
        with trio.move_on_after(SEND_TIMEOUT) as slow:
            await ws.send_message(rpc.encode(message).decode())
        if slow.cancelled_caught:
            log.info("websocket peer %s stopped reading; closing", ws.remote)
            scope.cancel()

    try:
        async with trio.open_nursery() as calls:
            conn = Connection(
                app,
                app.new_session(endpoint),
                emit,
                calls,
                principal=principal,
                endpoint=endpoint.params,
            )
            try:
                while True:
                    message = await ws.get_message()
                    if isinstance(message, bytes):
                        await emit(rpc.error(None, rpc.INVALID_REQUEST, "send text frames"), None)
                        continue
                    await conn.feed_bytes(message)
            finally:
                conn.cancel_all()
    except ConnectionClosed:
        pass
    finally:
        scope.cancel()
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await ws.aclose()


async def _keepalive(ws: WebSocketConnection, interval: float) -> None:
    # A peer that answers pings is alive however quiet it is; one that misses two in a row
    # is not, and is closed so its calls and memory are released.
    missed = 0
    try:
        while True:
            await trio.sleep(interval)
            with trio.move_on_after(interval) as late:
                await ws.ping()
            missed = missed + 1 if late.cancelled_caught else 0
            if missed >= 2:
                await ws.aclose(code=1011, reason="ping timeout")
                return
    except ConnectionClosed:
        return
