"""MCP over WebSocket against a real server: tools, bad input, limits, dead and stalled peers.

Every bad-input case checks the exact JSON-RPC error (or close code) and then that the same
connection, or at least the server, still answers.
"""

from __future__ import annotations

import contextlib
import json
import signal

import pytest
import trio
from e2e_http import raw_exchange
from e2e_mcp import CHESS_TOOLS, INITIALIZE, INITIALIZED, check_structured, nested
from e2e_websocket import OP_BINARY, OP_PING, OP_PONG, OP_TEXT, RawWebSocket
from trio_websocket import open_websocket_url

from agora.client import McpError, connect
from agora.mcp.jsonrpc import MAX_MESSAGE_BYTES

TIMEOUT = 15


async def assert_alive(port: int) -> None:
    """A fresh client can still initialize and call a tool."""
    async with connect(f"ws://127.0.0.1:{port}/mcp/chess") as client:
        result = await client.call_tool("get_board")
        assert result["structuredContent"]["table"] == "default"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/mcp", None, id="all-toolsets"),
        pytest.param("/mcp/chess", CHESS_TOOLS, id="chess"),
    ],
)
async def test_a_websocket_client_lists_and_calls_tools(agora, path, expected):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}{path}") as client:
            assert client.ws.subprotocol == "mcp"
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            if expected is not None:
                assert set(tools) == expected
            assert set(tools) >= CHESS_TOOLS
            result = await client.call_tool("get_board")
            check_structured(tools["get_board"], result)
            assert result["structuredContent"]["table"] == "default"
            assert await client.request("ping") == {}


def request(method: str, params: object = None, rid: int = 7) -> str:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


