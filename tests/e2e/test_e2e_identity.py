"""Identity over real transports: bearer tokens on HTTP and the WebSocket handshake, stdio's
``AGORA_TOKEN``, and anonymous access when no token is sent."""

from __future__ import annotations

import json

import pytest
import trio
from e2e_config import TOKEN, write_config
from e2e_http import http
from e2e_mcp import INITIALIZE
from e2e_process import AGORA, clean_env
from e2e_websocket import RawWebSocket
from trio_websocket import ConnectionRejected

from agora.client import connect
from agora.mcp.jsonrpc import MAX_MESSAGE_BYTES

TIMEOUT = 15

REFUSED = [
    pytest.param("Bearer not-the-token", id="unknown-token"),
    pytest.param(f"Basic {TOKEN}", id="not-bearer"),
    pytest.param("Bearer", id="no-token-after-bearer"),
    pytest.param(f"Bearer {TOKEN.upper()}", id="wrong-case"),
]


@pytest.mark.parametrize("authorization", REFUSED)
async def test_a_bad_token_gets_401_over_http(agora, authorization):
    with trio.fail_after(TIMEOUT):
        reply = await http(
            agora.port, "POST", "/mcp/chess", INITIALIZE, headers={"authorization": authorization}
        )
        assert reply.status == 401, reply
        assert reply.headers["www-authenticate"].startswith("Bearer")
        assert "mcp-session-id" not in reply.headers
        # A chess agent token sent as a bearer is the likely mistake: the refusal says where
        # such a token goes.
        assert "goes in the endpoint URL as ?token=" in reply.json()["error"]["message"]


@pytest.mark.parametrize("authorization", REFUSED)
async def test_a_bad_token_gets_401_at_the_websocket_handshake(agora, authorization):
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(
            agora.port, "/mcp", headers={"Authorization": authorization}
        ) as ws:
            assert ws.status == 401


async def test_the_websocket_client_reports_the_401(agora):
    with trio.fail_after(TIMEOUT), pytest.raises(ConnectionRejected) as refused:
        async with connect(f"{agora.url}/mcp", token="not-the-token"):
            pass
    assert refused.value.status_code == 401


async def test_a_known_token_and_no_token_are_both_served(agora):
    with trio.fail_after(TIMEOUT):
        for token in (TOKEN, None):
            async with connect(f"{agora.url}/mcp/chess", token=token) as client:
                result = await client.call_tool("get_board")
                assert result["structuredContent"]["table"] == "default"


async def test_an_http_session_belongs_to_its_principal(agora):
    bearer = {"authorization": f"Bearer {TOKEN}"}
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", INITIALIZE, headers=bearer)
        assert reply.status == 200
        session = {
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        mine = await http(agora.port, "POST", "/mcp/chess", ping, headers=session | bearer)
        assert mine.status == 200
        theirs = await http(agora.port, "POST", "/mcp/chess", ping, headers=session)
        # The anonymous caller cannot ride the ops session, and learns no more of it than of
        # a session that does not exist (it was a 403 saying whose it was).
        assert theirs.status == 404
        assert b"Session not found" in theirs.body


def stdio_lines(*messages: object) -> bytes:
    return b"".join(
        (m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages
    )


async def run_stdio(tmp_path, stdin: bytes, **env: str) -> trio.Process:
    config = write_config(tmp_path)
    command = [AGORA, "stdio", "--toolset", "chess", "--db", str(tmp_path / "s.db"),
               "--config", str(config)]  # fmt: skip
    return await trio.run_process(
        command,
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=clean_env(**env),
    )


async def test_stdio_refuses_an_unknown_agora_token(tmp_path):
    with trio.fail_after(TIMEOUT):
        done = await run_stdio(tmp_path, stdio_lines(INITIALIZE), AGORA_TOKEN="not-the-token")
    assert done.returncode != 0
    assert b"AGORA_TOKEN does not match any principal" in done.stderr
    assert done.stdout == b""


@pytest.mark.parametrize("env", [{}, {"AGORA_TOKEN": TOKEN}], ids=["anonymous", "token"])
async def test_stdio_serves_newline_delimited_json_and_survives_bad_lines(tmp_path, env):
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_board"}}
    deep: dict[str, object] = {}
    for _ in range(64):  # 65 levels: one past the deepest params accepted
        deep = {"a": deep}
    stdin = stdio_lines(
        b"{not json",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}',
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"p":"'
        + b"x" * MAX_MESSAGE_BYTES
        + b'"}}',
        {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": deep},
        [{"jsonrpc": "2.0", "id": 5, "method": "ping"}],
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call,
    )
    with trio.fail_after(TIMEOUT):
        done = await run_stdio(tmp_path, stdin, **env)
    assert done.returncode == 0, done.stderr.decode()
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [r["error"]["code"] for r in replies if "error" in r]
    assert errors == [-32700, -32700, -32600, -32600, -32600], replies
    # The oversize line is refused with its id (read from its start), so its call can fail.
    assert [r["id"] for r in replies if "error" in r] == [None, None, 2, 4, None]
    by_id = {r["id"]: r for r in replies if "result" in r}
    assert by_id[0]["result"]["serverInfo"]["name"] == "agora"
    assert by_id[3]["result"]["structuredContent"]["table"] == "default"
    assert b"Traceback" not in done.stderr
