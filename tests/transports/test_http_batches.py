"""JSON-RPC batches on a Streamable HTTP session negotiated at MCP 2025-03-26.

That revision says implementations "MUST support receiving JSON-RPC batches": a batch with
requests is answered with a JSON array of their responses (or an SSE stream carrying them when
a call streams first), one of only notifications and responses with 202. Later revisions
removed batches, and a session at one of them still refuses a batch with 400.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from http_support import INITIALIZE, RawHttp, call, serve

TIMEOUT = 300  # mock seconds


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


async def open_at(client: RawHttp, version: str) -> dict[str, str]:
    """A session negotiated at ``version``: the headers that address it."""
    hello = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    reply = await client.request("POST", "/mcp/probe", hello)
    assert reply.status == 200, reply
    assert reply.json()["result"]["protocolVersion"] == version
    session = {"mcp-session-id": reply.headers["mcp-session-id"]}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.request("POST", "/mcp/probe", done, session)).status == 202
    return session


async def post_batch(client: RawHttp, batch: list[dict[str, Any]], session: dict[str, str]) -> Any:
    return await client.request("POST", "/mcp/probe", json.dumps(batch).encode(), session)


PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


async def test_a_batch_of_requests_is_answered_with_a_json_array(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                reply = await post_batch(client, [PING, call("echo", 6)], session)
                assert reply.status == 200, reply
                assert reply.headers["content-type"] == "application/json"
                answers = {answer["id"]: answer for answer in reply.json()}
                assert answers[5]["result"] == {}
                assert answers[6]["result"]["structuredContent"] == {"echo": {}}
                assert len(answers) == 2
                # The connection serves on, and single messages still work.
                again = await client.request("POST", "/mcp/probe", call("echo", 7), session)
                assert again.json()["id"] == 7


async def test_a_batch_of_notifications_gets_202(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                notices = [
                    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": 99},
                    },
                ]
                reply = await post_batch(client, notices, session)
                assert reply.status == 202, reply
                assert reply.body == b""


async def test_a_batch_whose_call_streams_first_is_answered_on_an_sse_stream(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                chatty = call("chatty", 8, _meta={"progressToken": "p"})
                reply = await post_batch(client, [chatty, PING], session)
                assert reply.status == 200, reply
                assert reply.headers["content-type"] == "text/event-stream"
                body = reply.body.decode()
                assert '"notifications/progress"' in body
                assert '"id":5,"result":{}' in body
                assert reply.json()["id"] in (5, 8)  # the last event: one of the answers
                assert '"id":8,"result"' in body


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_later_revision_still_refuses_batches(clock, version):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, version)
                headers = {**session, "mcp-protocol-version": version}
                reply = await post_batch(client, [PING], headers)
                assert reply.status == 400, reply
                assert "batches are not supported" in reply.json()["error"]["message"]


async def test_a_batch_that_opens_a_session_is_told_initialize_cannot_be_in_one(clock):
    """It was told "batches are not supported (MCP 2025-06-18+)", though its initialize asks
    for 2025-03-26, which takes batches: what is wrong is the initialize in it."""
    hello = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"}}
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                reply = await post_batch(client, [hello], {})
                assert reply.status == 400, reply
                assert reply.json()["error"] == {
                    "code": -32600,
                    "message": "initialize cannot be sent in a batch (MCP 2025-03-26 forbids it)",
                }


BAD_BATCHES = [
    pytest.param([], "non-empty", id="empty"),
    pytest.param([PING, PING], "repeated", id="repeated-id"),
]


@pytest.mark.parametrize(("batch", "said"), BAD_BATCHES)
async def test_a_bad_batch_is_refused_whole(clock, batch, said):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                reply = await post_batch(client, batch, session)
                assert reply.status == 400, reply
                assert reply.json()["error"]["code"] == -32600
                assert said in reply.json()["error"]["message"]


async def test_a_cancelled_call_of_a_batch_is_left_out_of_its_json_array(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as setup:
                session = await open_at(setup, "2025-03-26")
            answer: dict[str, Any] = {}

            async def post() -> None:
                async with RawHttp.open(server.port) as client:
                    answer["reply"] = await post_batch(client, [call("hang", 10), PING], session)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(post)
                await trio.sleep(1)
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 10},
                }
                async with RawHttp.open(server.port) as client:
                    assert (
                        await client.request("POST", "/mcp/probe", cancel, session)
                    ).status == 202
            assert answer["reply"].json() == [{"jsonrpc": "2.0", "id": 5, "result": {}}]


BAD_ELEMENTS = [
    pytest.param(INITIALIZE, 0, "initialize must not be part of a batch", id="initialize"),
    pytest.param({"jsonrpc": "1.0", "id": 9, "method": "ping"}, 9, "element 1", id="with-id"),
    pytest.param({"jsonrpc": "2.0", "method": 3}, None, "element 1", id="no-id"),
    pytest.param(7, None, "element 1", id="not-an-object"),
    # It was told "batches are not supported (MCP 2025-06-18+)", as if batches were refused.
    pytest.param([PING], None, "must be a JSON-RPC message object", id="an-array"),
]


@pytest.mark.parametrize(("bad", "rid", "said"), BAD_ELEMENTS)
async def test_a_bad_element_of_a_batch_gets_its_own_error_and_the_rest_runs(clock, bad, rid, said):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                reply = await post_batch(client, [PING, bad, call("echo", 6)], session)
                assert reply.status == 200, reply
                answers = reply.json()
                assert len(answers) == 3
                (error,) = [answer for answer in answers if "error" in answer]
                assert error["id"] == rid
                assert error["error"]["code"] == -32600
                assert said in error["error"]["message"]
                ids = {answer["id"] for answer in answers if "result" in answer}
                assert ids == {5, 6}


async def test_a_batch_of_a_notification_and_a_bad_element_gets_the_error_alone(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_at(client, "2025-03-26")
                notice = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
                reply = await post_batch(client, [notice, {"jsonrpc": "2.0"}], session)
                assert reply.status == 200, reply
                (error,) = reply.json()
                assert error["id"] is None
                assert error["error"]["code"] == -32600
