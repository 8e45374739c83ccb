"""The conformance fixture resources, prompts and completion, through the in-process client.

Resources are read by URI (templates bind their variables), subscriptions decide who hears
of updates, prompts check their arguments, and completion filters by prefix.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.server.embed import InProcessClient

TIMEOUT = 10
CONFIG = Config(db=":memory:", port=0, conformance=True, toolsets=["conformance"])


def notes(client: InProcessClient, method: str) -> list[dict[str, Any]]:
    """The params of every message the server sent with ``method``."""
    return [m["params"] for m in client.notifications if m.get("method") == method]


async def until(ready: Callable[[], bool]) -> None:
    """Until ``ready()`` (the caller bounds the wait)."""
    while True:
        if ready():
            return
        await trio.sleep(0.01)


@pytest.mark.parametrize(
    ("uri", "key", "expected"),
    [
        pytest.param("test://static-text", "text", "This is the content", id="text"),
        pytest.param("test://static-binary", "blob", "iVBORw0KGgo", id="binary"),
        pytest.param("test://template/123/data", "text", '"id": "123"', id="template"),
        pytest.param("test://watched-resource", "text", "revision 0", id="watched"),
    ],
)
async def test_resources_are_read_by_uri(
    client: InProcessClient, uri: str, key: str, expected: str
) -> None:
    with trio.fail_after(TIMEOUT):
        contents = (await client.request("resources/read", {"uri": uri}))["result"]["contents"]
    assert contents[0]["uri"] == uri
    assert contents[0]["mimeType"]
    assert expected in contents[0][key]


async def test_lists_separate_resources_from_templates(client: InProcessClient) -> None:
    with trio.fail_after(TIMEOUT):
        plain = (await client.request("resources/list"))["result"]["resources"]
        templates = (await client.request("resources/templates/list"))["result"]
    assert {r["uri"] for r in plain} == {
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    }
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "test://template/{id}/data"
    ]


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("test://nowhere", id="unknown"),
        pytest.param("test://template//data", id="empty-variable"),
        pytest.param("test://template/1/2/data", id="two-segments"),
    ],
)
async def test_an_unknown_resource_is_a_resource_not_found_error(
    client: InProcessClient, uri: str
) -> None:
    with trio.fail_after(TIMEOUT):
        reply = await client.request("resources/read", {"uri": uri})
        subscribed = await client.request("resources/subscribe", {"uri": uri})
    assert reply["error"]["code"] == rpc.RESOURCE_NOT_FOUND
    assert reply["error"]["data"] == {"uri": uri}
    assert subscribed["error"]["code"] == rpc.RESOURCE_NOT_FOUND


async def test_subscribers_hear_of_updates_until_they_unsubscribe(client: InProcessClient) -> None:
    watched = {"uri": "test://watched-resource"}
    with trio.fail_after(TIMEOUT):
        await client.call_tool("test_update_watched_resource")  # not subscribed yet
        assert (await client.request("resources/subscribe", watched))["result"] == {}
        await client.call_tool("test_update_watched_resource")
        # Sent from the session's own task, as after a commit: it may follow the tool's reply.
        await until(lambda: bool(notes(client, "notifications/resources/updated")))
        assert (await client.request("resources/unsubscribe", watched))["result"] == {}
        await client.call_tool("test_update_watched_resource")
        contents = (await client.request("resources/read", watched))["result"]["contents"]
    assert notes(client, "notifications/resources/updated") == [watched]
    assert contents[0]["text"] == "revision 3"


async def test_an_update_reaches_other_sessions_subscribed_or_listening() -> None:
    """test_update_watched_resource tells the runtime's resource hub, as a commit does: every
    session watching the URI hears of it, not only the one that called the tool."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    watched = {"uri": "test://watched-resource"}
    wanted = {"resourceSubscriptions": [watched["uri"]]}
    async with (
        open_server(CONFIG, listen=False) as server,
        server.client("/mcp") as subscriber,
        server.client("/mcp") as listener,
        server.client("/mcp") as caller,
    ):
        with trio.fail_after(TIMEOUT):
            await subscriber.initialize()
            assert (await subscriber.request("resources/subscribe", watched))["result"] == {}
            listen = rpc.request("l1", "subscriptions/listen", {"notifications": wanted})
            listen["params"]["_meta"] = meta
            await listener.conn.feed(rpc.parse(listen))
            await caller.initialize()
            await caller.call_tool("test_update_watched_resource")
            await until(lambda: bool(subscriber.notifications) and len(listener.notifications) > 1)
    assert notes(subscriber, "notifications/resources/updated") == [watched]
    (heard,) = notes(listener, "notifications/resources/updated")
    assert heard["uri"] == watched["uri"]
    assert heard["_meta"] == {"io.modelcontextprotocol/subscriptionId": "l1"}
    assert notes(caller, "notifications/resources/updated") == []


