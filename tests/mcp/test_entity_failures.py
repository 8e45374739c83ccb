"""What an agent reads when an entity's own ``handle`` raises (embedder's findings).

A `ToolError` raised there (rather than returned as the reply) reached the agent as "internal
error in <kind>; nothing was changed; retry the call"; a plain bug there, which fails the same
way on every call, was called retryable too; and the log line holding its traceback lacked the
correlation id the agent was given.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
import trio

from agora.config import Config
from agora.errors import Failure, ToolError
from agora.runtime.entity import Effects
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset


class Add(msgspec.Struct):
    text: str


class TodoList:
    vacant = False

    def handle(self, command: Add, now: object) -> Effects:
        if len(command.text) > 10:
            raise ToolError({"error": "too_long", "message": "10 characters at most"})
        return Effects(reply={"count": 1 / 0})  # a plain bug


class TodoKind:
    kind = "todo.list"

    def load(self, conn: object, key: str, now: object) -> TodoList:
        return TodoList()


async def add(call: ToolCall) -> Any:
    return await call.runtime.call(TodoKind(), "home", Add(call.args["text"]))


TOOL = {"name": "todo_add", "description": "Adds.", "inputSchema": {"type": "object"}}


async def _replies(texts: list[str], **extra: Any) -> list[dict[str, Any]]:
    toolset = Toolset("todo", {"todo_add": add}, contract=None, tools=[TOOL], **extra)
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=[toolset], listen=False) as server,
            server.client("/mcp/todo") as client,
        ):
            await client.initialize()
            return [
                await client.request("tools/call", {"name": "todo_add", "arguments": {"text": t}})
                for t in texts
            ]


async def test_a_tool_error_raised_in_handle_reaches_the_agent_as_its_refusal(caplog):
    caplog.set_level(logging.WARNING)
    [reply] = await _replies(["a very long item"])
    result = reply["result"]
    assert result["isError"] is True
    assert result["structuredContent"] == {"error": "too_long", "message": "10 characters at most"}
    assert caplog.records == []  # a refusal, not a failure


async def test_a_bug_in_handle_says_nothing_changed_not_to_retry_and_logs_its_id(caplog):
    seen: list[Failure] = []

    def keep(failure: Failure) -> dict[str, Any]:
        seen.append(failure)
        return {"error": failure.kind, "retryable": failure.retryable}

    [plain] = await _replies(["milk"])
    [shaped] = await _replies(["milk"], shape_failure=keep)
    text = plain["result"]["content"][0]["text"]
    match = re.fullmatch(
        r"internal error; nothing was changed \(correlation id (corr-[0-9a-f]{16})\)", text
    )
    assert match is not None, text  # no "retry the call", no entity kind named
    # The traceback's own line carries the id the agent got.
    (traced,) = [r for r in caplog.records if r.exc_info and match[1] in r.getMessage()]
    assert traced.getMessage() == f"todo.list home failed on Add (correlation {match[1]})"
    assert isinstance(traced.exc_info[1], ZeroDivisionError)
    [failure] = seen
    assert (failure.kind, failure.retryable) == ("internal", False)
    assert shaped["result"]["structuredContent"] == {"error": "internal", "retryable": False}
    assert failure.correlation_id in shaped["result"]["content"][0]["text"]
