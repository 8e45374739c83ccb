"""Streamable HTTP at 2026-07-28: the standard request headers a POST must carry.

``MCP-Protocol-Version`` and ``Mcp-Method`` on every request, and ``Mcp-Name`` on those that
name their target (``tools/call`` and ``prompts/get``: ``params.name``; ``resources/read``:
``params.uri``), each equal to the body's value (``Mcp-Name`` may come Base64-encoded as
``=?base64?...?=``); a request that breaks the rule gets 400 with JSON-RPC error -32020. A
JSON answer that is an error has the HTTP status the revision gives its code (404 for an
unknown method, 400 for a malformed request); a handshake session's stay 200.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
import trio.testing
from http_support import MODERN, MODERN_META, RawHttp, call, open_session, serve

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


async def _post(body: dict[str, Any], sent: dict[str, str]) -> Any:
    """POST ``body`` with the headers ``sent`` to a fresh server's conformance endpoint."""
    async with serve(toolsets=["conformance"]) as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            return await client.request("POST", "/mcp/conformance", body, sent)


@pytest.mark.parametrize(("body", "sent"), REFUSED)
async def test_a_missing_or_mismatched_standard_header_gets_400_and_32020(
    clock, body: dict[str, Any], sent: dict[str, str]
):
    reply = await _post(body, sent)
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
    reply = await _post(body, sent)
    assert reply.status == 200, reply
    assert "result" in reply.json(), reply


def without_capabilities(method: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}


NO_ENVELOPE = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
NO_PARAMS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
UNKNOWN_TOOL = request("tools/call", name="nope", arguments={})

STATUSES = [
    pytest.param(request("foo/bar"), headers("foo/bar"), 404, -32601, id="unknown-method"),
    pytest.param(
        request("resources/subscribe", uri="test://static-text"),
        headers("resources/subscribe"),
        404,
        -32601,
        id="method-removed-at-2026-07-28",
    ),
    pytest.param(
        without_capabilities("tools/list"), headers("tools/list"), 400, -32602, id="no-caps"
    ),
    pytest.param(NO_ENVELOPE, headers("tools/list"), 400, -32602, id="no-_meta-modern-header"),
    pytest.param(NO_PARAMS, headers("tools/list"), 400, -32602, id="no-params-modern-header"),
    pytest.param(UNKNOWN_TOOL, headers("tools/call", name="nope"), 400, -32602, id="no-such-tool"),
    pytest.param(
        request("tools/list", cursor="zzz"), headers("tools/list"), 400, -32602, id="bad-cursor"
    ),
]


@pytest.mark.parametrize(("body", "sent", "status", "code"), STATUSES)
async def test_a_refusal_at_2026_07_28_has_the_http_status_of_its_error_code(
    clock, body: dict[str, Any], sent: dict[str, str], status: int, code: int
):
    async with serve(toolsets=["conformance"]) as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request("POST", "/mcp/conformance", body, sent)
            assert reply.status == status, reply
            assert reply.headers["content-type"] == "application/json", reply
            assert reply.json()["error"]["code"] == code, reply
            # The connection serves on: a refusal is an answer, not an ending.
            ping = request("ping")
            ping = await client.request("POST", "/mcp/conformance", ping, headers("ping"))
            assert ping.status == 200, ping


async def test_a_handshake_session_s_errors_stay_200(clock):
    async with serve(toolsets=["conformance"]) as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            session = await open_session(client, "/mcp/conformance")
            for method, code in (("foo/bar", -32601), ("resources/read", -32602)):
                body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": {"uri": "x://y"}}
                reply = await client.request("POST", "/mcp/conformance", body, session)
                assert reply.status == 200, reply
                assert reply.json()["error"]["code"] in (code, -32002), reply


async def test_a_2026_07_28_sse_answer_has_no_event_ids_and_asks_proxies_not_to_buffer(clock):
    chatty = request("tools/call", name="chatty", arguments={})
    chatty["params"]["_meta"] = {**MODERN_META, "progressToken": "p"}
    async with serve() as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request(
                "POST", "/mcp/probe", chatty, headers("tools/call", name="chatty")
            )
    assert reply.headers["content-type"] == "text/event-stream", reply
    assert reply.headers.get("x-accel-buffering") == "no", reply
    lines = reply.body.decode().splitlines()
    assert not [line for line in lines if line.startswith(("id:", "retry:"))], lines
    assert reply.json()["result"]["structuredContent"] == {"done": True}
    assert '"notifications/progress"' in reply.body.decode()


async def test_a_handshake_session_s_sse_answer_keeps_its_event_ids(clock):
    async with serve() as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            session = await open_session(client)
            chatty = call("chatty", 1, _meta={"progressToken": "p"})
            reply = await client.request("POST", "/mcp/probe", chatty, session)
    assert reply.headers["content-type"] == "text/event-stream", reply
    ids = [line for line in reply.body.decode().splitlines() if line.startswith("id:")]
    assert len(ids) == 3, reply  # the priming event's, the progress's and the answer's


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_or_delete_without_a_session_id_is_not_allowed(clock, method: str):
    sent = {"accept": "text/event-stream", "mcp-protocol-version": MODERN}
    async with serve() as server, RawHttp.open(server.port) as client:
        with trio.fail_after(TIMEOUT):
            reply = await client.request(method, "/mcp/probe", headers=sent)
            assert reply.status == 405, reply
            assert reply.headers["allow"] == "POST", reply
            assert reply.json()["error"]["code"] == -32600, reply
            # With a session id, a handshake session's rules, as before: an unknown one is 404;
            # a known one is deleted, or streamed (given Accept: text/event-stream, else 406).
            unknown = await client.request(method, "/mcp/probe", headers={"mcp-session-id": "0"})
            assert unknown.status == 404, unknown
            session = await open_session(client)
            known = await client.request(method, "/mcp/probe", headers=session)
            assert known.status == {"GET": 406, "DELETE": 200}[method], known
