"""wait_for_turn as a long-poll on Trio's autojump clock: exact times, no real sleeps."""

from __future__ import annotations

import pytest
import trio

from agora.toolsets.chess.commands import NewGame, OfferDraw, Resign, TrackPage
from agora.toolsets.chess.position import ungroup_moves


async def _wait(table, results: list, args: dict | None = None) -> None:
    results.append((await table.tool("wait_for_turn", **(args or {})), trio.current_time()))


async def test_a_wait_returns_the_moment_the_human_moves(table, autojump_clock):
    await table.choose("black")
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results)
            await trio.sleep(7)
            await table.human_move("e2e4")
    reply, at = results[0]
    assert at - start == 7
    assert reply["statusCode"] == "AGENT_TURN"
    assert reply["agentMayMove"] is True
    assert reply["lastMove"]["san"] == "e4"
    assert len(ungroup_moves(reply["legalMoves"])) == 20


async def test_a_wait_times_out_at_the_given_ms_and_the_game_stays_usable(table, autojump_clock):
    await table.choose("black")
    start = trio.current_time()
    with trio.fail_after(60):
        reply = await table.tool("wait_for_turn", timeout_ms=1500)
    assert trio.current_time() - start == 1.5
    assert reply["statusCode"] == "WAIT_TIMEOUT"
    assert "shuttingDown" not in reply  # a real timeout: call again at once
    assert reply["agentMayMove"] is False
    assert reply["nextAction"]["tool"] == "wait_for_turn"
    assert reply["nextAction"]["arguments"] == {}
    await table.human_move("d2d4")
    with trio.fail_after(60):
        again = await table.tool("wait_for_turn", timeout_ms=1500)
    assert again["statusCode"] == "AGENT_TURN"
    moved = await table.tool("move_piece", **{"from": "d7", "to": "d5"})
    assert moved["statusCode"] == "HUMAN_TURN"


async def test_the_default_timeout_is_55_seconds(table, autojump_clock):
    await table.choose("black")
    start = trio.current_time()
    with trio.fail_after(120):
        reply = await table.tool("wait_for_turn")
    assert trio.current_time() - start == 55
    assert reply["statusCode"] == "WAIT_TIMEOUT"


async def test_a_wait_on_the_agents_turn_returns_at_once(table, autojump_clock):
    await table.choose("white")
    start = trio.current_time()
    reply = await table.tool("wait_for_turn")
    assert trio.current_time() == start
    assert reply["statusCode"] == "AGENT_TURN"


async def test_many_waiters_wake_on_one_move(table, autojump_clock):
    await table.choose("black")
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(100):
                nursery.start_soon(_wait, table, results)
            await trio.sleep(3)
            await table.human_move("e2e4")
    assert len(results) == 100
    assert {at for _, at in results} == {3}
    assert {reply["statusCode"] for reply, _ in results} == {"AGENT_TURN"}


async def test_waiting_for_the_human_returns_when_sides_are_chosen(table, autojump_clock):
    for agent_color, status in (("black", "HUMAN_TURN"), ("white", "AGENT_TURN")):
        results: list = []
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_wait, table, results, {"wait_for_human": True})
                await trio.sleep(2)
                await table.choose(agent_color)
        reply, _ = results[0]
        assert reply["statusCode"] == status
        assert reply["agentColor"] == agent_color
        await table.human(NewGame(table.token))


async def test_after_a_game_an_agent_may_wait_for_the_humans_next_one(table, autojump_clock):
    await table.choose("black")
    await table.human(Resign(table.token))
    over = await table.tool("wait_for_turn")  # the contract's way: answered at once, stop
    assert over["statusCode"] == "GAME_OVER"
    assert over["nextAction"]["tool"] is None
    assert "wait_for_human true" in over["nextAction"]["instruction"]
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results, {"wait_for_human": True})
            await trio.sleep(9)
            await table.human(NewGame(table.token))
    reply, at = results[0]
    assert at - start == 9
    assert (reply["statusCode"], reply["gameNumber"]) == ("SIDE_CHOICE_REQUIRED", 2)
    await table.choose("black")
    await table.human(Resign(table.token))
    start = trio.current_time()
    with trio.fail_after(60):  # nobody starts a third: at its timeout the wait says GAME_OVER
        timed_out = await table.tool("wait_for_turn", timeout_ms=1000, wait_for_human=True)
    assert trio.current_time() - start == 1
    assert timed_out["statusCode"] == "GAME_OVER"  # an agent that always sends the flag
    assert timed_out["message"].startswith("Game over.")  # still learns the game is over
    # and one that chose to play the next game is not told to stop: none started yet.
    # (This human plays through the page's POST API: no page of theirs is open, and the
    # wait says so, not that the human left.)
    assert timed_out["message"].endswith(
        "No new game yet: the human has not started one. No page of the human's is open: you"
        " may keep waiting, or stop and tell your user."
    )
    assert timed_out["nextAction"]["tool"] == "wait_for_turn"
    assert timed_out["nextAction"]["arguments"] == {"wait_for_human": True}
    assert "or stop and tell your user" in timed_out["nextAction"]["instruction"]