BAD_INPUT = [
    # (frame to send, expected error code, expected id)
    pytest.param("{not json", -32700, None, id="not-json"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', -32600, None, id="binary-frame"),
    pytest.param(request("ping", nested(65)), -32600, 7, id="params-depth-65"),
    pytest.param(json.dumps([json.loads(request("ping"))]), -32600, None, id="batch"),
    pytest.param(request("no/such/method"), -32601, 7, id="unknown-method"),
    pytest.param(request("tools/call", {"name": "no_such_tool"}), -32602, 7, id="unknown-tool"),
    pytest.param(request("tools/call", {"name": "get_board", "arguments": []}), -32602, 7,
                 id="arguments-not-an-object"),
    pytest.param('{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600, 7, id="wrong-version"),
    pytest.param('{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None, id="bool-id"),
    pytest.param('{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}', -32600, 7,
                 id="params-not-an-object"),
    # Whole JSON but for an unpaired surrogate escape: its id is read, so its call fails.
    pytest.param('{"jsonrpc":"2.0","id":7,"method":"p\\ud800"}', -32700, 7,
                 id="lone-surrogate"),
]  # fmt: skip


@pytest.mark.parametrize(("frame", "code", "rid"), BAD_INPUT)
async def test_bad_input_gets_a_json_rpc_error_and_the_connection_survives(agora, frame, code, rid):
    with trio.fail_after(TIMEOUT):
        async with open_websocket_url(f"ws://127.0.0.1:{agora.port}/mcp/chess") as ws:
            await ws.send_message(json.dumps(INITIALIZE))
            json.loads(await ws.get_message())
            await ws.send_message(json.dumps(INITIALIZED))
            await ws.send_message(frame)
            reply = json.loads(await ws.get_message())
            assert reply["error"]["code"] == code, reply
            assert reply["id"] == rid
            assert reply["error"]["message"]
            await ws.send_message(request("ping", rid=8))
            assert json.loads(await ws.get_message()) == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_params_sixty_four_deep_are_accepted(agora):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp") as client:
            assert await client.request("ping", nested(64)) == {}


async def test_unknown_notifications_are_ignored(agora):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp") as client:
            await client.notify("notifications/no_such_thing", {"x": 1})
            assert await client.request("ping") == {}
            assert client.notifications == []


async def test_tools_call_before_initialize_is_refused(agora):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp/chess", initialize=False) as client:
            with pytest.raises(McpError) as refused:
                await client.call_tool("get_board")
            assert refused.value.code == -32600
            assert "initialize" in refused.value.error["message"]
            assert await client.request("ping") == {}  # ping needs no handshake


async def test_wrong_argument_types_are_a_tool_error(agora):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp/chess") as client:
            result = await client.call_tool("move_piece", {"from": 5, "to": ["e4"]})
            assert result["isError"] is True
            text = result["content"][0]["text"]
            assert "'from': must be a string" in text
            assert "'to': must be a string" in text
            assert result["structuredContent"]["code"] == "INVALID_ARGUMENTS"
            assert (await client.call_tool("get_board"))["structuredContent"]


async def test_calls_in_flight_are_capped_per_connection_and_cancellable(agora):
    # Nobody has chosen sides on the default table: each of these long-polls parks.
    park = {"name": "wait_for_turn", "arguments": {"wait_for_human": True}}
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp/chess") as client:
            for rid in range(100, 140):
                await client.send(
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": park}
                )
            assert await client.request("ping") == {}  # in order: the refusals came first
            refused = {m["id"]: m["error"] for m in client.notifications}
            assert sorted(refused) == list(range(132, 140)), refused  # max_in_flight = 32
            assert {e["code"] for e in refused.values()} == {-32010}
            assert "in flight" in refused[132]["message"]
            for rid in range(100, 132):
                await client.notify("notifications/cancelled", {"requestId": rid})
            assert await client.request("ping") == {}
            assert (await client.call_tool("get_board"))["structuredContent"]
            assert len(client.notifications) == 8  # a cancelled call is never answered


async def test_a_message_at_the_size_limit_is_served(agora):
    envelope = len(request("ping", {"pad": ""}))
    exactly = request("ping", {"pad": "x" * (MAX_MESSAGE_BYTES - envelope)})
    assert len(exactly.encode()) == MAX_MESSAGE_BYTES
    with trio.fail_after(TIMEOUT):
        async with open_websocket_url(f"ws://127.0.0.1:{agora.port}/mcp") as ws:
            await ws.send_message(json.dumps(INITIALIZE))
            await ws.get_message()
            await ws.send_message(exactly)
            assert json.loads(await ws.get_message()) == {"jsonrpc": "2.0", "id": 7, "result": {}}


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param("x" * (MAX_MESSAGE_BYTES + 1000), id="over-by-1000"),
        # Fewer characters than the limit has bytes, but more bytes: the limit counts bytes.
        pytest.param("\u00e9" * (MAX_MESSAGE_BYTES // 2 + 1000), id="over-in-2-byte-chars"),
    ],
)
async def test_an_oversize_frame_closes_with_1009_and_the_server_survives(agora, payload):
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": payload}},
        ensure_ascii=False,
    ).encode()
    assert len(frame) > MAX_MESSAGE_BYTES
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(agora.port, "/mcp") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            with contextlib.suppress(trio.BrokenResourceError):  # closed while still sending
                await ws.send_frame(OP_TEXT, frame)
            assert await ws.close_code() == 1009
        await assert_alive(agora.port)


async def test_invalid_utf8_in_a_text_frame_drops_the_connection_not_the_server(agora):
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(agora.port, "/mcp") as ws:
            assert ws.status == 101
            await ws.send_json(INITIALIZE)
            assert (await ws.recv_json())["id"] == 0
            await ws.send_frame(OP_TEXT, b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff\xfe"}')
            assert await ws.close_code() == 1007  # RFC 6455: invalid frame payload data
            await assert_alive(agora.port)


async def test_invalid_utf8_in_a_binary_frame_is_refused(agora):
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(agora.port, "/mcp") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            await ws.send_frame(OP_BINARY, b"\xff\xfe\xfd")
            reply = await ws.recv_json()
            assert reply["error"]["code"] == -32600
            await ws.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            assert (await ws.recv_json())["id"] == 2


GARBAGE_UPGRADES = [
    # (request bytes, the status line the server must answer with, or None for a close)
    pytest.param(
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n",
        b"HTTP/1.1 400",
        id="no-key",
    ),
    pytest.param(
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n\r\n",
        b"HTTP/1.1 426",
        id="bad-version",
    ),
    pytest.param(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Content-Length: 0\r\n\r\n",
        b"HTTP/1.1 405",
        id="post",
    ),
    pytest.param(
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        b"\x8f\x80\x00\x00\x00\x00",  # a masked frame with a reserved opcode
        b"HTTP/1.1 101",
        id="bad-frame-after-upgrade",
    ),
    pytest.param(bytes(range(256)) * 4, b"HTTP/1.1 400", id="binary-noise"),
    pytest.param(
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n",
        b"HTTP/1.1 431",
        id="oversize-head",
    ),
    pytest.param(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpg", b"", id="truncated-head"),
]


@pytest.mark.parametrize(("data", "status"), GARBAGE_UPGRADES)
async def test_a_garbage_upgrade_does_not_hurt_the_server(agora, data, status):
    with trio.fail_after(TIMEOUT):
        if status:
            answer = await raw_exchange(agora.port, data)
        else:  # half a head, then the client goes away
            stream = await trio.open_tcp_stream("127.0.0.1", agora.port)
            await stream.send_all(data)
            await stream.aclose()
            answer = b""
        assert answer.startswith(status), answer[:200]
        await assert_alive(agora.port)


async def test_a_first_message_sent_with_the_upgrade_is_not_lost(agora):
    frame = bytearray(b"\x81")  # a masked text frame with a zero mask: the payload as is
    payload = json.dumps(INITIALIZE).encode()
    frame += bytes([0x80 | 126]) + len(payload).to_bytes(2, "big") + b"\x00" * 4 + payload
    head = (
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{agora.port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    with trio.fail_after(TIMEOUT):
        async with await trio.open_tcp_stream("127.0.0.1", agora.port) as stream:
            await stream.send_all(head + frame)  # one write: head and frame arrive together
            received = bytearray()
            while b"protocolVersion" not in received:
                chunk = await stream.receive_some(65536)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 101")


async def test_many_clients_coming_and_going_leave_the_server_healthy(agora):
    async def one(n: int) -> None:
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp/chess") as client:
            if n % 2:
                await client.call_tool("get_board")
        # half leave with a call answered, half straight after the handshake

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for n in range(50):
                nursery.start_soon(one, n)
        await assert_alive(agora.port)


async def test_a_client_that_vanishes_mid_call_does_not_hurt_the_server(agora):
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(agora.port, "/mcp/chess/vanish") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            await ws.send_json(INITIALIZED)
            await ws.send_json(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "wait_for_turn", "arguments": {"timeout_ms": 55000}},
                }
            )
            await ws.aclose()  # no close frame: the TCP connection just ends
            await assert_alive(agora.port)


# -- keepalive and stalled peers (a dedicated server with short timers) ------------------------


async def test_a_peer_that_ignores_pings_is_closed_and_a_quiet_one_is_not(start_agora):
    server = start_agora("ping_interval = 0.3")

    async def quiet() -> None:
        async with RawWebSocket.open(server.port, "/mcp") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            pings = 0
            while pings < 5:  # silent for five ping intervals, answering each ping
                frame = await ws.recv_frame()
                assert frame is not None
                assert frame[0] == OP_PING, frame
                await ws.send_frame(OP_PONG, frame[1])
                pings += 1
            await ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert (await ws.recv_json())["id"] == 1

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(quiet)
            async with RawWebSocket.open(server.port, "/mcp") as dead:
                await dead.send_json(INITIALIZE)
                await dead.recv_json()
                assert await dead.close_code() == 1011  # reads on but never answers a ping
        await server.wait_for_log("missed 2 pongs")
        await assert_alive(server.port)


async def test_a_peer_that_stops_reading_is_closed_and_others_are_unaffected(start_agora):
    server = start_agora("ping_interval = 0\nsend_timeout = 1.0")
    with trio.fail_after(TIMEOUT):
        # A 4 KiB receive window and ~25 KB per tools/list reply: the server's sends stall.
        async with RawWebSocket.open(server.port, "/mcp", receive_buffer=4096) as stalled:
            assert stalled.status == 101
            await stalled.send_json(INITIALIZE)
            async with trio.open_nursery() as nursery:

                async def flood() -> None:
                    for n in range(1, 400):
                        await stalled.send_json({"jsonrpc": "2.0", "id": n, "method": "tools/list"})

                nursery.start_soon(flood)
                async with connect(f"ws://127.0.0.1:{server.port}/mcp/chess") as other:
                    for _ in range(20):
                        assert (await other.call_tool("get_board"))["structuredContent"]
                    await server.wait_for_log("stopped reading; closing")
                    assert (await other.call_tool("get_board"))["structuredContent"]
                nursery.cancel_scope.cancel()
            # Once the server has given up, what is left in the pipe ends without a close reply.
            while (frame := await stalled.recv_frame()) is not None:
                assert frame[0] in (OP_TEXT, OP_PING), frame[0]
            await assert_alive(server.port)


async def test_server_shutdown_closes_websockets_with_1001_going_away(start_agora):
    server = start_agora()
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(server.port, "/mcp") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            server.signal(signal.SIGTERM)
            assert await ws.close_code() == 1001
        server.assert_clean_exit(await server.wait_exit())
