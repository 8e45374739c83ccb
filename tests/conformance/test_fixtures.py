"""The conformance fixture toolset, driven through the in-process client: no sockets, no sleeps.

The logging, progress and reconnection tools pause while they run, so their tests run on
Trio's autojump clock and assert the exact virtual time that passed. Server-to-client
requests (sampling, elicitation) are answered once every task is blocked on them.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import wave
import zlib
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
import trio
import trio.testing

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.app import load_toolsets
from agora.server.embed import open_server
from agora.toolsets.conformance.tools import RECONNECT_PAUSE_SECONDS, STEP_SECONDS

if TYPE_CHECKING:
    from agora.server.embed import InProcessClient

TIMEOUT = 10
CONFIG = Config(db=":memory:", port=0, conformance=True, toolsets=["conformance"])


def notes(client: InProcessClient, method: str) -> list[dict[str, Any]]:
    """The params of every message the server sent with ``method``."""
    return [m["params"] for m in client.notifications if m.get("method") == method]


def test_the_fixtures_are_served_only_when_asked_for() -> None:
    assert "conformance" not in {t.name for t in load_toolsets(["chess"])}
    assert "conformance" in {t.name for t in load_toolsets(["chess"], conformance=True)}


async def test_every_fixture_tool_is_listed_with_a_description(client: InProcessClient) -> None:
    with trio.fail_after(TIMEOUT):
        tools = (await client.request("tools/list"))["result"]["tools"]
    names = {t["name"] for t in tools}
    assert {"test_simple_text", "test_sampling", "test_reconnection"} <= names
    assert len(names) == 15
    for tool in tools:
        assert tool["description"]
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])


async def test_the_2020_12_schema_keeps_its_keywords_and_is_enforced(
    client: InProcessClient,
) -> None:
    with trio.fail_after(TIMEOUT):
        tools = (await client.request("tools/list"))["result"]["tools"]
        ok = await client.call_tool(
            "json_schema_2020_12_tool", {"name": "Ada", "address": {"city": "London"}}
        )
        refused = await client.call_tool("json_schema_2020_12_tool", {"name": "Ada", "extra": 1})
        bad_ref = await client.call_tool("json_schema_2020_12_tool", {"address": {"city": 7}})
    schema = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"]
    assert schema["additionalProperties"] is False
    assert "isError" not in ok
    assert refused["isError"] is True
    assert bad_ref["isError"] is True


def _png_pixel(data: str) -> bytes:
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(raw):
        (size,) = struct.unpack(">I", raw[at : at + 4])
        body = raw[at + 4 : at + 8 + size]
        assert struct.unpack(">I", raw[at + 8 + size : at + 12 + size])[0] == zlib.crc32(body)
        chunks[body[:4]] = body[4:]
        at += 12 + size
    assert struct.unpack(">II", chunks[b"IHDR"][:8]) == (1, 1)
    return zlib.decompress(chunks[b"IDAT"])


@pytest.mark.parametrize(
    ("tool", "types"),
    [
        pytest.param("test_simple_text", ["text"], id="text"),
        pytest.param("test_image_content", ["image"], id="image"),
        pytest.param("test_audio_content", ["audio"], id="audio"),
        pytest.param("test_embedded_resource", ["resource"], id="resource"),
        pytest.param("test_multiple_content_types", ["text", "image", "resource"], id="mixed"),
    ],
)
async def test_content_tools_return_their_blocks(
    client: InProcessClient, tool: str, types: list[str]
) -> None:
    with trio.fail_after(TIMEOUT):
        result = await client.call_tool(tool)
    assert set(result) == {"content"}  # the blocks alone (a RawResult): no structured copy
    assert [block["type"] for block in result["content"]] == types
    for block in result["content"]:
        if block["type"] == "image":
            assert block["mimeType"] == "image/png"
            assert _png_pixel(block["data"]) == b"\x00\xff\x00\x00"
        elif block["type"] == "audio":
            assert block["mimeType"] == "audio/wav"
            with wave.open(io.BytesIO(base64.b64decode(block["data"]))) as sound:
                assert sound.getnframes() > 0
        elif block["type"] == "resource":
            resource = block["resource"]
            assert resource["uri"].startswith("test://")
            assert resource["mimeType"]
            assert resource["text"]
            if resource["mimeType"] == "application/json":
                assert json.loads(resource["text"]) == {"test": "data", "value": 123}


async def test_the_error_tool_answers_with_an_error_result(client: InProcessClient) -> None:
    with trio.fail_after(TIMEOUT):
        result = await client.call_tool("test_error_handling")
    assert result["isError"] is True
    assert result["content"][0]["text"] == "This tool intentionally returns an error for testing"


async def test_the_logging_tool_sends_three_info_messages_a_step_apart(
    client: InProcessClient, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(TIMEOUT):
        assert (await client.request("logging/setLevel", {"level": "debug"}))["result"] == {}
        start = trio.current_time()
        result = await client.call_tool("test_tool_with_logging")
        assert trio.current_time() == start + STEP_SECONDS + STEP_SECONDS
    logs = notes(client, "notifications/message")
    assert [m["data"] for m in logs] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert {m["level"] for m in logs} == {"info"}
    assert "isError" not in result


async def test_log_messages_below_the_set_level_are_not_sent(
    client: InProcessClient, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(TIMEOUT):
        await client.request("logging/setLevel", {"level": "warning"})
        await client.call_tool("test_tool_with_logging")
    assert notes(client, "notifications/message") == []


async def test_the_progress_tool_reports_0_50_100_for_a_progress_token(
    client: InProcessClient, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(TIMEOUT):
        reply = await client.request(
            "tools/call",
            {"name": "test_tool_with_progress", "_meta": {"progressToken": "p-1"}},
        )
    assert "result" in reply
    progress = notes(client, "notifications/progress")
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("p-1", 0, 100),
        ("p-1", 50, 100),
        ("p-1", 100, 100),
    ]


async def test_no_progress_is_sent_without_a_token(
    client: InProcessClient, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(TIMEOUT):
        await client.call_tool("test_tool_with_progress")
    assert notes(client, "notifications/progress") == []


async def _call_and_answer(
    c: InProcessClient, tool: str, args: dict[str, Any], method: str, answer: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call ``tool``; answer the ``method`` request it sends the client; return both."""
    box: list[dict[str, Any]] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                box.append(await c.call_tool(tool, args))

            nursery.start_soon(call)
            await trio.testing.wait_all_tasks_blocked()
            asked = next(m for m in c.notifications if m.get("method") == method)
            await c.conn.feed(rpc.parse({"jsonrpc": "2.0", "id": asked["id"], "result": answer}))
    return asked["params"], box[0]


