"""The guard before the schema: depth, size and NUL limits, with or without the JSON text.

A tool's arguments are encoded for the NUL check anyway, and a text short enough cannot
break the depth or node limit, so the guard skips its walk then (`agora.mcp.guard`).
These tests check that shortcut never changes a verdict, at the limits too.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agora.mcp.guard import guard
from agora.mcp.validation import compile_validator

# Values whose every node takes as few bytes as JSON allows ("", 0, [], {}), so the
# shortcut is taken right at its bound.
LEAVES = st.sampled_from(["", 0, 1, "a", None, True])
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=30,
)


def _rule(issue) -> str | None:
    return None if issue is None else issue.rule


@settings(max_examples=400, deadline=None)
@given(
    value=VALUES | st.dictionaries(st.sampled_from("xyz"), VALUES),
    depth=st.integers(1, 6),
    nodes=st.integers(0, 40),
)
def test_the_shortcut_gives_the_walks_verdict(value, depth, nodes):
    walked = guard(value, depth, nodes, 0, False)  # no text: the walk alone
    assert _rule(guard(value, depth, nodes, 0, True)) == _rule(walked)
    assert _rule(guard(value, depth, nodes, 10**6, False)) == _rule(walked)


def test_limits_still_hold_right_at_the_bound():
    flat = {"a": "", "b": 0}  # 2 nodes in 13 bytes
    assert _rule(guard(flat, 1, 2, 0, True)) is None
    assert _rule(guard(flat, 1, 1, 0, True)) == "maxNodes"
    nested = {"a": [[]]}  # three levels
    assert _rule(guard(nested, 3, 50, 0, True)) is None
    assert _rule(guard(nested, 2, 50, 0, True)) == "maxDepth"
    assert _rule(guard({"a": "\x00"}, 3, 50, 0, True)) == "noNul"
    assert _rule(guard({"a": "x" * 40}, 3, 50, 30, True)) == "maxBytes"


def test_a_tool_validator_refuses_deep_and_large_arguments():
    validator = compile_validator({"type": "object"}, max_depth=3, max_nodes=5, refuse_nul=True)
    assert validator.errors({"a": {"b": {}}}) == []
    assert validator.errors({"a": {"b": {"c": 1}}}) == []  # three levels
    assert [i.rule for i in validator.errors({"a": {"b": {"c": []}}})] == ["maxDepth"]
    assert [i.rule for i in validator.errors({"a": list(range(5))})] == ["maxNodes"]