async def test_a_wait_for_the_next_game_says_when_no_page_of_the_humans_is_open(
    table, autojump_clock
):
    await table.choose("black")
    await table.human(TrackPage(table.token, connected=True))
    await table.human(Resign(table.token))
    with trio.fail_after(60):
        present = await table.tool("wait_for_turn", timeout_ms=1000, wait_for_human=True)
    assert present["message"].endswith("No new game yet: the human has not started one.")
    await table.human(TrackPage(table.token, connected=False))  # the tab closed
    with trio.fail_after(60):
        away = await table.tool("wait_for_turn", timeout_ms=1000, wait_for_human=True)
    assert (away["statusCode"], away["human"]) == ("GAME_OVER", "away")
    assert away["message"].endswith(
        "No new game yet: the human has not started one. The human's page has been closed"
        " since 2026-11-30 00:00:00 UTC: you may keep waiting, or stop and tell your user."
    )
    action = away["nextAction"]
    assert (action["tool"], action["arguments"]) == ("wait_for_turn", {"wait_for_human": True})
    assert "no page of the human's is open" in action["instruction"]
    assert "left" not in action["instruction"]


async def test_waiting_for_the_human_times_out_with_the_same_arguments(table, autojump_clock):
    with trio.fail_after(60):
        reply = await table.tool("wait_for_turn", timeout_ms=1000, wait_for_human=True)
    assert reply["statusCode"] == "WAIT_TIMEOUT"
    assert reply["nextAction"]["arguments"] == {"wait_for_human": True}


async def test_a_draw_offer_does_not_end_a_wait(table, autojump_clock):
    await table.choose("black")
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results, {"timeout_ms": 5000})
            await trio.sleep(1)
            await table.human(OfferDraw(table.token))
    reply, at = results[0]
    assert at - start == 5
    assert reply["statusCode"] == "WAIT_TIMEOUT"
    assert reply["drawOffer"] == "human"


async def test_a_new_game_ends_a_wait(table, autojump_clock):
    await table.choose("black")
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results)
            await trio.sleep(4)
            await table.human(NewGame(table.token))
    reply, _ = results[0]
    assert reply["statusCode"] == "GAME_OVER"  # the game it waited on: abandoned
    assert reply["gameNumber"] == 1


@pytest.mark.parametrize("seat", ["agent", "watcher"])
async def test_a_parked_wait_is_told_the_human_abandoned_the_game(table, autojump_clock, seat):
    """A tester's finding: an agent parked in wait_for_turn when the human pressed "New
    game" mid-game was woken with the new game's SIDE_CHOICE_REQUIRED, never told that its
    game had ended."""
    await table.choose("black")
    await table.human_move("e2e4")
    await table.tool("move_piece", **{"from": "e7", "to": "e5"})
    results: list = []
    as_token = True if seat == "agent" else None
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait_as, table, results, as_token)
            await trio.sleep(4)
            await table.human(NewGame(table.token))
    reply = results[0]
    assert (reply["statusCode"], reply["gameNumber"]) == ("GAME_OVER", 1)
    assert reply["result"]["reason"] == "abandoned"
    assert reply["result"]["score"] == "*"
    assert reply["lastMove"]["san"] == "e5"  # the board of the game that ended
    assert reply["agentMayMove"] is False
    assert "abandoned game 1" in reply["message"]
    assert "started game 2" in reply["message"]
    assert reply["nextAction"]["tool"] == "wait_for_turn"
    assert reply["nextAction"]["arguments"] == {"wait_for_human": True}
    with trio.fail_after(60):  # the next action waits for the new game's sides
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait_as, table, results, as_token, {"wait_for_human": True})
            await trio.sleep(2)
            await table.choose("white")
    assert (results[1]["gameNumber"], results[1]["statusCode"]) == (2, "AGENT_TURN")


async def _wait_as(table, results: list, as_token, args: dict | None = None) -> None:
    results.append(await table.tool("wait_for_turn", as_token=as_token, **(args or {})))


async def test_a_parked_wait_is_told_the_human_resigned(table, autojump_clock):
    await table.choose("black")
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait_as, table, results, True)
            await trio.sleep(3)
            await table.human(Resign(table.token))
    assert results[0]["statusCode"] == "GAME_OVER"
    assert results[0]["result"]["reason"] == "resignation"
    assert results[0]["result"]["winnerRole"] == "agent"


