"""The official MCP SDK's client against a real `agora`: over stdio, or over MCP on WebSocket.

The SDK does the session, its requests and its checks; this module only wires its transports
to agora and must not check protocol behaviour itself.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
from e2e_process import AGORA, clean_env

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence


def sdk_stdio(args: Sequence[str], log: Any, read_timeout: float = 30.0) -> Any:
    """The official MCP SDK's client (an async context manager) over ``agora args`` run as
    its stdio server, whose stderr goes to ``log`` (an open file)."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    import mcp

    params = StdioServerParameters(command=AGORA, args=list(args), env=clean_env())
    return mcp.Client(
        stdio_client(params, errlog=log), mode="legacy", read_timeout_seconds=read_timeout
    )


@asynccontextmanager
async def sdk_websocket(url: str) -> AsyncIterator[Any]:
    """A transport for the official MCP SDK's client (``mcp.Client(sdk_websocket(url))``) over
    MCP on WebSocket: the SDK has no WebSocket client of its own, so this only moves each
    JSON-RPC message between one text frame and the SDK's streams; the session, its requests
    and its checks are the SDK's. The server closing the connection ends the SDK's read stream,
    as a broken pipe ends its stdio client's."""
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage
    from trio_websocket import ConnectionClosed, open_websocket_url

    to_sdk, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_sdk = anyio.create_memory_object_stream[Any](0)

    async with open_websocket_url(url, subprotocols=["mcp"]) as ws, trio.open_nursery() as pumps:

        async def receive() -> None:
            async with to_sdk:
                try:
                    while True:
                        text = await ws.get_message()
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            text, by_name=False
                        )
                        await to_sdk.send(SessionMessage(message))
                except (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return

        async def send() -> None:
            async with from_sdk:
                try:
                    async for item in from_sdk:
                        await ws.send_message(
                            item.message.model_dump_json(by_alias=True, exclude_unset=True)
                        )
                except ConnectionClosed:
                    await to_sdk.aclose()

        pumps.start_soon(receive)
        pumps.start_soon(send)
        try:
            yield read_stream, write_stream
        finally:
            pumps.cancel_scope.cancel()
