"""Rejected arguments reach the toolset as (path, keyword, detail), within per-toolset limits."""

from __future__ import annotations

import json
from typing import Any

import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ArgumentLimits, ToolCall, Toolset

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "prefs": {
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        },
        "blob": {},
    },
    "required": ["name"],
    "additionalProperties": False,
}


async def echo(call: ToolCall) -> dict[str, Any]:
    return {"ok": True}


def _toolset(name: str, **extra: Any) -> Toolset:
    tool = {"name": f"{name}_echo", "description": "Echo.", "inputSchema": SCHEMA}
    return Toolset(name, {f"{name}_echo": echo}, contract=None, tools=[tool], **extra)


def structured(issues) -> dict[str, Any]:
    return {
        "ok": False,
        "problems": [
            {"path": list(i.path), "keyword": i.keyword, "detail": i.detail} for i in issues
        ],
    }


async def _call(server, path: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with server.client(path) as client:
        await client.initialize()
        return await client.call_tool(tool, args)


async def test_a_toolset_gets_each_problem_as_path_keyword_and_detail():
    sentences: list[list[str]] = []

    def legacy(problems: list[str]) -> dict[str, Any]:
        sentences.append(problems)
        return {"ok": False}

    sets = [_toolset("new", reject_issues=structured), _toolset("old", reject_arguments=legacy)]
    bad = {"name": "Bob", "prefs": {"tags": ["a", 3]}, "extra": 1}
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            result = await _call(server, "/mcp/new", "new_echo", bad)
            missing = await _call(server, "/mcp/new", "new_echo", {})
            old = await _call(server, "/mcp/old", "old_echo", bad)
    assert result["isError"] is True
    problems = result["structuredContent"]["problems"]
    assert sorted((tuple(p["path"]), p["keyword"]) for p in problems) == [
        (("extra",), "additionalProperties"),
        (("name",), "pattern"),
        (("prefs", "tags", 1), "type"),
    ]
    assert next(p for p in problems if p["keyword"] == "type")["detail"] == (
        "must be a string, got integer"
    )
    assert missing["structuredContent"]["problems"] == [
        {"path": ["name"], "keyword": "required", "detail": "is required"}
    ]
    # The text block mirrors the toolset's structured body, as for every other tool result.
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    # The older hook still gets sentences.
    assert old["structuredContent"] == {"ok": False}
    assert "argument 'name': must match pattern ^[a-z]+$" in sentences[0]


async def test_size_and_depth_limits_are_per_toolset():
    strict = _toolset("strict", reject_issues=structured, argument_limits=ArgumentLimits(
        max_depth=3, max_nodes=50, max_bytes=200))  # fmt: skip
    loose = _toolset("loose", reject_issues=structured)
    deep = {"name": "a", "blob": {"x": {"y": {"z": 1}}}}
    big = {"name": "a", "blob": "x" * 300}
    many = {"name": "a", "blob": list(range(60))}
    with trio.fail_after(20):
        async with open_server(
            Config(db=":memory:"), toolsets=[strict, loose], listen=False
        ) as server:
            results = {
                label: await _call(server, "/mcp/strict", "strict_echo", args)
                for label, args in (("deep", deep), ("big", big), ("many", many))
            }
            for args in (deep, big, many):
                assert (await _call(server, "/mcp/loose", "loose_echo", args)).get(
                    "isError"
                ) is None
    keywords = {
        label: [p["keyword"] for p in r["structuredContent"]["problems"]]
        for label, r in results.items()
    }
    assert keywords == {"deep": ["maxDepth"], "big": ["maxBytes"], "many": ["maxNodes"]}
    assert results["big"]["structuredContent"]["problems"][0]["detail"] == (
        "take more than 200 bytes as JSON"
    )


async def test_a_toolset_is_told_of_each_refusal_and_a_failing_hook_changes_no_answer(caplog):
    """`Toolset.rejected` hears the tool, the arguments as sent and the body answered (the
    router logs its writes' refusals by it); a hook that raises is logged, and the refusal is
    answered as without it."""
    told: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def hear(tool: str, args: dict[str, Any], body: dict[str, Any]) -> None:
        told.append((tool, args, body))

    def broken(tool: str, args: dict[str, Any], body: dict[str, Any]) -> None:
        raise RuntimeError("the hook's own bug")

    sets = [
        _toolset("heard", reject_issues=structured, rejected=hear),
        _toolset("broken", reject_issues=structured, rejected=broken),
        _toolset("plain", reject_issues=structured),
    ]
    bad = {"name": "Bob", "extra": 1}
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            heard = await _call(server, "/mcp/heard", "heard_echo", bad)
            fine = await _call(server, "/mcp/heard", "heard_echo", {"name": "bob"})
            failed = await _call(server, "/mcp/broken", "broken_echo", bad)
            plain = await _call(server, "/mcp/plain", "plain_echo", bad)
    assert told == [("heard_echo", bad, heard["structuredContent"])]
    assert fine == {"content": [{"type": "text", "text": '{"ok":true}'}],
                    "structuredContent": {"ok": True}}  # fmt: skip
    assert heard == failed == plain
    assert any(
        "its rejected hook failed on broken_echo" in r.getMessage() and r.exc_info
        for r in caplog.records
    )


async def test_without_a_hook_the_refusal_is_text_saying_the_problems():
    """What toolset-api.md says of a refusal: text only, the problems' sentences, when no hook
    builds a body (with one, the text is the body's JSON, asserted above)."""
    with trio.fail_after(20):
        async with open_server(
            Config(db=":memory:"), toolsets=[_toolset("bare")], listen=False
        ) as server:
            result = await _call(server, "/mcp/bare", "bare_echo", {"name": "Bob", "extra": 1})
    assert result["isError"] is True
    assert "structuredContent" not in result
    (block,) = result["content"]
    assert block["text"].startswith("invalid arguments: ")
    assert sorted(block["text"].removeprefix("invalid arguments: ").split("; ")) == [
        "argument 'extra': is not an allowed field (allowed: blob, name, prefs)",
        "argument 'name': must match pattern ^[a-z]+$",
    ]
