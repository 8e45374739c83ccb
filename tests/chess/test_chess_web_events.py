"""The page's Server-Sent Events stream: every change pushed, pings, and the spectator's view."""

from __future__ import annotations

import json
from contextlib import aclosing

import pytest
import trio
from page_routes import http

from agora.errors import ToolError
from agora.toolsets.chess.snapshot import AGENT_FRESH_SECONDS
from agora.web.http import EventStream, Response


async def _next(events, seconds=60):
    with trio.fail_after(seconds):
        return await events.__anext__()


async def test_the_event_stream_pushes_every_change(table, autojump_clock):
    stream = await http(table.runtime, "GET", "/play/default/events", query={"token": table.token})
    assert isinstance(stream, EventStream)
    events = stream.events
    name, data = await _next(events)
    first = json.loads(data)
    assert (name, first["role"], first["phase"]) == ("state", "human", "side_choice")
    await table.choose("white")
    name, data = await _next(events)
    assert (name, json.loads(data)["phase"]) == ("state", "agent_turn")
    await table.tool("move_piece", **{"from": "g1", "to": "f3", "note": "develop"})
    name, data = await _next(events)
    state = json.loads(data)
    assert state["lastMove"]["note"] == "develop"
    assert len(state["legalMoves"]) == 20
    start = trio.current_time()
    assert await _next(events) == ("ping", "{}")
    assert trio.current_time() - start == 20
    table.runtime.begin_shutdown()
    with trio.fail_after(5):
        rest = [item async for item in events]
    assert rest == []


async def test_a_spectator_stream_has_no_moves_to_offer(table, autojump_clock):
    await table.choose("black")
    stream = await http(table.runtime, "GET", "/play/default/events")
    assert isinstance(stream, EventStream)
    async with aclosing(stream.events) as events:
        _name, data = await _next(events)
    assert json.loads(data)["role"] == "spectator"
    assert json.loads(data)["legalMoves"] == []
    missing = await http(table.runtime, "GET", "/play/ghost/events")
    assert isinstance(missing, Response)
    assert missing.status == 404


async def test_the_stream_says_when_the_agent_comes_and_goes(table, autojump_clock):
    await table.choose("white")
    stream = await http(table.runtime, "GET", "/play/default/events", query={"token": table.token})
    assert isinstance(stream, EventStream)
    async with aclosing(stream.events) as events:
        first = json.loads((await _next(events))[1])
        assert (first["agentPresent"], first["status"]) == (
            False,
            "Waiting for the agent to connect.",
        )
        await table.tool("move_piece", **{"from": "e2", "to": "e4"})  # no read tool first
        moved = json.loads((await _next(events))[1])
        assert moved["agentPresent"]
        await table.human_move("e7e5")
        thinking = json.loads((await _next(events))[1])
        assert (thinking["agentPresent"], thinking["status"]) == (True, "The agent is thinking.")
        start = trio.current_time()
        while True:  # pings until the agent has been silent for the window
            name, data = await _next(events, 200)
            if name == "state":
                break
        gone = json.loads(data)
        assert (gone["agentPresent"], gone["status"]) == (
            False,
            "Waiting for the agent to connect.",
        )
        assert AGENT_FRESH_SECONDS < trio.current_time() - start <= AGENT_FRESH_SECONDS + 20


async def test_a_refused_first_move_tells_the_page_the_agent_came(table, autojump_clock):
    stream = await http(table.runtime, "GET", "/play/default/events", query={"token": table.token})
    assert isinstance(stream, EventStream)
    async with aclosing(stream.events) as events:
        first = json.loads((await _next(events))[1])
        assert not first["agentPresent"]
        got: list[tuple[float, str, str]] = []

        async def page() -> None:  # the stream, parked until the table changes or 20 s pass
            name, data = await _next(events)
            got.append((trio.current_time(), name, data))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(page)
            await trio.sleep(1)
            start = trio.current_time()
            with pytest.raises(ToolError) as refused:  # no side chosen yet
                await table.tool("move_piece", **{"from": "e2", "to": "e4"})
            assert refused.value.body["code"] == "SIDE_NOT_CHOSEN"
    [(at, name, data)] = got
    assert (name, at - start) == ("state", 0)  # now, not at the next poll's
    assert json.loads(data)["agentPresent"]


async def test_the_agent_is_told_whether_the_human_is_at_the_table(table, autojump_clock):
    """A tester's finding: the agent had no sign of whether a human was there. get_board and
    wait_for_turn say ``human``: absent until the human comes, connected while a page of
    theirs streams, away once every such page is gone."""

    async def human_seat() -> tuple[str, str]:
        board = await table.tool("get_board")
        waited = await table.tool("wait_for_turn", timeout_ms=1000)
        return board["human"], waited["human"]

    assert await human_seat() == ("absent", "absent")
    spectator = await http(table.runtime, "GET", "/play/default/events")
    async with aclosing(spectator.events) as watching:
        await _next(watching)
        assert await human_seat() == ("absent", "absent")  # a spectator is not the human
    query = {"token": table.token}
    pages = [await http(table.runtime, "GET", "/play/default/events", query=query)]
    pages.append(await http(table.runtime, "GET", "/play/default/events", query=query))
    async with aclosing(pages[0].events) as first, aclosing(pages[1].events) as second:
        await _next(first)
        await _next(second)
        assert await human_seat() == ("connected", "connected")
        await first.aclose()  # one of two tabs closed: still there
        assert await human_seat() == ("connected", "connected")
    assert await human_seat() == ("away", "away")
    await table.choose("black")  # the human acting without a page: seen, not connected
    assert (await table.tool("get_board"))["human"] == "away"


async def test_a_parked_wait_reports_the_human_as_it_answers(table, autojump_clock):
    await table.choose("black")
    stream = await http(table.runtime, "GET", "/play/default/events", query={"token": table.token})
    results: list = []

    async def wait() -> None:
        results.append(await table.tool("wait_for_turn"))

    with trio.fail_after(60):
        async with aclosing(stream.events) as events, trio.open_nursery() as nursery:
            await _next(events)
            nursery.start_soon(wait)
            await trio.sleep(5)
            await table.human_move("e2e4")
    assert (results[0]["statusCode"], results[0]["human"]) == ("AGENT_TURN", "connected")
