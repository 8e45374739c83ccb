"""The 2026-07-28 revision's per-request log level (`_meta` logLevel) filters that call's logs.

Without a handshake there is no session to hold `logging/setLevel` (removed at 2026-07-28), so a
request names its own minimum in `_meta["io.modelcontextprotocol/logLevel"]`, and a request
without one gets no log message at all (the spec's MUST NOT); a level that is none is refused
(-32602). A handshake session keeps its setLevel.
"""

from __future__ import annotations

import pytest
import trio

from agora.config import Config
from agora.mcp.session import META_CAPABILITIES, META_LOG_LEVEL, META_VERSION
from agora.server.embed import open_server

TOOL = "test_tool_with_logging"  # logs three info messages


def _modern_meta(level: str | None) -> dict[str, object]:
    meta: dict[str, object] = {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}
    if level is not None:
        meta[META_LOG_LEVEL] = level
    return meta


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        pytest.param(None, 0, id="no-level-no-logs"),
        pytest.param("debug", 3, id="debug-lets-info-through"),
        pytest.param("info", 3, id="info-lets-info-through"),
        pytest.param("warning", 0, id="warning-drops-info"),
    ],
)
async def test_a_modern_request_sets_its_own_log_level(level, expected):
    config = Config(port=0, db=":memory:", conformance=True, toolsets=["conformance"])
    async with open_server(config, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            reply = await client.request(
                "tools/call", {"name": TOOL, "arguments": {}, "_meta": _modern_meta(level)}
            )
        assert "result" in reply, reply
        logs = [n for n in client.notifications if n.get("method") == "notifications/message"]
        assert len(logs) == expected


MODERN_CONFIG = Config(port=0, db=":memory:", conformance=True, toolsets=["conformance"])


@pytest.mark.parametrize("level", ["bogus", None, 3, "INFO"])
async def test_a_log_level_that_is_none_is_refused(level):
    meta = _modern_meta("info")
    meta[META_LOG_LEVEL] = level
    async with open_server(MODERN_CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            reply = await client.request(
                "tools/call", {"name": TOOL, "arguments": {}, "_meta": meta}
            )
            listed = await client.request("tools/list", {"_meta": meta})
        logs = [n for n in client.notifications if n.get("method") == "notifications/message"]
    for refused in (reply, listed):
        assert refused["error"]["code"] == -32602, refused
        assert (
            "debug, info, notice, warning, error, critical, alert, emergency"
            in (refused["error"]["message"])
        )
    assert logs == []


async def test_set_level_is_not_found_at_2026_07_28_and_leaks_into_no_later_request():
    async with open_server(MODERN_CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            set_level = await client.request(
                "logging/setLevel", {"level": "debug", "_meta": _modern_meta(None)}
            )
            reply = await client.request(
                "tools/call", {"name": TOOL, "arguments": {}, "_meta": _modern_meta(None)}
            )
        logs = [n for n in client.notifications if n.get("method") == "notifications/message"]
    assert set_level["error"]["code"] == -32601
    assert "io.modelcontextprotocol/logLevel" in set_level["error"]["message"]
    assert "result" in reply
    assert logs == []


async def test_a_handshake_session_keeps_its_set_level():
    async with open_server(MODERN_CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            await client.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
            )
            await client.notify("notifications/initialized")
            await client.call_tool(TOOL)  # the session's default minimum: info
            assert (await client.request("logging/setLevel", {"level": "error"}))["result"] == {}
            await client.call_tool(TOOL)
        logs = [n for n in client.notifications if n.get("method") == "notifications/message"]
    assert len(logs) == 3
