"""The exact words an MCP client reads when a command failed in the runtime.

An operator read "...; nothing was changed, retry; retry the call" and "...; read the current
state before calling again; read the current state before deciding to call again": the
runtime's message said the advice and the server added it again. The runtime's messages now
say what happened; the server's answer (`agora.server.failed.failed_reply`) adds the advice,
once. Each failure here is built by the runtime's own functions and raised by a tool handler
of an in-process server, whose client reads the text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.errors import StoreError
from agora.runtime.failures import commit_failed
from agora.runtime.guarding import GuardCounts, busy
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

if TYPE_CHECKING:
    from collections.abc import Callable

#: Each failure, made when the tool raises it (`busy` logs, once a minute per entity).
FAILURES: dict[str, Callable[[], Exception]] = {
    "busy": lambda: busy("counter k", GuardCounts()),
    "busy-atomic": lambda: busy("the entities", GuardCounts()),
    "unsaved": lambda: commit_failed(StoreError("write failed: gone"), "counter k", "detail"),
    "unknown": lambda: commit_failed(
        StoreError("write not acknowledged", outcome_unknown=True), "counter k", "detail"
    ),
}


async def fail(call: ToolCall) -> dict[str, Any]:
    raise FAILURES[call.args["kind"]]()


TOOL = {"name": "words_fail", "description": "Fails.", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        pytest.param(
            "busy",
            "counter k kept changing elsewhere; nothing was changed; retry the call",
            id="busy",
        ),
        pytest.param(
            "busy-atomic",
            "the entities kept changing elsewhere; nothing was changed; retry the call",
            id="busy-atomic",
        ),
        pytest.param(
            "unsaved",
            "the change could not be saved; nothing was changed; retry the call",
            id="unsaved",
        ),
        pytest.param(
            "unknown",
            "the change may or may not have been saved (the database did not confirm it);"
            " read the current state before deciding to call again",
            id="outcome-unknown",
        ),
    ],
)
async def test_a_failed_command_says_its_advice_once(kind: str, said: str) -> None:
    toolset = Toolset("words", {"words_fail": fail}, contract=None, tools=[TOOL])
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=[toolset], listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()
            reply = await client.request(
                "tools/call", {"name": "words_fail", "arguments": {"kind": kind}}
            )
    assert reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert re.fullmatch(re.escape(said) + r" \(correlation id corr-[0-9a-f]{16}\)", text), text
