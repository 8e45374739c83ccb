"""Streamable HTTP at 2026-07-28: the standard request headers a POST must carry.

``MCP-Protocol-Version`` and ``Mcp-Method`` on every request, and ``Mcp-Name`` on those that
name their target (``tools/call`` and ``prompts/get``: ``params.name``; ``resources/read``:
``params.uri``), each equal to the body's value (``Mcp-Name`` may come Base64-encoded as
``=?base64?...?=``); a request that breaks the rule gets 400 with JSON-RPC error -32020.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
import trio.testing
from http_support import MODERN, MODERN_META, RawHttp, serve

TIMEOUT = 300  # mock seconds
HEADER_MISMATCH = -32020


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


def request(method: str, rid: int = 1, **params: Any) -> dict[str, Any]:
    """A 2026-07-28 request: ``params`` and the envelope."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**params, "_meta": MODERN_META},
    }


def headers(method: str, **extra: str) -> dict[str, str]:
    """The standard headers of a 2026-07-28 request for ``method`` (``name``: Mcp-Name)."""
    out = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in extra:
        out["mcp-name"] = extra.pop("name")
    return out | extra


def encoded(value: str) -> str:
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


TOOL = request("tools/call", name="test_simple_text", arguments={})
READ = request("resources/read", uri="test://static-text")
PROMPT = request("prompts/get", name="test_simple_prompt")

REFUSED = [
    pytest.param(TOOL, headers("tools/call"), id="tools/call-without-mcp-name"),
    pytest.param(TOOL, headers("tools/call", name="other_tool"), id="tools/call-other-name"),
    pytest.param(TOOL, headers("tools/call", name=encoded("other")), id="tools/call-encoded-other"),
    pytest.param(TOOL, headers("tools/call", name="=?base64?!!?="), id="tools/call-bad-base64"),
    pytest.param(READ, headers("resources/read"), id="resources/read-without-mcp-name"),
    pytest.param(READ, headers("resources/read", name="test://other"), id="resources/read-other"),
    pytest.param(PROMPT, headers("prompts/get"), id="prompts/get-without-mcp-name"),
    pytest.param(PROMPT, headers("prompts/get", name="x"), id="prompts/get-other-name"),
    pytest.param(TOOL, {"mcp-protocol-version": MODERN}, id="without-mcp-method"),
    pytest.param(TOOL, headers("tools/list", name="test_simple_text"), id="other-mcp-method"),
    pytest.param(
        TOOL, {"mcp-method": "tools/call", "mcp-name": "test_simple_text"}, id="no-mcp-pv"
    ),
]


@pytest.mark.parametrize(("body", "sent"), REFUSED)
async def test_a_missing_or_mismatched_standard_header_gets_400_and_32020(
    clock, body: dict[str, Any], sent: dict[str, str]
):
    async with serve(toolsets=["conformance"]) as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request("POST", "/mcp/conformance", body, sent)
    assert reply.status == 400, reply
    assert reply.headers["content-type"] == "application/json", reply
    answer = reply.json()
    assert answer["id"] == 1, answer
    assert answer["error"]["code"] == HEADER_MISMATCH, answer


ACCEPTED = [
    pytest.param(TOOL, headers("tools/call", name="test_simple_text"), id="tools/call"),
    pytest.param(TOOL, headers("tools/call", name=encoded("test_simple_text")), id="encoded"),
    pytest.param(READ, headers("resources/read", name="test://static-text"), id="resources/read"),
    pytest.param(PROMPT, headers("prompts/get", name="test_simple_prompt"), id="prompts/get"),
    pytest.param(request("tools/list"), headers("tools/list"), id="tools/list-names-nothing"),
]


@pytest.mark.parametrize(("body", "sent"), ACCEPTED)
async def test_matching_standard_headers_are_served(
    clock, body: dict[str, Any], sent: dict[str, str]
):
    async with serve(toolsets=["conformance"]) as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request("POST", "/mcp/conformance", body, sent)
    assert reply.status == 200, reply
    assert "result" in reply.json(), reply
