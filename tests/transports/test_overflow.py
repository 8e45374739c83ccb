"""A full node's probes against a crowd of connections past ``max_connections`` that send nothing.

Real loopback sockets, an in-process server, and Trio's mock clock.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from http_support import RawHttp, read_to_end, serve

from agora.server.descriptors import MAX_REFUSING

TIMEOUT = 200  # mock seconds: bounds every wait below


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_probes_are_answered_behind_a_crowd_of_silent_connections(clock, path):
    """Silent connections past the cap held every refusal slot until their head's wait and
    a linger ended (3 s): a probe behind them got the bare 503, and a node that was only
    full failed its liveness probe. Now a newcomer takes the slot of the oldest refusal
    still waiting for its head, and a refusal never holds more than `MAX_REFUSING`."""
    async with serve(max_connections=2) as server:
        with trio.fail_after(TIMEOUT):
            held = [await trio.open_tcp_stream("127.0.0.1", server.port) for _ in range(2)]
            await trio.sleep(1)  # both counted in
            silent = [
                await trio.open_tcp_stream("127.0.0.1", server.port)
                for _ in range(2 * MAX_REFUSING)
            ]
            async with RawHttp.open(server.port) as probe:
                reply = await probe.request("GET", path)
            assert reply.status == 200, reply
            assert reply.json()["ok"] is True, reply
            async with RawHttp.open(server.port) as probe:
                health = (await probe.request("GET", "/healthz")).json()
            assert health["refusing"] <= MAX_REFUSING, health
            # the oldest, evicted, and the newest, at the end of its wait: each its 503
            for stream in (silent[0], silent[-1]):
                assert (await read_to_end(stream)).startswith(b"HTTP/1.1 503 "), stream
            for stream in held + silent:
                await stream.aclose()
