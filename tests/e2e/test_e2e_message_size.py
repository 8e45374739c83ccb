"""Message size, as the official SDK's client lives it, on stdio, the stdio bridge and HTTP.

A request over the limit fails at once with the reason (the refusal carries the request's
id: with a null id the SDK cannot tell which call it answers, and the call would wait for
ever); the session goes on. A request larger than 64 KiB but within the limit, as the
contracts allow (a debate post of a 32,768-character body and payload), is taken whole: it
reaches the tool, whose schema then judges it.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from e2e_config import TOKEN
from e2e_sdk import sdk_stdio

from agora.mcp.jsonrpc import MAX_MESSAGE_BYTES

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: Long enough for a refusal; far shorter than the read timeout a lost answer would wait out.
PROMPT = 15
READ_TIMEOUT = 120


async def refused_then_served(client: Any) -> None:
    with trio.fail_after(PROMPT), pytest.raises(MCPError) as refused:
        await client.call_tool("get_board", {"pad": "x" * MAX_MESSAGE_BYTES})
    assert f"larger than {MAX_MESSAGE_BYTES} bytes" in str(refused.value)
    with trio.fail_after(PROMPT):
        # Over 64 KiB, within the limit: the tool's schema answers (get_board takes no "pad").
        big = await client.call_tool("get_board", {"pad": "\U0001f600" * 70_000})
        assert big.is_error
        assert "pad" in big.content[0].text
        assert (await client.call_tool("get_board", {})).structured_content["table"] == "default"


async def test_stdio(tmp_path):
    args = ["stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db")]
    with (tmp_path / "stdio.log").open("w") as log:
        async with sdk_stdio(args, log, READ_TIMEOUT) as client:
            await refused_then_served(client)


async def test_the_stdio_bridge(agora, tmp_path):
    url = f"ws://127.0.0.1:{agora.port}/mcp/chess"
    with (tmp_path / "bridge.log").open("w") as log:
        async with sdk_stdio(["stdio", "--connect", url, "--token", TOKEN], log, READ_TIMEOUT) as c:
            await refused_then_served(c)


async def test_streamable_http(agora):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with create_mcp_http_client(headers=headers) as http_client:
        transport = streamable_http_client(f"{agora.url}/mcp/chess", http_client=http_client)
        async with mcp.Client(transport, read_timeout_seconds=READ_TIMEOUT) as client:
            await refused_then_served(client)
