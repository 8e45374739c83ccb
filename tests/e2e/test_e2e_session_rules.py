"""Rules of a session that every transport applies alike, against real servers.

A request that reuses the id of a call still running is refused with ``duplicate request
id``, and so is a second ``initialize`` on a session: over WebSocket, stdio and HTTP.
"""

from __future__ import annotations

import json

import trio
from e2e_config import TOKEN, write_config
from e2e_http import http
from e2e_mcp import INITIALIZE
from e2e_process import AGORA, clean_env

from agora.client import connect

TIMEOUT = 15
#: Parks: nobody has chosen sides on the default table, so the call waits for the human.
PARK = {"name": "wait_for_turn", "arguments": {"wait_for_human": True}}
DUPLICATE = {"code": -32600, "message": "duplicate request id"}


async def test_websocket_refuses_a_running_id_and_a_second_initialize(agora):
    with trio.fail_after(TIMEOUT):
        async with connect(f"ws://127.0.0.1:{agora.port}/mcp/chess") as client:
            await client.send({"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": PARK})
            await client.send({"jsonrpc": "2.0", "id": 900, "method": "ping"})
            await client.send({**INITIALIZE, "id": 901})
            assert await client.request("ping") == {}  # in order: both answers came first
            assert client.notifications == [
                {"jsonrpc": "2.0", "id": 900, "error": DUPLICATE},
                {
                    "jsonrpc": "2.0",
                    "id": 901,
                    "error": {
                        "code": -32600,
                        "message": "session already initialized: initialize is sent once "
                        "per session",
                    },
                },
            ]
            await client.notify("notifications/cancelled", {"requestId": 900})
            assert (await client.call_tool("get_board"))["structuredContent"]


async def test_stdio_refuses_a_running_id_and_a_second_initialize(tmp_path):
    lines = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": PARK},
        {"jsonrpc": "2.0", "id": 900, "method": "ping"},
        {**INITIALIZE, "id": 901},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 900}},
    ]
    command = [AGORA, "stdio", "--toolset", "chess", "--db", str(tmp_path / "s.db"),
               "--config", str(write_config(tmp_path))]  # fmt: skip
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            command,
            stdin=b"".join(json.dumps(m).encode() + b"\n" for m in lines),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=clean_env(),
        )
    assert done.returncode == 0, done.stderr.decode()
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 900, 901], replies
    assert replies[1]["error"] == DUPLICATE
    assert replies[2]["error"]["code"] == -32600
    assert "already initialized" in replies[2]["error"]["message"]


async def test_http_refuses_a_second_initialize_on_a_session(agora):
    bearer = {"authorization": f"Bearer {TOKEN}"}
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", INITIALIZE, headers=bearer)
        assert reply.status == 200
        session = {"mcp-session-id": reply.headers["mcp-session-id"]} | bearer
        again = await http(agora.port, "POST", "/mcp/chess", INITIALIZE, headers=session)
        assert again.status == 400
        assert again.json()["error"]["code"] == -32600
