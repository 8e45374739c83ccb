"""The 2026-07-28 revision's per-request log level (`_meta` logLevel) filters that call's logs.

Without a handshake there is no session to hold `logging/setLevel`, so a request names its own
minimum in `_meta["io.modelcontextprotocol/logLevel"]`; a handshake session keeps its setLevel.
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
        pytest.param(None, 3, id="no-level-session-default-info"),
        pytest.param("debug", 3, id="debug-lets-info-through"),
        pytest.param("warning", 0, id="warning-drops-info"),
        pytest.param("bogus", 3, id="unknown-level-ignored"),
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
