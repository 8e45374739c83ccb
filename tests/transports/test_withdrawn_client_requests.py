"""A request the server sends its client and then gives up on is withdrawn.

The side that abandons a request should send ``notifications/cancelled`` with its id and a
reason (basic/utilities/cancellation): a ``roots/list`` the client does not answer before the
handler stops waiting (as the router's ``ROOTS_TIMEOUT`` does), and an elicitation still open
when the call that made it is cancelled. The official SDK client applies the notice: its
handler for the request is cancelled, which is what these tests watch.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 300  # mock seconds
#: How long the ``roots`` tool waits for ``roots/list``, as the router waits for it.
ROOTS_WAIT = 2.0


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 100 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.1)


async def _roots(call: ToolCall) -> dict[str, Any]:
    with trio.move_on_after(ROOTS_WAIT):
        return {"roots": await call.client.request("roots/list", {})}
    return {"roots": None}


async def _elicit(call: ToolCall) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    params = {"message": "go on?", "requestedSchema": schema}
    return {"told": await call.client.request("elicitation/create", params)}


def asker() -> Toolset:
    tools = [
        {"name": name, "description": name, "inputSchema": {"type": "object"}}
        for name in ("roots", "elicit")
    ]
    handlers = {"roots": _roots, "elicit": _elicit}
    return Toolset(name="asker", contract=None, tools=tools, handlers=handlers)


class Unanswering:
    """A client callback that never answers; it records being cancelled by the server."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.withdrawn = trio.Event()

    async def __call__(self, *args: Any) -> Any:
        self.asked.set()
        try:
            await trio.sleep_forever()
        finally:
            self.withdrawn.set()  # (cancelled: the SDK applied notifications/cancelled)


async def test_a_roots_list_left_unanswered_is_withdrawn(clock):
    client_side = Unanswering()
    config = Config(db=":memory:", host="127.0.0.1", port=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[asker()]) as server,
            mcp.Client(
                f"{server.url}/mcp/asker", mode="legacy", list_roots_callback=client_side
            ) as client,
        ):
            result = await client.call_tool("roots", {})
            assert result.structured_content == {"roots": None}
            await client_side.withdrawn.wait()


async def test_an_elicitation_open_when_its_call_is_cancelled_is_withdrawn(clock):
    client_side = Unanswering()
    config = Config(db=":memory:", host="127.0.0.1", port=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[asker()]) as server,
            mcp.Client(
                f"{server.url}/mcp/asker", mode="legacy", elicitation_callback=client_side
            ) as client,
        ):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "elicit", {})
                await client_side.asked.wait()
                nursery.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            await client_side.withdrawn.wait()
