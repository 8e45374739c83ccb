"""The bridge against a scripted WebSocket server, in process: what a dropped connection
answers, a reconnection that fails half way, and the replayed handshake that keeps the stdio
client's session valid. stdin and stdout are pipes the test holds the other ends of."""

from __future__ import annotations

import json
import os
from typing import Any

import trio
import trio_websocket

from agora.bridge import Bridge

TIMEOUT = 20
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


def message(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


class Client:
    """The stdio client's ends of the bridge's pipes."""

    def __init__(self) -> None:
        self.in_r, in_w = os.pipe()
        out_r, self.out_w = os.pipe()
        self.stdin = trio.lowlevel.FdStream(in_w)
        self.stdout = trio.lowlevel.FdStream(out_r)
        self._buf = b""

    async def send(self, **fields: Any) -> None:
        await self.stdin.send_all(message(**fields))

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            chunk = await self.stdout.receive_some(65536)
            assert chunk, "the bridge closed its stdout"
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)  # type: ignore[no-any-return]


async def test_a_dropped_connection_is_answered_and_the_session_replayed(capsys):
    seen: list[list[dict[str, Any]]] = []
    ready = trio.Event()

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept(subprotocol="mcp")
        got: list[dict[str, Any]] = []
        seen.append(got)
        n = len(seen)

        async def next_message() -> dict[str, Any]:
            got.append(json.loads(await ws.get_message()))
            return got[-1]

        init = await next_message()
        if n == 2:
            await ws.aclose(1011)  # dies during the replayed handshake: try again
            return
        await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": init["id"], "result": {}}))
        await next_message()  # notifications/initialized
        if n == 1:
            level = await next_message()
            await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": level["id"], "result": {}}))
            await next_message()  # the client's call, never answered: the server goes away
            await ws.aclose(1001)
            return
        await next_message()  # logging/setLevel, replayed
        ready.set()
        call = await next_message()
        await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": {}}))
        with trio.move_on_after(TIMEOUT):
            await next_message()

    client = Client()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(
                trio_websocket.serve_websocket, handler, "127.0.0.1", 0, None
            )
            url = f"ws://127.0.0.1:{server.port}/mcp?token=secret"
            bridge = Bridge(url, None)
            nursery.start_soon(bridge.run, client.in_r, client.out_w)

            await client.send(id=1, method="initialize", params=INIT)
            assert await client.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            await client.send(method="notifications/initialized")
            await client.send(id="lvl", method="logging/setLevel", params={"level": "debug"})
            assert await client.receive() == {"jsonrpc": "2.0", "id": "lvl", "result": {}}
            await client.send(id=2, method="tools/call", params={"name": "slow"})
            lost = await client.receive()
            assert lost["id"] == 2
            assert lost["error"]["code"] == -32000
            assert "may or may not have taken effect" in lost["error"]["message"]

            await ready.wait()  # the third connection carries the session again
            await client.send(id=3, method="ping")
            assert await client.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}
            await client.stdin.aclose()  # end of input ends the bridge
            nursery.cancel_scope.cancel()

    first, second, third = seen
    assert [m.get("method") for m in first] == [
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "tools/call",
    ]
    assert second[0]["method"] == "initialize"
    assert isinstance(second[0]["id"], str)
    assert second[0]["params"] == INIT
    assert [m.get("method") for m in third] == [
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "ping",
    ]
    err = capsys.readouterr().err
    assert "lost the connection to ws://127.0.0.1" in err
    assert "reconnected to ws://127.0.0.1" in err
    assert "secret" not in err
    for fd in (client.in_r, client.out_w):
        os.close(fd)


async def test_a_call_while_the_server_is_away_is_answered_at_once():
    connections = 0

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        nonlocal connections
        connections += 1
        ws = await request.accept(subprotocol="mcp")
        await ws.aclose(1001)

    client = Client()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(
                trio_websocket.serve_websocket, handler, "127.0.0.1", 0, None
            )
            bridge = Bridge(f"ws://127.0.0.1:{server.port}/mcp", None)
            nursery.start_soon(bridge.run, client.in_r, client.out_w)
            await client.send(id=7, method="ping")  # the server closes every connection
            answer = await client.receive()
            assert answer["id"] == 7
            assert answer["error"]["code"] == -32000
            nursery.cancel_scope.cancel()
    assert connections >= 1
    for fd in (client.in_r, client.out_w):
        os.close(fd)
