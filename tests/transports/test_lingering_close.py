"""Refusals that the peer can read: a lingering close after 413, 431 and WebSocket 1009.

A client still sending a body, a head or a frame that the server refused must read the
refusal and then a clean end of stream, not a TCP reset. Each client here sends everything
first and reads afterwards, as most clients do; real sockets on loopback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio
from _ws_peer import WsPeer
from wsproto.events import Message

from agora.config import Config
from agora.mcp.jsonrpc import MAX_MESSAGE_BYTES
from agora.server.embed import open_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.server.embed import Server

TIMEOUT = 15
#: A body or frame the server refuses, whole: past the message limit by a good margin.
OVER = MAX_MESSAGE_BYTES + (1 << 20)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with open_server(Config(db=":memory:", port=0, ping_interval=0)) as running:
        yield running


async def send_then_read(port: int, data: bytes) -> bytes:
    """Send ``data`` whole, then read to the end; a reset on either side fails the test."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(data)
        received = bytearray()
        while chunk := await stream.receive_some(65536):
            received += chunk
        return bytes(received)


async def test_an_oversize_body_reads_413_then_a_clean_close(server):
    head = (
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {OVER}\r\n\r\n"
    )
    with trio.fail_after(TIMEOUT):
        answer = await send_then_read(server.port, head.encode() + b"x" * OVER)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


async def test_a_100kb_header_line_reads_431_then_a_clean_close(server):
    head = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: " + b"y" * 100_000 + b"\r\n\r\n"
    with trio.fail_after(TIMEOUT):
        answer = await send_then_read(server.port, head)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


async def test_an_oversize_frame_reads_1009_then_a_clean_close(server):
    with trio.fail_after(TIMEOUT):
        async with WsPeer.open(server.port, "/mcp") as peer:
            await peer.stream.send_all(peer.ws.send(Message(data="x" * OVER)))
            assert await peer.close_code() == 1009
            assert await peer.stream.receive_some(65536) == b""