async def test_a_wait_answers_cleanly_when_the_server_shuts_down(table, autojump_clock):
    await table.choose("black")
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results)
            await trio.sleep(2)
            table.runtime.begin_shutdown()
    reply, at = results[0]
    assert at - start == 2
    assert reply["statusCode"] == "WAIT_TIMEOUT"
    assert reply["shuttingDown"] is True  # not a real timeout: reconnect, then wait again
    assert reply["nextAction"]["tool"] == "wait_for_turn"
    assert reply["nextAction"]["instruction"] == (
        "The server is shutting down: wait a few seconds and call wait_for_turn again; if it"
        " restarted, that call is answered (your client or relay reconnects by itself)."
    )


async def test_a_wait_met_as_shutdown_begins_is_not_marked(table, autojump_clock):
    # Shutdown answers a wait whose condition already holds with the ordinary reply.
    await table.choose("white")
    table.runtime.begin_shutdown()
    with trio.fail_after(60):
        reply = await table.tool("wait_for_turn")
    assert reply["statusCode"] == "AGENT_TURN"
    assert "shuttingDown" not in reply
    assert reply["nextAction"]["tool"] == "move_piece"


async def test_a_watcher_cut_short_by_shutdown_is_told_to_wait_for_the_restart(
    table, autojump_clock
):
    await table.choose("black")
    table.runtime.begin_shutdown()
    with trio.fail_after(60):
        reply = await table.tool("wait_for_turn", as_token=None)
    assert (reply["statusCode"], reply["seat"]) == ("WAIT_TIMEOUT", "watcher")
    assert reply["shuttingDown"] is True
    assert reply["nextAction"]["arguments"] == {}
    assert reply["nextAction"]["instruction"] == (
        "The server is shutting down: wait a few seconds and call wait_for_turn again; if it"
        " restarted, that call is answered (your client or relay reconnects by itself)."
    )


@pytest.mark.sqlite_only("a guarded store re-runs a woken wait under its own version guard")
async def test_the_human_move_answers_a_parked_wait_in_its_own_turn(table, autojump_clock):
    # The wait's look runs right after the move, on the table's actor (no second trip).
    await table.choose("black")
    polls = table.runtime.polls
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results)
            await trio.sleep(1)
            await table.human_move("e2e4")
    assert results[0][0]["statusCode"] == "AGENT_TURN"
    assert (polls.answered, polls.rerun) == (1, 0)


async def test_at_side_choice_a_bare_wait_says_it_did_not_wait(table, autojump_clock):
    start = trio.current_time()
    reply = await table.tool("wait_for_turn")  # the bootstrap call: answered at once
    assert trio.current_time() == start
    assert reply["statusCode"] == "SIDE_CHOICE_REQUIRED"
    assert "returned at once" in reply["message"]
    assert "Waiting for" not in reply["message"]
    assert reply["nextAction"]["arguments"] == {"wait_for_human": True}
    assert "wait_for_human true" in reply["nextAction"]["instruction"]


async def test_at_side_choice_a_wait_given_a_timeout_waits(table, autojump_clock):
    start = trio.current_time()
    with trio.fail_after(60):
        timed_out = await table.tool("wait_for_turn", timeout_ms=3000)
    assert trio.current_time() - start == 3
    assert timed_out["statusCode"] == "WAIT_TIMEOUT"
    assert timed_out["nextAction"]["arguments"] == {"wait_for_human": True}
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results, {"timeout_ms": 55000})
            await trio.sleep(7)
            await table.choose("white")
    reply, at = results[0]
    assert at - start == 10
    assert reply["statusCode"] == "AGENT_TURN"


async def test_a_wait_that_times_out_says_since_when_the_humans_page_is_closed(
    table, autojump_clock
):
    await table.choose("black")
    await table.human(TrackPage(table.token, connected=True))
    with trio.fail_after(60):
        present = await table.tool("wait_for_turn", timeout_ms=1000)
    assert present["message"] == "No change before the timeout."
    await table.human(TrackPage(table.token, connected=False))  # the tab closed
    with trio.fail_after(60):
        away = await table.tool("wait_for_turn", timeout_ms=1000)
    assert (away["statusCode"], away["human"]) == ("WAIT_TIMEOUT", "away")
    assert away["message"] == (
        "No change before the timeout. The human's page has been closed since 2026-11-30"
        " 00:00:00 UTC: you may keep waiting, or stop and tell your user."
    )
    action = away["nextAction"]
    assert (action["tool"], action["arguments"]) == ("wait_for_turn", {})
    assert (
        "or stop and tell your user that no page of the human's is open" in (action["instruction"])
    )
