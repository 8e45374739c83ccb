"""At 2026-07-28 a request that needs a capability its client did not declare is refused with
-32021 (MissingRequiredClientCapabilityError), ``data.requiredCapabilities`` listing them.

`ClientChannel.request` checks before it asks (`agora.mcp.asks.missing_capabilities`): the
call is answered with the error, not a tool result, and no ``inputRequests`` names a request
the client cannot serve. A handshake session keeps the fixtures' own tool error.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp.asks import missing_capabilities
from agora.mcp.jsonrpc import MISSING_CLIENT_CAPABILITY
from agora.mcp.session import META_CAPABILITIES, META_VERSION
from agora.server.embed import open_server

CONFIG = Config(port=0, db=":memory:", conformance=True, toolsets=["conformance"])
SAMPLE = ("test_sampling", {"prompt": "question?"})
ELICIT = ("test_elicitation", {"message": "who?"})


async def _call(tool: tuple[str, dict[str, Any]], capabilities: dict[str, Any]) -> dict[str, Any]:
    meta = {META_VERSION: "2026-07-28", META_CAPABILITIES: capabilities}
    async with open_server(CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            return await client.request(
                "tools/call", {"name": tool[0], "arguments": tool[1], "_meta": meta}
            )


@pytest.mark.parametrize(
    ("tool", "capabilities", "required"),
    [
        pytest.param(SAMPLE, {}, {"sampling": {}}, id="sampling-undeclared"),
        pytest.param(SAMPLE, {"elicitation": {}}, {"sampling": {}}, id="sampling-other-declared"),
        pytest.param(ELICIT, {}, {"elicitation": {"form": {}}}, id="elicitation-undeclared"),
        pytest.param(
            ELICIT, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}, id="url-only"
        ),
    ],
)
async def test_a_missing_capability_is_refused_with_32021(
    tool: tuple[str, dict[str, Any]], capabilities: dict[str, Any], required: dict[str, Any]
) -> None:
    reply = await _call(tool, capabilities)
    assert "error" in reply, reply
    assert reply["error"]["code"] == MISSING_CLIENT_CAPABILITY == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": required}
    assert META_CAPABILITIES in reply["error"]["message"]


@pytest.mark.parametrize(
    ("tool", "capabilities"),
    [
        pytest.param(SAMPLE, {"sampling": {}}, id="sampling"),
        pytest.param(ELICIT, {"elicitation": {}}, id="bare-elicitation-is-form"),
        pytest.param(ELICIT, {"elicitation": {"form": {}, "url": {}}}, id="form-declared"),
    ],
)
async def test_a_declared_capability_is_asked_for(
    tool: tuple[str, dict[str, Any]], capabilities: dict[str, Any]
) -> None:
    reply = await _call(tool, capabilities)
    assert reply["result"]["resultType"] == "input_required", reply


@pytest.mark.parametrize(
    ("method", "params", "declared", "missing"),
    [
        pytest.param("roots/list", {}, {}, {"roots": {}}, id="roots"),
        pytest.param("roots/list", {}, {"roots": {}}, None, id="roots-declared"),
        pytest.param(
            "sampling/createMessage",
            {"tools": []},
            {"sampling": {}},
            {"sampling": {"tools": {}}},
            id="sampling-tools",
        ),
        pytest.param(
            "sampling/createMessage",
            {"includeContext": "thisServer"},
            {"sampling": {"tools": {}}},
            {"sampling": {"context": {}}},
            id="sampling-context",
        ),
        pytest.param(
            "elicitation/create",
            {"mode": "url"},
            {"elicitation": {}},
            {"elicitation": {"url": {}}},
            id="url-mode-needs-url",
        ),
        pytest.param("elicitation/create", {"mode": "url"}, {"elicitation": {"url": {}}}, None),
        pytest.param("something/else", {}, {}, None, id="unknown-method"),
    ],
)
def test_what_each_request_needs(
    method: str, params: dict[str, Any], declared: dict[str, Any], missing: Any
) -> None:
    assert missing_capabilities(method, params, declared) == missing


@pytest.mark.parametrize("capabilities", ["x", [], 1])
async def test_capabilities_that_are_not_an_object_are_invalid_params(capabilities: Any) -> None:
    # A string there was taken as capabilities (a hostile client's finding).
    reply = await _call(SAMPLE, capabilities)
    assert reply["error"]["code"] == -32602, reply
    assert reply["error"]["message"] == f"_meta must hold an object in {META_CAPABILITIES!r}"
