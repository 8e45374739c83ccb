"""Resources, subscriptions and prompt arguments in the sans-io session: plain sync tables."""

from __future__ import annotations

from typing import Any

import pytest

from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import Catalog, PromptEntry, ResourceEntry
from agora.mcp.session import Invoke, Send, Session

TEXT = ResourceEntry("test://text", "text", target="read-text")
TEMPLATE = ResourceEntry("test://item/{id}/part/{part}", "item", template=True, target="read-item")
CATCH_ALL = ResourceEntry("test://{anything}", "any", template=True, target="read-any")
PROMPT = PromptEntry(
    "greet",
    arguments=({"name": "who", "required": True}, {"name": "mood"}),
    target="greet",
)


def session(*resources: ResourceEntry) -> Session:
    s = Session(Catalog(resources=resources, prompts=[PROMPT]), {"name": "t", "version": "0"})
    s.handle(rpc.Request(0, "initialize", {"protocolVersion": "2025-11-25"}))
    s.handle(rpc.Notification("notifications/initialized", {}))
    return s


def one(s: Session, method: str, params: dict[str, Any]) -> Invoke | Send:
    actions = s.handle(rpc.Request(1, method, params))
    assert len(actions) == 1
    action = actions[0]
    assert isinstance(action, Invoke | Send)
    return action


@pytest.mark.parametrize(
    ("entry", "uri", "bound"),
    [
        pytest.param(TEXT, "test://text", {}, id="plain"),
        pytest.param(TEXT, "test://text/", None, id="plain-needs-exact-uri"),
        pytest.param(TEMPLATE, "test://item/7/part/a", {"id": "7", "part": "a"}, id="two-vars"),
        pytest.param(TEMPLATE, "test://item/7/part/", None, id="empty-var"),
        pytest.param(TEMPLATE, "test://item/7/8/part/a", None, id="var-is-one-segment"),
        pytest.param(TEMPLATE, "test://itemX7/part/a", None, id="literal-text-is-literal"),
        pytest.param(TEMPLATE, "test://item/7/part/a?x=1", None, id="no-query"),
    ],
)
def test_resource_entries_match_uris(
    entry: ResourceEntry, uri: str, bound: dict[str, str] | None
) -> None:
    assert entry.match(uri) == bound


@pytest.mark.parametrize(
    ("uri", "target", "args"),
    [
        pytest.param("test://text", "read-text", {}, id="plain-wins-over-template"),
        pytest.param("test://item/1/part/b", "read-item", {"id": "1", "part": "b"}, id="template"),
        pytest.param("test://other", "read-any", {"anything": "other"}, id="first-template"),
    ],
)
def test_a_read_invokes_the_resource_that_serves_the_uri(
    uri: str, target: str, args: dict[str, str]
) -> None:
    action = one(session(TEMPLATE, CATCH_ALL, TEXT), "resources/read", {"uri": uri})
    assert isinstance(action, Invoke)
    assert (action.kind, action.name, action.target, action.args) == ("resource", uri, target, args)


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        pytest.param("resources/read", {"uri": "test://nope"}, rpc.RESOURCE_NOT_FOUND, id="read"),
        pytest.param("resources/read", {}, rpc.INVALID_PARAMS, id="read-no-uri"),
        pytest.param(
            "resources/subscribe", {"uri": "test://nope"}, rpc.RESOURCE_NOT_FOUND, id="subscribe"
        ),
        pytest.param("resources/subscribe", {"uri": 3}, rpc.INVALID_PARAMS, id="subscribe-type"),
        pytest.param("prompts/get", {"name": "greet"}, rpc.INVALID_PARAMS, id="prompt-missing"),
        pytest.param(
            "prompts/get",
            {"name": "greet", "arguments": {"who": "x", "mood": 1}},
            rpc.INVALID_PARAMS,
            id="prompt-type",
        ),
        pytest.param("prompts/get", {"name": "nope"}, rpc.INVALID_PARAMS, id="prompt-unknown"),
    ],
)
def test_bad_resource_and_prompt_requests_are_errors(
    method: str, params: dict[str, Any], code: int
) -> None:
    action = one(session(TEXT), method, params)
    assert isinstance(action, Send)
    assert action.message["error"]["code"] == code


