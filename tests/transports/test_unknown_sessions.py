"""A request naming a session this node does not hold: one INFO line per episode, a count in
``/healthz``, and a 404 that says why it may be so.

An operator's finding: with three nodes behind a balancer, a session's request routed to
another node got a bare 404 ("Session not found: initialize a new session"), the node logged
nothing and ``/healthz`` counted nothing, so a balancer without affinity on
``Mcp-Session-Id`` showed nowhere on the nodes. Here a session opened on one server is
addressed to another, then again and again; real loopback servers, a mock clock at the real
rate jumped past the episode's quiet minute.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from http_support import RawHttp, healthz, open_session, serve

TIMEOUT = 120  # clock seconds: the jump past the quiet minute counts
PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(rate=1.0)


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if "unknown Mcp-Session-Id" in r.getMessage()
    ]


async def test_a_session_of_another_node_is_said_once_counted_and_explained(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora")
    async with serve() as a, serve() as b:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(a.port) as client:
                session = await open_session(client)
            for _ in range(3):
                async with RawHttp.open(b.port) as client:
                    gone = await client.request("POST", "/mcp/probe", PING, session)
                assert gone.status == 404, gone
            assert gone.json()["error"]["message"] == (
                "Session not found: it is unknown, expired or ended, or another endpoint's or"
                " token's, or another node holds it or a restart lost it; initialize a new"
                " session"
            )
            assert (await healthz(b.port))["unknown_sessions"] == 3
            assert (await healthz(a.port))["unknown_sessions"] == 0
            assert len(said(caplog)) == 1  # not one per request
            clock.jump(61)  # a quiet minute: the next one begins an episode
            async with RawHttp.open(b.port) as client:
                assert (await client.request("GET", "/mcp/probe", None, session)).status == 404
            assert (await healthz(b.port))["unknown_sessions"] == 4
    lines = said(caplog)
    assert [level for level, _ in lines] == ["INFO", "INFO"]
    assert lines[0][1].startswith(
        "a POST request named an unknown Mcp-Session-Id (answered 404): the session expired,"
        " was evicted or ended (DELETE) here, belongs to another endpoint or token, was lost"
        " as this node restarted, or lives on another node (behind a balancer: give it"
        " affinity on Mcp-Session-Id);"
    ), lines
    assert lines[1][1].startswith("a GET request"), lines
    assert lines[1][1].endswith("; 2 more in the episode before"), lines


async def test_a_session_ended_on_a_single_server_is_not_blamed_on_other_nodes(clock, caplog):
    """An operator's finding: on one server, no balancer and no restart, a session closed by
    DELETE (or another endpoint's) was answered "it may live on another node, or the server
    restarted", and the log blamed the balancer only; and a misrouting that went on said one
    line, then nothing for as long as it lasted."""
    caplog.set_level(logging.INFO, logger="agora")
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
                assert (await client.request("DELETE", "/mcp/probe", None, session)).status < 300
                gone = await client.request("POST", "/mcp/probe", PING, session)
            assert gone.status == 404, gone
            message = gone.json()["error"]["message"]
            assert "expired or ended" in message, message
            assert "another endpoint's or token's" in message, message
            for _ in range(3):  # it goes on, a request every 30 s: an episode that lasts
                clock.jump(30)
                async with RawHttp.open(server.port) as client:
                    assert (await client.request("POST", "/mcp/probe", PING, session)).status == 404
    lines = said(caplog)
    assert len(lines) == 2, lines  # before: the first line only, then silence
    assert "ended (DELETE)" in lines[0][1], lines
    assert "another endpoint or token" in lines[0][1], lines
    assert lines[1][1].startswith(
        "2 more requests named an unknown Mcp-Session-Id (answered 404) in the last 60 s;"
    ), lines
