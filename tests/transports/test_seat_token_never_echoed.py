"""A chess seat token typed in the wrong place is never echoed back.

A tester mistyped README's agent URL every way people do (``/default/token=T``, ``&token=T``,
a space, an unreachable port) and found the token printed in a 404 the bridge relays, in a
``TABLE_NOT_FOUND`` that goes to the model's transcript, in ``agora call``'s connection errors,
and a 60-line traceback for a space. Each now answers without it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio
from http_support import RawHttp, serve

from agora.client import connect

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

TIMEOUT = 20
SECRET = "Zq8SECRETx0TOKENw4"


async def test_a_404_never_echoes_a_token_typed_in_the_path():
    async with serve() as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request("GET", f"/mcp/chess/default/token={SECRET}")
    assert reply.status == 404
    assert SECRET.encode() not in reply.body
    assert reply.json()["error"] == "no such page: /mcp/chess/default/…"


async def test_a_table_named_by_a_mistyped_token_is_not_echoed_to_the_agent():
    async with serve() as server:
        url = f"http://127.0.0.1:{server.port}/mcp/chess/default&token={SECRET}"
        with trio.fail_after(TIMEOUT):
            async with mcp.Client(url) as client:
                result = await client.call_tool("get_board", {})
    assert result.is_error
    said = str(result.structured_content)
    assert SECRET not in said
    assert result.structured_content["statusCode"] == "TABLE_NOT_FOUND"
    assert "there is no chess table by that name (it is none)" in said


async def test_a_url_with_a_space_is_refused_in_one_line_without_its_query():
    with pytest.raises(ValueError, match="holds a space") as refused:
        async with connect(f"ws://127.0.0.1:9/mcp/chess/default ?token={SECRET}"):
            pass  # pragma: no cover - refused before
    assert SECRET not in str(refused.value)


def test_agora_call_never_prints_the_token_of_a_url_it_cannot_reach():
    done = subprocess.run(
        [sys.executable, "-m", "agora", "call", f"ws://127.0.0.1:9/mcp/chess/default?token={SECRET}",
         "get_board", "{}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert SECRET not in done.stderr
    assert "cannot connect to ws://127.0.0.1:9/mcp/chess/default?…" in done.stderr
