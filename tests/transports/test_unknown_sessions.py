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
                "Session not found: it may live on another node, or the server restarted;"
                " initialize a new session"
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
        "a POST request named an unknown Mcp-Session-Id (answered 404): the session lives on"
        " another node (give the balancer affinity on Mcp-Session-Id), or was lost as this"
        " node restarted, or it expired or was evicted here;"
    ), lines
    assert lines[1][1].startswith("a GET request"), lines
    assert lines[1][1].endswith("; 2 more in the episode before"), lines
