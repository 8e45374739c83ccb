"""The bridge's session memory (sans-io): what a dropped connection answers, and what a new
one replays so the stdio client's session stays valid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agora.relay import CONNECTION_LOST, Relay, ReplayRefused

URL = "ws://127.0.0.1:8765/mcp/chess"
INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


def line(**message: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def text(**message: Any) -> str:
    return line(**message).decode()


def handshake(relay: Relay) -> None:
    relay.from_client(line(id=1, method="initialize", params=INIT_PARAMS))
    relay.from_server(text(id=1, result={"protocolVersion": "2025-11-25"}))
    relay.from_client(line(method="notifications/initialized"))


def test_every_message_is_passed_on_untouched():
    relay = Relay(URL)
    for raw in (
        line(id=1, method="initialize", params=INIT_PARAMS),
        line(method="notifications/cancelled", params={"requestId": 7}),
        b"{not json",
        b"[1, 2]",
    ):
        assert relay.from_client(raw) == raw.decode()
    for message in (
        text(method="notifications/progress", params={"progressToken": 1, "progress": 0.5}),
        text(id=1, result={}),
        text(id="s1", method="sampling/createMessage", params={}),
    ):
        assert relay.from_server(message) == message.encode()


def test_a_dropped_connection_answers_every_request_in_flight():
    relay = Relay(URL)
    handshake(relay)
    relay.from_client(line(id=2, method="tools/call", params={"name": "wait_for_turn"}))
    relay.from_client(line(id="three", method="ping"))
    relay.from_client(line(id=4, method="ping"))
    relay.from_server(text(id=4, result={}))  # answered: nothing owed
    relay.from_client(line(id=5, method="ping"))
    relay.from_client(line(method="notifications/cancelled", params={"requestId": 5}))
    errors = [json.loads(raw) for raw in relay.lost()]
    assert [e["id"] for e in errors] == [2, "three"]
    assert {e["error"]["code"] for e in errors} == {CONNECTION_LOST}
    assert URL in errors[0]["error"]["message"]
    assert relay.lost() == []  # each request is answered once


def test_a_request_that_could_not_be_sent_is_answered_once():
    relay = Relay(URL)
    request = line(id=9, method="tools/call", params={"name": "get_board"})
    relay.from_client(request)
    error = relay.unsent(request)
    assert error is not None
    assert json.loads(error)["id"] == 9
    message = json.loads(error)["error"]["message"]
    assert "not sent" in message
    # a delay, so that a model that retries does not spin through instant errors
    assert "reconnects by itself: wait 5 seconds, then try again" in message
    assert relay.unsent(request) is None
    assert relay.lost() == []


def test_a_new_connection_replays_the_handshake_and_swallows_its_answers():
    relay = Relay(URL)
    handshake(relay)
    relay.from_client(line(id=2, method="logging/setLevel", params={"level": "debug"}))
    relay.from_client(line(id=3, method="resources/subscribe", params={"uri": "a://1"}))
    relay.from_client(line(id=4, method="resources/subscribe", params={"uri": "a://2"}))
    relay.from_client(line(id=5, method="resources/unsubscribe", params={"uri": "a://2"}))
    relay.lost()

    init = json.loads(relay.handshake() or "")
    assert init["method"] == "initialize"
    assert init["params"] == INIT_PARAMS
    assert isinstance(init["id"], str)  # never one of the client's ids
    answer = text(id=init["id"], result={"protocolVersion": "2025-11-25"})
    assert relay.from_server(answer) is None  # the client already had its answer
    assert relay.is_handshake_answer(answer)

    state = [json.loads(m) for m in relay.session_state()]
    assert [(m["method"], m.get("params")) for m in state] == [
        ("notifications/initialized", None),
        ("logging/setLevel", {"level": "debug"}),
        ("resources/subscribe", {"uri": "a://1"}),
    ]
    for message in state[1:]:
        assert relay.from_server(text(id=message["id"], result={})) is None
    assert relay.in_flight == {}


def test_no_handshake_is_replayed_for_a_client_without_one():
    relay = Relay(URL)
    relay.from_client(line(id=1, method="server/discover", params={}))
    relay.from_server(text(id=1, result={}))
    assert relay.handshake() is None
    relay.from_client(line(id=2, method="initialize", params=INIT_PARAMS))
    relay.from_server(text(id=2, error={"code": -32602, "message": "bad"}))
    assert relay.handshake() is None  # a refused initialize is not the session's


def test_a_refused_replay_is_reported():
    relay = Relay(URL)
    handshake(relay)
    relay.lost()
    init = json.loads(relay.handshake() or "")
    refused = text(id=init["id"], error={"code": -32602, "message": "unsupported version"})
    with pytest.raises(ReplayRefused, match="unsupported version"):
        relay.from_server(refused)


def test_answers_to_a_gone_servers_requests_are_dropped():
    relay = Relay(URL)
    handshake(relay)
    relay.from_server(text(id=70, method="sampling/createMessage", params={}))
    relay.from_server(text(id=71, method="elicitation/create", params={}))
    answer70 = line(id=70, result={"content": "x"})
    assert relay.from_client(answer70) == answer70.decode()
    relay.lost()
    assert relay.from_client(line(id=71, result={})) is None


def test_closing_answers_and_cancels_the_requests_in_flight_and_drops_late_answers():
    relay = Relay(URL)
    handshake(relay)
    relay.from_client(line(id=2, method="tools/call", params={"name": "wait_for_turn"}))
    relay.from_client(line(id="three", method="ping"))
    cancels, errors = relay.closing("the bridge is closing")
    assert [json.loads(c)["params"]["requestId"] for c in cancels] == [2, "three"]
    assert {json.loads(c)["method"] for c in cancels} == {"notifications/cancelled"}
    answers = [json.loads(raw) for raw in errors]
    assert [a["id"] for a in answers] == [2, "three"]
    assert {a["error"]["code"] for a in answers} == {CONNECTION_LOST}
    assert "may or may not have taken effect" in answers[0]["error"]["message"]
    assert not relay.in_flight
    # The client had its one answer: the server's late one is not passed on.
    assert relay.from_server(text(id=2, result={})) is None
    assert relay.from_server(text(id=5, result={})) is not None
