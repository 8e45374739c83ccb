"""Request ids and the handshake in the sans-io session: the rules every transport shares."""

from __future__ import annotations

import pytest

from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import Catalog, ToolEntry
from agora.mcp.session import Invoke, Send, Session

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}}
CALL = {"name": "echo"}


def session() -> Session:
    tool = ToolEntry(name="echo", description="", input_schema={"type": "object"}, target="echo")
    s = Session(Catalog(tools=[tool]), {"name": "t", "version": "0"})
    assert isinstance(s.handle(rpc.Request(0, "initialize", INIT))[0], Send)
    s.handle(rpc.Notification("notifications/initialized", {}))
    return s


def error_of(actions: list[object]) -> dict[str, object]:
    assert len(actions) == 1
    action = actions[0]
    assert isinstance(action, Send), action
    assert "error" in action.message, action.message
    return action.message  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        pytest.param("tools/call", CALL, id="a-call"),
        pytest.param("ping", {}, id="a-ping"),
        pytest.param("tools/list", {}, id="a-list"),
    ],
)
def test_a_request_reusing_a_running_id_is_refused(method, params):
    s = session()
    assert isinstance(s.handle(rpc.Request(5, "tools/call", CALL))[0], Invoke)
    message = error_of(s.handle(rpc.Request(5, method, params)))
    assert message["id"] == 5
    assert message["error"] == {"code": rpc.INVALID_REQUEST, "message": "duplicate request id"}


def test_an_id_is_free_again_once_its_call_ended():
    s = session()
    assert isinstance(s.handle(rpc.Request("a", "tools/call", CALL))[0], Invoke)
    s.ended("a")
    assert isinstance(s.handle(rpc.Request("a", "tools/call", CALL))[0], Invoke)
    assert s.running == {"a"}


def test_answered_requests_do_not_hold_their_id():
    s = session()
    for _ in range(2):
        action = s.handle(rpc.Request(7, "ping", {}))[0]
        assert isinstance(action, Send)
        assert action.message["result"] == {}
    assert s.running == set()


def test_a_refused_request_does_not_hold_its_id():
    s = session()
    error_of(s.handle(rpc.Request(8, "tools/call", {"name": "no_such_tool"})))
    assert s.running == set()


def test_a_second_initialize_is_refused_and_changes_nothing():
    s = session()
    message = error_of(
        s.handle(rpc.Request(1, "initialize", {**INIT, "protocolVersion": "2024-11-05"}))
    )
    assert message["error"]["code"] == rpc.INVALID_REQUEST  # type: ignore[index]
    assert "already initialized" in message["error"]["message"]  # type: ignore[index]
    assert s.protocol_version == "2025-11-25"


def fresh() -> Session:
    tool = ToolEntry(name="echo", description="", input_schema={"type": "object"}, target="echo")
    return Session(Catalog(tools=[tool]), {"name": "t", "version": "0"})


@pytest.mark.parametrize(
    ("params", "words"),
    [
        # 200,000 two-letter strings: a megabyte held 15 MB as Python objects, for up to
        # session_idle_seconds, per session (a hostile client's find).
        pytest.param({**INIT, "capabilities": {"x": ["0a"] * 200_000}},
                     "initialize: params.capabilities is 1000007 bytes of JSON, more than the"
                     " 8192 a session keeps", id="capabilities-too-large"),
        pytest.param({**INIT, "capabilities": []},
                     "initialize: params.capabilities must be an object", id="capabilities-list"),
        pytest.param({**INIT, "protocolVersion": 20250618},
                     "initialize needs a string as params.protocolVersion", id="version-number"),
    ],
)  # fmt: skip
def test_an_initialize_declaring_what_no_session_keeps_is_refused(params, words):
    s = fresh()
    message = error_of(s.handle(rpc.Request(1, "initialize", params)))
    assert message["error"] == {"code": rpc.INVALID_PARAMS, "message": words}
    assert s.protocol_version is None  # not initialized: the client may try again
    assert isinstance(s.handle(rpc.Request(2, "initialize", INIT))[0], Send)
    assert s.protocol_version == "2025-11-25"


def test_a_session_keeps_only_the_short_texts_of_client_info():
    s = fresh()
    info = {"name": "n" * 1_000_000, "version": "1.0", "title": "T", "icons": [{"src": "x" * 9}]}
    assert isinstance(s.handle(rpc.Request(1, "initialize", {**INIT, "clientInfo": info}))[0], Send)
    assert s.client_info == {"name": "n" * 256, "version": "1.0", "title": "T"}
    caps = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}
    s = fresh()
    s.handle(rpc.Request(1, "initialize", {**INIT, "capabilities": caps}))
    assert s.client_capabilities == caps  # a real client's, kept whole
