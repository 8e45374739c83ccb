"""Abandoning a run leaves the same trace as sealing it: the sweep publishes expired cards.

An attempt whose TTL passes unsealed gets a dated card (outcome ``expired``, ``sealed_by:
expiry``, contract state ``expired``) from the background sweep; nothing is deleted before
its card exists.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
import trio
from chamber_agent import ENTRY, START

from agora.config import Config
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chamber import listings, sweep, toolset
from agora.web.http import Request

#: No room pool: these servers need no rooms built ahead (and tests stay cheap).
NO_POOL = {"chamber": {"room_pool_size": 0}}


async def _cards(runtime) -> dict[str, dict]:
    rows = await runtime.read(lambda c: listings.list_cards(c, START.date().isoformat()))
    return {r["card_id"]: r for r in rows}


async def test_the_sweep_publishes_every_abandoned_attempt_and_nothing_else(
    agent, chamber, runtime, wall
):
    _, service = chamber
    sealed = (await agent.enter())["attempt_handle"]
    await agent.tool("seal_attempt", challenge_handle=sealed)
    abandoned = (await agent.enter())["attempt_handle"]
    await agent.tool("chamber_action", challenge_handle=abandoned, op="look")
    assert await sweep.sweep_expired(runtime, service) == 0
    wall.advance(7200 - 60)
    young = (await agent.enter())["attempt_handle"]
    wall.advance(60)  # the first two are now past their 7,200 s TTL
    assert await sweep.sweep_expired(runtime, service) == 1
    assert await sweep.sweep_expired(runtime, service) == 0
    cards = await _cards(runtime)
    assert len(cards) == 2
    again = await agent.tool("seal_attempt", challenge_handle=abandoned)
    assert again["already_sealed"] is True
    assert again["attempt_state"] == "expired"
    assert again["allowed_next_tools"] == ["enter_open_challenge"]
    assert again["must_seal"] is False
    card = again["card"]
    assert (card["outcome"], card["sealed_by"], card["actions_used"]) == ("expired", "expiry", 1)
    assert cards[again["card_id"]]["outcome"] == "expired"
    live = await agent.tool("chamber_action", challenge_handle=young, op="look")
    assert live["attempt_state"] == "active"
    # Newcomer finding: play on it answered "This attempt is sealed", which no one did.
    played = await agent.refused("chamber_action", challenge_handle=abandoned, op="look")
    assert played["code"] == "attempt_already_sealed"
    assert played["attempt_state"] == "expired"
    assert played["error"].startswith(
        f"This attempt expired at {again['expires_at']} unsealed; the expiry sweep published"
        f" its card ({again['card_id']})"  # (not "was published then": the sweep came later)
    ), played


async def test_an_expired_card_is_dated_when_the_attempt_expired_not_when_swept(
    agent, chamber, runtime, wall, options, tmp_path
):
    """A node down across midnight must not move the card to the next day's listing."""
    toolset, service = chamber
    key = tmp_path / "k.hex"
    key.write_text("42" * 32)
    options["chamber"]["signing_key"] = str(key)
    wall.current = START.replace(hour=21)
    handle = (await agent.enter())["attempt_handle"]
    wall.current = START.replace(hour=23) + dt.timedelta(hours=3)  # 02:00 the next day
    assert await sweep.sweep_expired(runtime, service) == 1
    sealed = await agent.tool("seal_attempt", challenge_handle=handle)
    card = sealed["card"]
    assert sealed["expires_at"] == "2026-11-30T23:00:00Z"
    assert (card["sealed_at"], card["date"]) == (sealed["expires_at"], "2026-11-30")
    assert card["card_id"].startswith("card-20261130-")
    assert card["elapsed_seconds"] == 7200
    assert list(await _cards(runtime)) == [card["card_id"]]
    route = next(r for r in toolset.routes if r.pattern == "/cards/{card_id}")
    request = Request("GET", "/cards/x", {"format": "json"}, {"accept": "application/json"})
    request.params["card_id"] = card["card_id"]
    document = json.loads((await route.handler(request, runtime)).body)
    assert document["card"]["sealed_at"] == "2026-11-30T23:00:00Z"
    assert document["signature"]["signed_at"] == "2026-12-01T02:00:00Z"


async def test_the_sweep_makes_progress_past_one_batch_and_signs(
    agent, chamber, runtime, wall, options, tmp_path, monkeypatch
):
    _, service = chamber
    monkeypatch.setattr(sweep, "BATCH", 2)
    key = tmp_path / "k.hex"
    key.write_text("42" * 32)
    options["chamber"]["signing_key"] = str(key)
    for _ in range(5):
        await agent.enter()
    wall.advance(7201)
    assert await sweep.sweep_expired(runtime, service) == 5
    cards = await _cards(runtime)
    assert [c["evidence_status"] for c in cards.values()] == ["signed"] * 5
    assert {c["outcome"] for c in cards.values()} == {"expired"}


@pytest.mark.parametrize("then_seal", [False, True])
async def test_a_running_server_sweeps_in_the_background(mock_clock, then_seal):
    mock_clock.autojump_threshold = 0.1
    wall = FakeWall(START)
    config = Config(db=":memory:", toolsets=["chamber"], options=NO_POOL)
    with trio.fail_after(sweep.SWEEP_EVERY * 60):  # threads may let the clock jump
        async with (
            open_server(config, clock=Clock(wall), toolsets=[toolset()], listen=False) as server,
            server.client("/mcp/chamber") as client,
        ):
            await client.initialize()
            entered = await client.call_tool("enter_open_challenge", dict(ENTRY))
            handle = entered["structuredContent"]["attempt_handle"]
            await trio.sleep(sweep.SWEEP_EVERY * 1.5)
            assert await _cards(server.runtime) == {}
            wall.advance(7201)
            await trio.sleep(sweep.SWEEP_EVERY * 1.5)  # the next tick falls inside
            cards = await _cards(server.runtime)
            assert [c["outcome"] for c in cards.values()] == ["expired"]
            if then_seal:
                reply = await client.call_tool("seal_attempt", {"challenge_handle": handle})
                assert reply["structuredContent"]["already_sealed"] is True


async def test_a_late_seal_makes_the_card_the_sweep_would_have_made(agent, chamber, runtime, wall):
    """Tester finding: sealed past its TTL before the sweep, a card said sealed_by participant
    and was dated at the seal (the next day here): who got there first decided the card."""
    _, service = chamber
    wall.current = START.replace(hour=21, minute=59, second=30)
    swept = (await agent.enter())["attempt_handle"]
    late = (await agent.enter())["attempt_handle"]
    wall.advance(7200 + 40)  # expired at 23:59:30; now 00:00:10 the next day
    sealed = await agent.tool(
        "seal_attempt", challenge_handle=late, next_candidate="other", include_export_bundle=True
    )
    assert await sweep.sweep_expired(runtime, service) == 1  # the other one only
    theirs = (await agent.tool("seal_attempt", challenge_handle=swept))["card"]
    ours = sealed["card"]
    assert (ours["outcome"], ours["sealed_by"]) == ("expired", "expiry")
    assert (ours["sealed_at"], ours["date"]) == (sealed["expires_at"], "2026-11-30")
    assert ours["card_id"].startswith("card-20261130-")
    assert sealed["attempt_state"] == "expired"
    assert sealed["export_bundle"]["document"]["card"] == ours
    apart = {"card_id", "seed_commitment", "transcript_hash", "locks"}  # each room its own
    assert {k: v for k, v in ours.items() if k not in apart} == {
        k: v for k, v in theirs.items() if k not in apart
    }
