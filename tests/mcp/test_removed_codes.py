"""2026-07-28 removed the error code -32002 (resource not found) for -32602: a server of that
revision must not emit it. A handshake session keeps -32002, which its client expects.

Every way to a missing resource is covered: a URI no resource serves (read, listen), and a
toolset's read or subscribe check that raises `LookupError` ("Resource not found").
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.mcp.session import META_CAPABILITIES, META_VERSION
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset, resource

MODERN = {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}
GONE = "gone://thing/1"


async def _missing(call: ToolCall) -> Any:
    raise LookupError(call.tool)


def _toolset() -> Toolset:
    return Toolset(
        name="gone",
        handlers={},
        contract=None,
        tools=[],
        resources=[resource("gone://thing/{id}", "thing", _missing, check=_missing)],
    )


async def _ask(modern: bool, method: str, params: dict[str, Any]) -> dict[str, Any]:
    config = Config(db=":memory:", port=0)
    async with (
        open_server(config, toolsets=[_toolset()], listen=False) as server,
        server.client("/mcp") as client,
    ):
        with trio.fail_after(30):
            if modern:
                return await client.request(method, {**params, "_meta": MODERN})
            await client.request(
                "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}
            )
            await client.notify("notifications/initialized")
            return await client.request(method, params)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        pytest.param("resources/read", {"uri": "nowhere://x"}, id="read-unserved-uri"),
        pytest.param("resources/read", {"uri": GONE}, id="read-lookup-error"),
        pytest.param(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": ["nowhere://x"]}},
            id="listen-unserved-uri",
        ),
        pytest.param(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": [GONE]}},
            id="listen-check-lookup-error",
        ),
    ],
)
async def test_a_missing_resource_is_invalid_params_at_2026_07_28(
    method: str, params: dict[str, Any]
) -> None:
    reply = await _ask(True, method, params)
    assert reply["error"]["code"] == rpc.INVALID_PARAMS, reply
    assert reply["error"]["message"] == "Resource not found"
    assert reply["error"]["data"]["uri"] in ("nowhere://x", GONE)


@pytest.mark.parametrize(
    ("method", "uri"),
    [
        pytest.param("resources/read", "nowhere://x", id="read-unserved-uri"),
        pytest.param("resources/read", GONE, id="read-lookup-error"),
        pytest.param("resources/subscribe", "nowhere://x", id="subscribe-unserved-uri"),
        pytest.param("resources/subscribe", GONE, id="subscribe-check-lookup-error"),
    ],
)
async def test_a_handshake_session_still_gets_resource_not_found(method: str, uri: str) -> None:
    reply = await _ask(False, method, {"uri": uri})
    assert reply["error"]["code"] == rpc.RESOURCE_NOT_FOUND, reply
    assert reply["error"]["data"] == {"uri": uri}