def test_optional_prompt_arguments_may_be_left_out() -> None:
    action = one(session(TEXT), "prompts/get", {"name": "greet", "arguments": {"who": "x"}})
    assert isinstance(action, Invoke)
    assert action.args == {"who": "x"}


def test_subscriptions_decide_who_hears_of_updates() -> None:
    s = session(TEXT, TEMPLATE)
    assert s.resource_updated("test://text") is None
    for uri in ("test://text", "test://item/1/part/a"):
        reply = one(s, "resources/subscribe", {"uri": uri})
        assert isinstance(reply, Send)
        assert reply.message["result"] == {}
    assert s.resource_updated("test://item/1/part/a") == rpc.notification(
        "notifications/resources/updated", {"uri": "test://item/1/part/a"}
    )
    one(s, "resources/unsubscribe", {"uri": "test://text"})
    one(s, "resources/unsubscribe", {"uri": "test://never-subscribed"})  # not an error
    assert s.resource_updated("test://text") is None
    assert s.subscriptions == {"test://item/1/part/a"}


def test_a_resource_with_a_check_is_subscribed_only_once_its_check_passed() -> None:
    checked = ResourceEntry(
        "test://inbox/{id}", "inbox", template=True, target="read-inbox", check="check-inbox"
    )
    s = session(checked)
    action = one(s, "resources/subscribe", {"uri": "test://inbox/7"})
    assert isinstance(action, Invoke)  # the driver runs the check
    assert (action.kind, action.name, action.args, action.target) == (
        "subscribe",
        "test://inbox/7",
        {"id": "7"},
        "check-inbox",
    )
    assert s.subscriptions == set()  # not before the check passed
    assert s.subscribed("test://inbox/7", action.id) == {}
    s.ended(action.id)
    assert s.subscriptions == {"test://inbox/7"}
    # A URI no entry serves is refused here, as a read is, before any check.
    refused = one(s, "resources/subscribe", {"uri": "test://elsewhere"})
    assert isinstance(refused, Send)
    assert refused.message["error"]["code"] == rpc.RESOURCE_NOT_FOUND


def test_an_unsubscribe_sent_while_the_check_runs_wins() -> None:
    """The client's last word on a URI holds: a subscribe whose check is still running when
    an unsubscribe for the same URI arrives ends unsubscribed (its answer still succeeds);
    a subscribe sent after that unsubscribe subscribes again."""
    checked = ResourceEntry(
        "test://inbox/{id}", "inbox", template=True, target="read-inbox", check="check-inbox"
    )
    s = session(checked)
    first = s.handle(rpc.Request(1, "resources/subscribe", {"uri": "test://inbox/7"}))[0]
    other = s.handle(rpc.Request(2, "resources/subscribe", {"uri": "test://inbox/8"}))[0]
    unsub = s.handle(rpc.Request(3, "resources/unsubscribe", {"uri": "test://inbox/7"}))[0]
    assert isinstance(unsub, Send)
    assert unsub.message["result"] == {}
    again = s.handle(rpc.Request(4, "resources/subscribe", {"uri": "test://inbox/7"}))[0]
    assert isinstance(first, Invoke)
    assert isinstance(other, Invoke)
    assert isinstance(again, Invoke)
    assert s.subscribed(first.name, first.id) == {}  # its check passed after the unsubscribe
    s.ended(first.id)
    assert s.subscriptions == set()
    assert s.subscribed(other.name, other.id) == {}  # another URI's is untouched
    s.ended(other.id)
    assert s.subscriptions == {"test://inbox/8"}
    assert s.subscribed(again.name, again.id) == {}
    s.ended(again.id)
    assert s.subscriptions == {"test://inbox/8", "test://inbox/7"}


def test_subscribing_without_resources_is_method_not_found() -> None:
    action = one(session(), "resources/subscribe", {"uri": "test://text"})
    assert isinstance(action, Send)
    assert action.message["error"]["code"] == rpc.METHOD_NOT_FOUND
