"""End to end: a principal's chamber attempt answers strangers on the wire as a missing one does.

``agora serve --toolsets chamber`` with one operator principal; the operator enters an
``origin=summoned`` attempt over WebSocket with its bearer token; an anonymous client, over
WebSocket and over Streamable HTTP (the official ``mcp`` SDK), calls every attempt tool on
that handle and on a handle never issued: the whole tools/call results are the same bytes
once the echoed handle is normalised. The operator's own calls still work.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from e2e_config import TOKEN

from agora.client import connect

mcp = pytest.importorskip("mcp")

ENTRY = {
    "provider_claim": "scoreia",
    "model_claim": "m",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}
MISSING = "chl-" + "0" * 16
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("observe_chamber", {"object": "counter"}),
    ("chamber_action", {"op": "look"}),
    ("call_for_help", {"ally": "grok-4.6"}),
    ("seal_attempt", {}),
]


def _wire(result: dict[str, Any], handle: str) -> bytes:
    return json.dumps(result, sort_keys=True).replace(handle, "chl-HANDLE").encode()


async def test_a_summoned_attempt_answers_anonymous_callers_as_a_missing_one(start_agora):
    server = start_agora("", "--toolsets", "chamber")
    url = f"{server.url}/mcp/chamber"
    with trio.fail_after(60):
        async with connect(url, token=TOKEN) as operator:
            entered = await operator.call_tool(
                "enter_open_challenge", {**ENTRY, "origin": "summoned"}
            )
            handle = entered["structuredContent"]["attempt_handle"]
            assert entered["structuredContent"]["assurance"] == "scoreia_controlled"
            async with connect(url) as stranger:
                for name, args in CALLS:
                    foreign = await stranger.call_tool(name, {"challenge_handle": handle, **args})
                    missing = await stranger.call_tool(name, {"challenge_handle": MISSING, **args})
                    assert foreign["isError"] is True
                    assert _wire(foreign, handle) == _wire(missing, MISSING), name
            async with mcp.Client(url, read_timeout_seconds=30) as sdk:
                for name, args in CALLS:
                    foreign = await sdk.call_tool(name, {"challenge_handle": handle, **args})
                    missing = await sdk.call_tool(name, {"challenge_handle": MISSING, **args})
                    assert foreign.is_error
                    assert _wire(foreign.model_dump(), handle) == _wire(
                        missing.model_dump(), MISSING
                    ), name
            look = await operator.call_tool(
                "chamber_action", {"challenge_handle": handle, "op": "look"}
            )
            assert look["structuredContent"]["action_index"] == 1
            sealed = await operator.call_tool("seal_attempt", {"challenge_handle": handle})
            card = sealed["structuredContent"]["card"]
            assert card["identity"]["assurance"] == "scoreia_controlled"
            assert card["allies"] == []
