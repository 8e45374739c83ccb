"""The JSON text arguments (payload_json, roles_json, metadata_json, verdict_json, ...): a text
nested deeper than 32 levels is refused with the argument's own error, never decoded into an
internal error (the decoder's recursion limit) nor stored."""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, LANE

from agora.toolsets.debate.handlers.workers import _trigger
from agora.toolsets.debate.protocol.judging import parse_verdict
from agora.toolsets.debate.rules import MAX_JSON_DEPTH, DebateError, loads


def nested(levels: int, inner: str = "1") -> str:
    """An object holding arrays ``levels`` deep in all (the object is the first level)."""
    return '{"x":' + "[" * (levels - 1) + inner + "]" * (levels - 1) + "}"


def test_the_deepest_allowed_text_decodes():
    assert loads(nested(MAX_JSON_DEPTH), "f")["x"]
    assert loads('"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["', "f").startswith("[")  # a string


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 5000])
def test_deeper_texts_are_refused_by_name(levels):
    with pytest.raises(DebateError) as info:
        loads(nested(levels), "payload_json")
    assert info.value.body["error"] == "invalid_json"
    assert info.value.body["message"] == f"payload_json nests deeper than {MAX_JSON_DEPTH} levels"


def test_brackets_that_never_close_thousands_deep_are_refused_as_too_deep():
    # They pair up nowhere, so the bracket measure leaves them to the decoder, which gives
    # up with a RecursionError: refused as too deep, never an internal error.
    with pytest.raises(DebateError) as info:
        loads("[" * 5000, "payload_json")
    assert info.value.body["message"] == f"payload_json nests deeper than {MAX_JSON_DEPTH} levels"


@pytest.mark.parametrize(
    ("parse", "code"),
    [
        pytest.param(lambda t: parse_verdict(t), "invalid_verdict", id="verdict_json"),
        pytest.param(lambda t: _trigger(t), "invalid_tool_response", id="tool_response_json"),
    ],
)
def test_each_json_argument_refuses_a_deep_text(parse, code):
    with pytest.raises(DebateError) as info:
        parse("[" * 5000 + "]" * 5000)
    assert info.value.body["error"] == code


@pytest.mark.parametrize(
    ("field", "code"),
    [("roles_json", "invalid_roles"), ("metadata_json", "invalid_json")],
)
async def test_debate_init_refuses_a_deep_text_and_creates_nothing(desk, field, code):
    args = {"metadata_json": LANE, "roles_json": json.dumps([{"role": "CONDUCTOR"}])}
    args[field] = "[" * 5000 + "]" * 5000
    body = await desk.refused(
        ALICE, "debate_init", title="deep", created_by_role="CONDUCTOR", **args
    )
    assert body["error"] == code
    count = await desk.runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM debate_topics").fetchone()[0]
    )
    assert count == 0
