"""A tools/call reply is encoded once: its bytes are those of the plain two-pass encoding."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import Catalog
from agora.mcp.results import SPLICE_MIN, RawResult, tool_reply, tool_result
from agora.mcp.session import Session

_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text()
_scalars |= st.floats(allow_nan=False, allow_infinity=False)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def session() -> Session:
    return Session(Catalog(), {"name": "t", "version": "0"})


def two_pass(s: Session, rid: rpc.RequestId, value: Any, modern: bool) -> bytes:
    """The encoding before the splice: the text copy encoded, then the whole message."""
    return rpc.encode(rpc.result(rid, s.finish(tool_result(value), modern)))


@settings(max_examples=200, deadline=None)
@given(
    value=st.dictionaries(st.text(), _json, max_size=5),
    rid=st.integers(0, 2**31) | st.text(max_size=8),
    modern=st.booleans(),
)
def test_a_spliced_reply_is_byte_identical_to_the_two_pass_encoding(
    value: dict[str, Any], rid: rpc.RequestId, modern: bool
) -> None:
    s = session()
    reply = tool_reply(s, rid, value, modern, splice_min=0)  # splice even the smallest
    assert rpc.encode(reply) == two_pass(s, rid, value, modern)
    # Readers of the message (in-process clients) see the same plain dict as before.
    assert reply == msgspec.json.decode(two_pass(s, rid, value, modern))


def test_the_text_copy_is_the_structured_content_encoded() -> None:
    value = {"room": 'é\u2028"q"', "n": [1, 2.5, None], "nested": {"ok": True}}
    reply = tool_reply(session(), 7, value, False, splice_min=0)
    result = reply["result"]
    assert result["structuredContent"] is value
    assert result["content"] == [{"type": "text", "text": rpc.encode(value).decode()}]
    assert type(reply) is rpc.Encoded


def test_raw_results_and_modern_stamps_are_unchanged() -> None:
    s = session()
    fixture = {"content": [{"type": "text", "text": "hi"}]}
    assert tool_reply(s, 1, RawResult(fixture), False) == rpc.result(1, fixture)
    modern = tool_reply(s, 2, {"a": 1}, True, splice_min=0)
    assert modern["result"]["resultType"] == "complete"
    assert rpc.encode(modern) == two_pass(s, 2, {"a": 1}, True)


def test_only_replies_from_splice_min_bytes_on_are_spliced() -> None:
    s = session()
    small = {"ok": True}
    big = {"objects": [{"id": f"o{i}", "name": "lamp \u00e9"} for i in range(40)]}
    assert len(rpc.encode(big)) >= SPLICE_MIN > len(rpc.encode(small))
    assert type(tool_reply(s, 1, small, False)) is dict
    spliced = tool_reply(s, 2, big, False)
    assert type(spliced) is rpc.Encoded
    assert rpc.encode(spliced) == two_pass(s, 2, big, False)


def test_a_guided_value_adds_its_guidance_after_the_json_copy() -> None:
    from agora.mcp.results import Guided

    plain = {"n": 1, "pad": "x" * SPLICE_MIN}
    for splice_min in (0, 10 * SPLICE_MIN):
        guided = Guided(plain, "do this next")
        assert guided == plain
        reply = tool_reply(session(), 3, guided, False, splice_min=splice_min)
        decoded = msgspec.json.decode(rpc.encode(reply))
        assert decoded["result"]["structuredContent"] == plain
        assert decoded["result"]["content"] == [
            {"type": "text", "text": rpc.encode(plain).decode()},
            {"type": "text", "text": "do this next"},
        ]


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"id": 1, "content": "hello world"}, id="content-string"),
        pytest.param(
            {"content": [{"type": "text", "text": "x"}], "title": "t"}, id="content-blocks"
        ),
    ],
)
def test_a_plain_dict_with_a_content_key_is_the_structured_result(value: dict[str, Any]) -> None:
    """A document's ``content`` field was taken for MCP's content blocks: the result went out
    raw, which the SDK's client refused (a string) or read without structured content."""
    result = tool_reply(session(), 4, value, False, splice_min=0)["result"]
    assert result["structuredContent"] == value
    assert result["content"] == [{"type": "text", "text": rpc.encode(value).decode()}]


def test_a_raw_result_needs_a_content_list() -> None:
    with pytest.raises(TypeError, match="needs a 'content' list of content blocks, not str"):
        RawResult({"content": "hello"})
