"""Entering is rate-limited per principal and per connection (``[options.chamber]``).

Token buckets: a minute's worth of entries in a burst, then the steady rate; a refused entry
takes nothing, says how long to wait, and is retryable.
"""

from __future__ import annotations

import pytest
import trio
from chamber_agent import ENTRY, START, Agent

from agora.config import Config
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.base import Principal
from agora.toolsets.chamber import toolset
from agora.toolsets.chamber.ratelimit import EntryLimiter, Limits


class Conn:
    """Stands for a connection object (weakly referenced by the limiter)."""


@pytest.mark.parametrize(
    ("limits", "principal", "burst"),
    [
        pytest.param(Limits(principal=3, connection=0), "alice", 3, id="principal"),
        pytest.param(Limits(anonymous=5, connection=0), "anonymous", 5, id="anonymous"),
        pytest.param(Limits(principal=0, anonymous=0, connection=2), "bob", 2, id="connection"),
    ],
)
def test_a_bucket_admits_a_burst_then_the_steady_rate(limits, principal, burst):
    limiter, conn = EntryLimiter(), Conn()
    assert [limiter.take(limits, principal, conn, 0.0) for _ in range(burst)] == [None] * burst
    which, wait = limiter.take(limits, principal, conn, 0.0)
    assert wait == pytest.approx(60.0 / burst)
    assert limiter.take(limits, principal, conn, wait - 0.01) is not None
    assert limiter.take(limits, principal, conn, wait) is None
    assert which in ("principal", "connection")


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param(Limits(principal=0.5, connection=0), id="principal"),
        pytest.param(Limits(principal=0, connection=0.5), id="connection"),
    ],
)
def test_a_rate_below_one_a_minute_admits_one_entry_then_waits(limits):
    limiter, conn = EntryLimiter(), Conn()
    assert limiter.take(limits, "alice", conn, 0.0) is None  # a bucket holds one entry at least
    _, wait = limiter.take(limits, "alice", conn, 1.0)
    assert wait == pytest.approx(119.0)  # what the refusal says is when a token comes
    assert limiter.take(limits, "alice", conn, 119.9) is not None
    assert limiter.take(limits, "alice", conn, 120.0) is None
    assert limiter.take(limits, "alice", conn, 10_000.0) is None  # full again: one, not more
    assert limiter.take(limits, "alice", conn, 10_000.0) is not None


def test_an_entry_takes_both_tokens_or_neither():
    limiter, first, second = EntryLimiter(), Conn(), Conn()
    limits = Limits(principal=3, connection=2)
    assert limiter.take(limits, "alice", first, 0.0) is None
    assert limiter.take(limits, "alice", first, 0.0) is None
    assert limiter.take(limits, "alice", first, 0.0)[0] == "connection"
    # The refusal took no principal token: one is left for another connection.
    assert limiter.take(limits, "alice", second, 0.0) is None
    assert limiter.take(limits, "alice", second, 0.0)[0] == "principal"


def test_settings_are_read_and_checked():
    assert Limits.from_options({}) == Limits()
    assert Limits.from_options({"enter_per_minute": 5}).principal == 5
    with pytest.raises(ValueError, match="at least 0"):
        Limits.from_options({"connection_enter_per_minute": -1})


async def test_a_principal_is_refused_past_its_rate_and_admitted_later(
    runtime, chamber, options, mock_clock
):
    # No autojump: rooms are built in threads, and the clock must not move meanwhile.
    options["chamber"]["enter_per_minute"] = 2
    alice = Agent(runtime, dict(chamber[0].handlers), Principal("alice"))
    bob = Agent(runtime, dict(chamber[0].handlers), Principal("bob"))
    await alice.enter()
    await alice.enter()
    body = await alice.refused("enter_open_challenge", **ENTRY)
    assert (body["code"], body["retryable"], body["retry_after_seconds"]) == (
        "op_not_allowed",
        True,
        30,
    )
    assert "this principal" in body["error"]
    await bob.enter()  # another principal has its own bucket
    mock_clock.jump(29)
    assert (await alice.refused("enter_open_challenge", **ENTRY))["retry_after_seconds"] == 1
    mock_clock.jump(1)
    await alice.enter()


async def test_a_changed_setting_applies_from_the_next_entry(runtime, chamber, options, mock_clock):
    # The handler keeps the settings it parsed last; a change must still be seen at once,
    # and a broken one refused on every entry, not only the first.
    alice = Agent(runtime, dict(chamber[0].handlers), Principal("alice"))
    options["chamber"]["enter_per_minute"] = 1
    await alice.enter()
    await alice.refused("enter_open_challenge", **ENTRY)
    options["chamber"]["enter_per_minute"] = 0  # no limit
    await alice.enter()
    options["chamber"]["enter_per_minute"] = -1
    for _ in range(2):
        with pytest.raises(ValueError, match="at least 0"):
            await alice.enter()
    options["chamber"]["enter_per_minute"] = 1
    await alice.refused("enter_open_challenge", **ENTRY)  # the bucket kept its level


async def test_each_connection_has_its_own_limit():
    config = Config(
        db=":memory:",
        toolsets=["chamber"],
        options={"chamber": {"connection_enter_per_minute": 2, "room_pool_size": 0}},
    )
    with trio.fail_after(30):
        async with (
            open_server(
                config, clock=Clock(FakeWall(START)), toolsets=[toolset()], listen=False
            ) as server,
            server.client("/mcp/chamber") as first,
        ):
            await first.initialize()
            for _ in range(2):
                ok = await first.call_tool("enter_open_challenge", dict(ENTRY))
                assert ok["structuredContent"]["ok"] is True
            refused = await first.call_tool("enter_open_challenge", dict(ENTRY))
            assert refused["isError"] is True
            body = refused["structuredContent"]
            assert body["code"] == "op_not_allowed"
            assert "on this connection" in body["error"]
            async with server.client("/mcp/chamber") as second:
                await second.initialize()
                again = await second.call_tool("enter_open_challenge", dict(ENTRY))
                assert again["structuredContent"]["ok"] is True


async def test_the_anonymous_refusal_says_every_anonymous_caller_shares_the_limit(
    runtime, chamber, options, mock_clock
):
    """Tester finding: an anonymous agent refused on its first entry read "Too many entries
    for this principal", not that other anonymous clients had used the shared limit, nor
    that a bearer token gets one of its own."""
    options["chamber"]["anonymous_enter_per_minute"] = 1
    first = Agent(runtime, dict(chamber[0].handlers), Principal())
    other = Agent(runtime, dict(chamber[0].handlers), Principal())
    await first.enter()
    body = await other.refused("enter_open_challenge", **ENTRY)
    assert (body["code"], body["retryable"]) == ("op_not_allowed", True)
    assert body["error"] == (
        "Too many anonymous entries: the chamber admits a limited number per minute, shared by"
        " all anonymous callers (other clients' entries count too)."
    )
    assert body["recovery_hint"] == (
        "Wait 60 s, then call enter_open_challenge again (a named principal of the server's"
        " [[principals]], calling with its bearer token, has a limit of its own; a server without"
        " principals has only this shared one)."
    )
    assert "this principal" not in body["error"]
