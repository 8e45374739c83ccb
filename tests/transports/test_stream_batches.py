"""JSON-RPC batches on stdio and WebSocket sessions negotiated at MCP 2025-03-26.

That revision says implementations "MUST support receiving JSON-RPC batches", as Streamable
HTTP already did here: a batch's requests are answered with one JSON array, a batch with
nothing to answer gets no reply, an empty one is an Invalid Request; a call cancelled before
its answer is left out of the array. A session at a later revision still refuses batches.
"""

from __future__ import annotations

import json
import os
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from _ws_peer import WsPeer
from http_support import INITIALIZE, call, serve
from wsproto.events import Message

from agora.transports.stdio import serve_stdio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.server.embed import Server

TIMEOUT = 300  # mock seconds
PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real pipes need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


class Peer:
    """A client of one stream transport: JSON out, JSON in, one message at a time."""

    def __init__(self, send: Any, receive: Any) -> None:
        self.send, self.receive = send, receive

    async def send_json(self, message: Any) -> None:
        await self.send(json.dumps(message))

    async def recv_json(self) -> Any:
        return await self.receive()


@asynccontextmanager
async def websocket(server: Server) -> AsyncIterator[Peer]:
    async with WsPeer.open(server.port, "/mcp/probe") as ws:

        async def send(text: str) -> None:
            await ws.stream.send_all(ws.ws.send(Message(data=text)))

        yield Peer(send, ws.recv_json)


@asynccontextmanager
async def stdio(server: Server) -> AsyncIterator[Peer]:
    """A stdio session of ``server`` on two pipes, served in this process."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    endpoint = server.app.endpoint("/mcp/probe")
    assert endpoint is not None
    try:
        async with (
            trio.lowlevel.FdStream(in_w) as to_server,  # (the streams own and close these)
            trio.lowlevel.FdStream(out_r) as from_server,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(serve_stdio, server.app, endpoint, server.app.anonymous, in_r, out_w)
            buffered = bytearray()

            async def send(text: str) -> None:
                await to_server.send_all(text.encode() + b"\n")

            async def receive() -> Any:
                while b"\n" not in buffered:
                    buffered.extend(await from_server.receive_some(65536))
                line, _, rest = bytes(buffered).partition(b"\n")
                buffered[:] = rest
                return json.loads(line)

            yield Peer(send, receive)
            await to_server.aclose()  # the end of input ends the session
    finally:
        for fd in (in_r, out_w):  # (the server reads and writes copies of its ends)
            os.close(fd)


TRANSPORTS = [pytest.param(websocket, id="websocket"), pytest.param(stdio, id="stdio")]


@asynccontextmanager
async def session_at(transport: Any, version: str) -> AsyncIterator[Peer]:
    async with serve() as server, transport(server) as peer:
        hello = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
        await peer.send_json(hello)
        assert (await peer.recv_json())["result"]["protocolVersion"] == version
        await peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield peer


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_batch_of_requests_is_answered_with_one_array(clock, transport):
    with trio.fail_after(TIMEOUT):
        async with session_at(transport, "2025-03-26") as peer:
            await peer.send_json([PING, call("echo", 6), {"jsonrpc": "2.0", "id": 7}])
            answers = await peer.recv_json()
            assert isinstance(answers, list)
            assert len(answers) == 3
            by_id = {answer["id"]: answer for answer in answers}
            assert by_id[5]["result"] == {}
            assert by_id[6]["result"]["structuredContent"] == {"echo": {}}
            assert by_id[None]["error"]["code"] == -32600  # the bad element, on its own
            # Single messages still work.
            await peer.send_json(call("echo", 8))
            assert (await peer.recv_json())["id"] == 8


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_batch_with_nothing_to_answer_gets_no_reply(clock, transport):
    with trio.fail_after(TIMEOUT):
        async with session_at(transport, "2025-03-26") as peer:
            notices = [
                {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
            ]
            await peer.send_json(notices)
            await peer.send_json(PING)
            assert await peer.recv_json() == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_empty_batch_is_an_invalid_request(clock, transport):
    with trio.fail_after(TIMEOUT):
        async with session_at(transport, "2025-03-26") as peer:
            await peer.send_json([])
            answer = await peer.recv_json()
            assert answer["id"] is None
            assert answer["error"]["code"] == -32600


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_cancelled_in_a_batch_is_left_out_of_its_array(clock, transport):
    with trio.fail_after(TIMEOUT):
        async with session_at(transport, "2025-03-26") as peer:
            await peer.send_json([call("hang", 10), PING])
            await trio.sleep(1)
            cancel = {"requestId": 10, "reason": "no longer needed"}
            await peer.send_json(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            assert await peer.recv_json() == [{"jsonrpc": "2.0", "id": 5, "result": {}}]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_later_revision_still_refuses_batches(clock, transport):
    with trio.fail_after(TIMEOUT):
        async with session_at(transport, "2025-06-18") as peer:
            await peer.send_json([PING])
            answer = await peer.recv_json()
            assert answer["error"]["code"] == -32600
            assert "batches are not supported" in answer["error"]["message"]