async def test_capabilities_declare_resources_prompts_and_completion() -> None:
    async with open_server(CONFIG, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(TIMEOUT):
            caps = (await client.initialize())["capabilities"]
    assert caps["resources"]["subscribe"] is True
    assert "prompts" in caps
    assert "completions" in caps
    assert "logging" in caps


@pytest.mark.parametrize(
    ("name", "args", "types", "quoted"),
    [
        pytest.param("test_simple_prompt", {}, ["text"], "simple prompt", id="simple"),
        pytest.param(
            "test_prompt_with_arguments",
            {"arg1": "hello", "arg2": "world"},
            ["text"],
            "arg1='hello', arg2='world'",
            id="arguments",
        ),
        pytest.param(
            "test_prompt_with_embedded_resource",
            {"resourceUri": "test://example-resource"},
            ["resource", "text"],
            "test://example-resource",
            id="embedded",
        ),
        pytest.param("test_prompt_with_image", {}, ["image", "text"], "image/png", id="image"),
    ],
)
async def test_prompts_render_their_messages(
    client: InProcessClient, name: str, args: dict[str, str], types: list[str], quoted: str
) -> None:
    with trio.fail_after(TIMEOUT):
        result = (await client.request("prompts/get", {"name": name, "arguments": args}))["result"]
    assert [m["content"]["type"] for m in result["messages"]] == types
    assert {m["role"] for m in result["messages"]} == {"user"}
    assert quoted in json.dumps(result["messages"])


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        pytest.param({"arg1": "x"}, "missing required argument 'arg2'", id="missing"),
        pytest.param({"arg1": "x", "arg2": 2}, "argument 'arg2' must be a string", id="type"),
    ],
)
async def test_prompt_arguments_are_checked(
    client: InProcessClient, args: dict[str, Any], problem: str
) -> None:
    with trio.fail_after(TIMEOUT):
        reply = await client.request(
            "prompts/get", {"name": "test_prompt_with_arguments", "arguments": args}
        )
    assert reply["error"]["code"] == rpc.INVALID_PARAMS
    assert problem in reply["error"]["message"]


@pytest.mark.parametrize(
    ("ref", "argument", "values"),
    [
        pytest.param(
            {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            {"name": "arg1", "value": "par"},
            ["paris", "park", "party"],
            id="prompt",
        ),
        pytest.param(
            {"type": "ref/resource", "uri": "test://template/{id}/data"},
            {"name": "id", "value": "1"},
            ["1", "123"],
            id="template",
        ),
        pytest.param(
            {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            {"name": "arg9", "value": ""},
            [],
            id="unknown-argument",
        ),
    ],
)
async def test_completion_offers_values_by_prefix(
    client: InProcessClient, ref: dict[str, str], argument: dict[str, str], values: list[str]
) -> None:
    with trio.fail_after(TIMEOUT):
        reply = await client.request("completion/complete", {"ref": ref, "argument": argument})
    assert reply["result"]["completion"] == {
        "values": values,
        "total": len(values),
        "hasMore": False,
    }


async def test_completion_of_an_unknown_reference_is_invalid_params(
    client: InProcessClient,
) -> None:
    with trio.fail_after(TIMEOUT):
        reply = await client.request(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a"}},
        )
    assert reply["error"]["code"] == rpc.INVALID_PARAMS
