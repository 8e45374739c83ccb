"""How deep a request's params may nest: as deep as the deepest arguments a toolset may accept.

The transports refused params nested past 8 levels, so arguments (params' level 2) deeper than
7 never reached the toolset whose limit should judge them: the chamber's contract allows 8, and
arguments 8 deep got -32600 instead of the chamber's own envelope (a reviewer's finding).
"""

from __future__ import annotations

import json

import pytest
from http_support import RawHttp, call, open_session, serve

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc
from agora.mcp.guard import MAX_DEPTH
from agora.toolsets.base import ArgumentLimits


def _nested(levels: int) -> object:
    """A value ``levels`` deep counting its own object (``{"a": {...}}``)."""
    value: object = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _tool_call(arguments_depth: int) -> bytes:
    params = {"name": "x", "arguments": _nested(arguments_depth)}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def test_arguments_past_any_toolsets_limit_still_reach_it_below_the_hard_ceiling():
    """Arguments one level past the deepest a toolset accepts (the router's 32) must reach
    the toolset, whose limit answers in its words: at a ceiling of 33 params levels they got
    -32600 from the transport (a reviewer's finding). The ceiling stays, well above."""
    assert rpc.MAX_PARAMS_DEPTH == 64
    for arguments_depth in (MAX_DEPTH, MAX_DEPTH + 1, rpc.MAX_PARAMS_DEPTH - 1):
        assert isinstance(rpc.decode(_tool_call(arguments_depth)), rpc.Request)
    far = 100_000  # as deep as a message within the size limit gets; written out as text
    arguments = '{"a":' * (far - 1) + "{}" + "}" * (far - 1)
    text = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":'
    cases = [  # params past the ceiling: by one level, and far
        (_tool_call(rpc.MAX_PARAMS_DEPTH), "params nested deeper than 64 levels"),
        ((text + arguments + "}}").encode(), "message holds more than 20000 arrays and objects"),
    ]
    for message, said in cases:
        assert len(message) <= rpc.MAX_MESSAGE_BYTES
        with pytest.raises(ProtocolError) as refused:
            rpc.decode(message)
        assert (refused.value.code, refused.value.message) == (rpc.INVALID_REQUEST, said)


def test_a_toolset_cannot_ask_for_arguments_deeper_than_the_transport_lets_through():
    assert ArgumentLimits(max_depth=MAX_DEPTH).max_depth == MAX_DEPTH
    with pytest.raises(ValueError, match=r"max_depth must be 1\.\.32"):
        ArgumentLimits(max_depth=MAX_DEPTH + 1)


async def test_chamber_arguments_at_its_contract_depth_get_the_chambers_own_answer():
    async with serve(toolsets=["chamber"]) as server, RawHttp.open(server.port) as client:
        session = await open_session(client, "/mcp/chamber")
        for depth in (8, 9):
            preflight = _nested(depth - 1)  # the arguments object is level 1
            body = call("enter_open_challenge", arguments={"preflight": preflight})
            reply = (await client.request("POST", "/mcp/chamber", body, session)).json()
            assert "error" not in reply, (depth, reply)  # not -32600: the chamber judged it
            assert reply["result"]["isError"] is True
            refusal = reply["result"]["structuredContent"]
            deep = "arguments: are nested deeper than 8 levels"
            if depth == 8:  # within the contract's depth: the schema judges the fields
                assert refusal["code"] == "identity_incomplete", refusal
                assert deep not in refusal["error"]
            else:
                assert refusal == {
                    "ok": False, "code": "value_format_invalid", "error": deep,
                    "retryable": True,
                    "recovery_hint": "Fix the arguments as the error says and call again.",
                }  # fmt: skip


async def test_params_given_as_an_array_are_invalid_params_not_an_invalid_request():
    """JSON-RPC lets params be an array (by position); MCP names every parameter. Such a
    request is well formed, so -32600 (Invalid Request) was the wrong code: -32602, saying
    why. A scalar is no JSON-RPC params at all: that stays -32600."""
    for params, code, said in (
        ([], rpc.INVALID_PARAMS, "MCP passes parameters by name, not in an array"),
        (["enter_open_challenge", {}], rpc.INVALID_PARAMS, "not in an array"),
        ("x", rpc.INVALID_REQUEST, "params must be an object"),
    ):
        message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
        with pytest.raises(ProtocolError) as refused:
            rpc.decode(json.dumps(message).encode())
        assert (refused.value.code, refused.value.data) == (code, {"id": 3})
        assert said in refused.value.message
    async with serve(toolsets=["chamber"]) as server, RawHttp.open(server.port) as client:
        session = await open_session(client, "/mcp/chamber")
        body = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": [1]}
        reply = await client.request("POST", "/mcp/chamber", body, session)
        assert reply.json()["id"] == 4
        assert reply.json()["error"]["code"] == rpc.INVALID_PARAMS
