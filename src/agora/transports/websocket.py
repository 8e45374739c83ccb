"""MCP over WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp``.

The HTTP front end has already checked the path, Host/Origin and the bearer token; this
module completes the handshake with trio-websocket, then runs one reader loop and a
keepalive. A peer that misses pongs, sends oversize frames, or stops reading is closed;
nobody else notices. Every connection has its own nursery and is closed in ``finally``.
Nothing here knows about tools.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio
from trio_websocket import ConnectionClosed, wrap_server_stream

from agora.mcp import jsonrpc as rpc
from agora.server.connection import Connection, Emit

if TYPE_CHECKING:
    from trio_websocket import WebSocketConnection

    from agora.server.app import App, Endpoint
    from agora.toolsets.base import Principal
    from agora.transports.replay import ReplayStream

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
#: Seconds a close handshake may take before the stream is dropped.
CLOSE_TIMEOUT = 1.0
#: Close code for a frame over the size limit (RFC 6455 "message too big").
MESSAGE_TOO_BIG = 1009
#: Close code for a peer that stopped answering pings.
PING_TIMEOUT = 1011
#: UTF-8 needs at most this many bytes per character: a shorter text frame is within limits.
_MAX_UTF8 = 4


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
                stream.release()
                nursery.start_soon(_session, app, ws, endpoint, principal, nursery.cancel_scope)
                if app.config.ping_interval > 0:
                    nursery.start_soon(_keepalive, ws, app.config.ping_interval)
                return
            nursery.cancel_scope.cancel()  # the handshake did not finish in time
        except ConnectionClosed:
            nursery.cancel_scope.cancel()
        finally:
            if nursery.cancel_scope.cancel_called:
                with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
                    await stream.aclose()


async def _session(
    app: App,
    ws: WebSocketConnection,
    endpoint: Endpoint,
    principal: Principal,
    scope: trio.CancelScope,
) -> None:
    send_timeout = app.config.send_timeout

    async def emit(message: dict[str, Any], related: rpc.RequestId | None) -> None:
        # Runs in the reader and in call tasks: a peer that is gone or stalled ends the
        # whole connection here rather than failing one call task.
        try:
            with trio.move_on_after(send_timeout) as slow:
                await ws.send_message(rpc.encode(message).decode())
        except ConnectionClosed:
            scope.cancel()
            return
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
                await _read(ws, conn, emit)
            except ConnectionClosed:
                pass
            finally:
                conn.cancel_all()
    finally:
        scope.cancel()
        with trio.CancelScope(shield=True):
            await _close(ws, 1000, None)


async def _read(ws: WebSocketConnection, conn: Connection, emit: Emit) -> None:
    while True:
        message = await ws.get_message()
        if isinstance(message, bytes):
            await emit(rpc.error(None, rpc.INVALID_REQUEST, "send text frames"), None)
            continue
        # trio-websocket counts characters; the limit is in bytes.
        if len(message) * _MAX_UTF8 > rpc.MAX_MESSAGE_BYTES:
            size = len(message.encode())
            if size > rpc.MAX_MESSAGE_BYTES:
                reason = f"message larger than {rpc.MAX_MESSAGE_BYTES} bytes"
                await _close(ws, MESSAGE_TOO_BIG, reason)
                return
        await conn.feed_bytes(message)


async def _close(ws: WebSocketConnection, code: int, reason: str | None) -> None:
    # A dead or stalled peer never answers the close frame: do not wait for it forever.
    with trio.move_on_after(CLOSE_TIMEOUT):
        await ws.aclose(code=code, reason=reason)


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
                log.info("websocket peer %s missed %d pongs; closing", ws.remote, missed)
                await _close(ws, PING_TIMEOUT, "ping timeout")
                return
    except ConnectionClosed:
        return