async def test_the_sampling_tool_asks_the_client_and_quotes_its_answer(
    capable_client: InProcessClient,
) -> None:
    answer = {
        "role": "assistant",
        "content": {"type": "text", "text": "forty-two"},
        "model": "test-model",
        "stopReason": "endTurn",
    }
    asked, result = await _call_and_answer(
        capable_client, "test_sampling", {"prompt": "what?"}, "sampling/createMessage", answer
    )
    assert asked == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "what?"}}],
        "maxTokens": 100,
    }
    assert result["content"] == [{"type": "text", "text": "LLM response: forty-two"}]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        pytest.param("test_sampling", {"prompt": "hi"}, id="sampling"),
        pytest.param("test_elicitation", {"message": "hi"}, id="elicitation"),
    ],
)
async def test_client_requests_fail_cleanly_without_the_capability(
    client: InProcessClient, tool: str, args: dict[str, Any]
) -> None:
    with trio.fail_after(TIMEOUT):
        result = await client.call_tool(tool, args)
    assert result["isError"] is True
    assert "capability" in result["content"][0]["text"]
    assert not [m for m in client.notifications if "id" in m]  # no request reached the client


async def test_the_elicitation_tool_reports_the_users_answer(
    capable_client: InProcessClient,
) -> None:
    answer = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    asked, result = await _call_and_answer(
        capable_client, "test_elicitation", {"message": "Who?"}, "elicitation/create", answer
    )
    assert asked["message"] == "Who?"
    assert asked["requestedSchema"]["required"] == ["username", "email"]
    text = result["content"][0]["text"]
    assert text.startswith("User response: action=accept")
    assert "ada@example.com" in text


async def test_the_defaults_form_has_a_default_for_every_primitive_type(
    capable_client: InProcessClient,
) -> None:
    answer = {"action": "decline"}
    asked, result = await _call_and_answer(
        capable_client, "test_elicitation_sep1034_defaults", {}, "elicitation/create", answer
    )
    fields = asked["requestedSchema"]["properties"]
    assert {k: (v["type"], v["default"]) for k, v in fields.items()} == {
        "name": ("string", "John Doe"),
        "age": ("integer", 30),
        "score": ("number", 95.5),
        "status": ("string", "active"),
        "verified": ("boolean", True),
    }
    assert fields["status"]["default"] in fields["status"]["enum"]
    assert "action=decline" in result["content"][0]["text"]


async def test_the_enums_form_has_every_enum_flavour(capable_client: InProcessClient) -> None:
    answer = {"action": "accept", "content": {"untitledSingle": "option1"}}
    asked, _ = await _call_and_answer(
        capable_client, "test_elicitation_sep1330_enums", {}, "elicitation/create", answer
    )
    fields = asked["requestedSchema"]["properties"]
    assert "oneOf" not in fields["untitledSingle"]
    assert all({"const", "title"} <= set(o) for o in fields["titledSingle"]["oneOf"])
    assert len(fields["legacyEnum"]["enumNames"]) == len(fields["legacyEnum"]["enum"])
    assert fields["untitledMulti"]["items"]["type"] == "string"
    assert all({"const", "title"} <= set(o) for o in fields["titledMulti"]["items"]["anyOf"])


async def test_reconnection_answers_in_process_where_no_stream_can_end(
    client: InProcessClient, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(TIMEOUT):
        start = trio.current_time()
        result = await client.call_tool("test_reconnection")
    assert trio.current_time() == start + RECONNECT_PAUSE_SECONDS
    assert result["content"][0]["text"] == "Reconnection test completed"


async def test_a_client_without_form_elicitation_is_refused_cleanly() -> None:
    async with open_server(CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(TIMEOUT):
            await client.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"elicitation": {"url": {}}},
                    "clientInfo": {"name": "url-only", "version": "0"},
                },
            )
            result = await client.call_tool("test_elicitation", {"message": "hi"})
    assert result["isError"] is True
    assert "form-mode" in result["content"][0]["text"]
