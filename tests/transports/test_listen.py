"""``subscriptions/listen`` at 2026-07-28: a stream of resource updates, on every transport.

Over Streamable HTTP the listen's response is an SSE stream that stays open; over WebSocket
its notifications go on the connection. Either way the first message acknowledges the URIs
honoured, every notification carries the listen's id, a refused URI refuses the whole listen
(as ``resources/subscribe`` would refuse it), and a shutdown ends the stream with its result.
The removed ``resources/subscribe`` is refused at this revision.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from http_support import MODERN_META

from agora.client import McpError, WsClient, connect
from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server
from agora.toolsets.debate.rules import inbox_uri

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.shared.exceptions import MCPError  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

GUARD = 20
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
MISSING = inbox_uri("00000000-0000-4000-8000-00000000dead")


@pytest.fixture
async def server():
    config = Config(host="127.0.0.1", port=0, db=":memory:", toolsets=["debate"])
    async with open_server(config) as running:
        yield running


async def test_the_sdk_hears_of_an_inbox_on_its_listen_stream(server):
    hub = server.runtime.resources
    with trio.fail_after(GUARD):
        async with mcp.Client(f"{server.url}/mcp/debate", read_timeout_seconds=GUARD) as client:
            assert client.protocol_version == "2026-07-28"
            opened = await client.call_tool("debate_session_open", {})
            inbox = inbox_uri(opened.structured_content["session_id"])
            async with client.listen(resource_subscriptions=[inbox]) as sub:
                assert sub.honored.resource_subscriptions == [inbox]
                assert sub.honored.tools_list_changed is None
                assert hub.subscribers(inbox) == 1
                server.runtime.resources_updated(inbox)  # what a commit to it does
                event = await sub.__anext__()
                assert event.uri == inbox
            # The client closed the stream: the listen is gone on the server.
            await gone(hub, inbox)


async def test_a_listen_to_an_inbox_that_is_not_yours_is_refused(server):
    with trio.fail_after(GUARD):
        async with mcp.Client(f"{server.url}/mcp/debate", read_timeout_seconds=GUARD) as client:
            with pytest.raises(MCPError) as refused:
                async with client.listen(resource_subscriptions=[MISSING]):
                    pass
            assert refused.value.error.code == rpc.INVALID_PARAMS  # -32002 was removed
            assert server.runtime.resources.subscribers(MISSING) == 0


async def gone(hub: Any, uri: str) -> None:
    """Until nobody on the server watches ``uri`` (the caller bounds the wait)."""
    while True:
        if not hub.subscribers(uri):
            return
        await trio.sleep(0.01)


async def next_message(client: WsClient, **fields: Any) -> dict[str, Any]:
    """The first message that is no reply to a request of ours and has ``fields``."""
    while True:
        for i, msg in enumerate(client.notifications):
            if all(msg.get(k) == v for k, v in fields.items()):
                return client.notifications.pop(i)
        await trio.sleep(0.01)


def listen_request(rid: str, uris: list[str]) -> dict[str, Any]:
    notifications = {"resourceSubscriptions": uris, "toolsListChanged": True, "future": 1}
    params = {"notifications": notifications, "_meta": MODERN_META}
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}


async def test_a_websocket_listen_is_tagged_and_ends_with_a_cancel(server):
    hub = server.runtime.resources
    url = server.url + "/mcp/debate"
    with trio.fail_after(GUARD):
        async with connect(url, initialize=False) as client:
            opened = await client.request(
                "tools/call", {"name": "debate_session_open", "arguments": {}, "_meta": MODERN_META}
            )
            inbox = inbox_uri(opened["structuredContent"]["session_id"])
            await client.send(listen_request("l1", [inbox]))
            ack = await next_message(client, method="notifications/subscriptions/acknowledged")
            # Only what it honours: the tool list never changes, unknown kinds are left out.
            assert ack["params"] == {
                "notifications": {"resourceSubscriptions": [inbox]},
                "_meta": {SUBSCRIPTION_ID: "l1"},
            }
            server.runtime.resources_updated(inbox)
            note = await next_message(client, method="notifications/resources/updated")
            assert note["params"] == {"uri": inbox, "_meta": {SUBSCRIPTION_ID: "l1"}}
            await client.notify("notifications/cancelled", {"requestId": "l1"})
            await gone(hub, inbox)
            # The removed subscribe is refused at this revision, naming its successor.
            with pytest.raises(McpError) as refused:
                await client.request("resources/subscribe", {"uri": inbox, "_meta": MODERN_META})
            assert refused.value.error["code"] == rpc.METHOD_NOT_FOUND
            assert "subscriptions/listen" in refused.value.error["message"]


async def test_shutdown_ends_a_websocket_listen_with_its_result():
    config = Config(host="127.0.0.1", port=0, db=":memory:", toolsets=["debate"])
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            stop = trio.Event()
            heard: dict[str, Any] = {}

            async def run_server(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
                async with open_server(config) as running:
                    task_status.started(running)
                    await stop.wait()

            running = await nursery.start(run_server)
            async with connect(running.url + "/mcp/debate", initialize=False) as client:
                await client.send(listen_request("l2", []))
                await next_message(client, method="notifications/subscriptions/acknowledged")
                stop.set()  # the server shuts down
                heard.update(await next_message(client, id="l2"))
    assert heard["result"]["resultType"] == "complete"
    assert heard["result"]["_meta"][SUBSCRIPTION_ID] == "l2"
