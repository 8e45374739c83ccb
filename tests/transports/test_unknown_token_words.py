"""An unknown bearer token's 401 says what to do on the server it reached.

A tester ran README's "From Python" example (it sends ``AGORA_TOKEN``) against a plain
``agora serve``, which has no ``[[principals]]``, and read that Authorization carries "the
token of a principal of the server's [[principals]]": there are none, and the fix is to send
no token. A server with principals keeps its words.
"""

from __future__ import annotations

import pytest
import trio
from http_support import TOKEN_SHA256, RawHttp, serve

from agora.config import PrincipalConfig

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

TIMEOUT = 20
WITH_PRINCIPALS = "a principal of the server's [[principals]]"
NO_PRINCIPALS = "this server has no [[principals]], so it knows no token: send none"


async def _sdk_refusal(url: str) -> str:
    """The official SDK's error for connecting to ``url`` with an unknown bearer token."""
    headers = {"Authorization": "Bearer mytoken"}
    with trio.fail_after(TIMEOUT), pytest.raises((MCPError, BaseExceptionGroup)) as refused:
        async with (
            create_mcp_http_client(headers=headers) as http,
            mcp.Client(streamable_http_client(url, http_client=http)) as client,
        ):
            await client.list_tools()
    exc = refused.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # (the SDK's task groups wrap it)
    assert isinstance(exc, MCPError), repr(exc)
    return str(exc)


async def _raw_refusals(port: int) -> list[str]:
    """The 401s of an MCP endpoint (JSON-RPC) and of a page (JSON) to ``Bearer mytoken``."""
    said = []
    with trio.fail_after(TIMEOUT):
        async with RawHttp.open(port) as client:
            reply = await client.request("POST", "/mcp", {}, {"authorization": "Bearer mytoken"})
            assert reply.status == 401, reply
            said.append(reply.json()["error"]["message"])
        async with RawHttp.open(port) as client:
            reply = await client.request("GET", "/play", headers={"authorization": "Bearer x"})
            assert reply.status == 401, reply
            said.append(reply.json()["error"])
    return said


async def test_without_principals_the_401_says_to_send_no_token():
    async with serve() as server:
        said = [await _sdk_refusal(f"{server.url}/mcp/chess"), *await _raw_refusals(server.port)]
    for message in said:
        assert "unknown bearer token" in message, message
        assert NO_PRINCIPALS in message, message
        assert "unset AGORA_TOKEN" in message, message
        assert WITH_PRINCIPALS not in message, message


async def test_with_principals_the_401_names_them():
    async with serve(principals=[PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]) as server:
        said = [await _sdk_refusal(f"{server.url}/mcp/chess"), *await _raw_refusals(server.port)]
    for message in said:
        assert WITH_PRINCIPALS in message, message
        assert NO_PRINCIPALS not in message, message
