"""The seated agent is told how the game it last saw unfinished ended, once the human replaced it.

A tester's note: an agent that was not parked in ``wait_for_turn`` when the human pressed
"New game" (or resigned and then pressed it) learnt only from a new ``gameNumber``: its next
``move_piece`` was refused in terms of the new game, as if its own game had never been. Its
first reply since (a refusal too) now begins with how that game ended; a parked wait is told
by its own GAME_OVER (`test_chess_wait`), a watcher has no game of its own to be told of.
"""

from __future__ import annotations

import trio

from agora.toolsets.chess.commands import NewGame, Resign

ABANDONED = "Game 1 is over: the human abandoned it (no result: *); this is game 2,"


async def test_a_move_into_the_new_game_is_told_the_old_one_was_abandoned(table):
    await table.choose("white")
    await table.tool("get_board")  # the agent sees its turn in game 1
    await table.human(NewGame(table.token))
    refusal = await table.refused("move_piece", **{"from": "e2", "to": "e4"})
    assert refusal["code"] == "SIDE_NOT_CHOSEN"
    assert refusal["error"].startswith(ABANDONED), refusal["error"]
    assert "the human's new game. " in refusal["error"]
    again = await table.tool("get_board")  # told once
    assert "Game 1" not in again["message"]
    assert again["gameNumber"] == 2


async def test_a_look_after_a_resignation_and_a_new_game_is_told_the_result(table):
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4"})  # then the human's turn
    await table.human(Resign(table.token))
    await table.human(NewGame(table.token))
    await table.choose("black")
    reply = await table.tool("get_board")
    expected = "Game 1 is over: it ended 1-0: white (agent) wins by resignation; this is game 2"
    assert reply["message"].startswith(expected), reply["message"]
    assert reply["message"].endswith("The human is to move.")
    assert reply["result"] is None  # the reply is about game 2, which goes on


async def test_an_agent_that_saw_the_end_is_not_told_again(table):
    await table.choose("white")
    await table.tool("get_board")
    await table.human(Resign(table.token))
    over = await table.tool("get_board")
    assert over["statusCode"] == "GAME_OVER"
    await table.human(NewGame(table.token))
    reply = await table.tool("get_board")
    assert "Game 1" not in reply["message"]


async def test_a_wait_that_parks_in_the_new_game_still_says_it(table, autojump_clock):
    await table.choose("black")
    await table.tool("get_board")
    await table.human(NewGame(table.token))
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wait, table, results)
            await trio.sleep(3)  # parked: the sides of game 2 are open
            await table.choose("white")
    reply = results[0]
    assert (reply["gameNumber"], reply["statusCode"]) == (2, "AGENT_TURN")
    assert reply["message"].startswith(ABANDONED), reply["message"]


async def test_a_watcher_is_never_told(table):
    await table.choose("white")
    await table.tool("get_board", as_token=None)
    await table.tool("get_board")
    await table.human(NewGame(table.token))
    watched = await table.tool("get_board", as_token=None)
    assert "Game 1" not in watched["message"]


async def _wait(table, results: list) -> None:
    results.append(await table.tool("wait_for_turn", wait_for_human=True))
