"""The agent's seat is held by the table's agent token; everyone else only watches.

Also what the seated agent is told about draw offers, and how large its replies are.
Every reply here, refusals included, is validated against the tool's outputSchema by the
`table` fixture's driver.
"""

from __future__ import annotations

import json

import pytest
import trio

from agora.errors import ToolError
from agora.toolsets.chess.commands import NewAgentToken, OfferDraw

#: A long, sharp game (Kasparov-Topalov, Wijk aan Zee 1999, 44 moves), played move by move.
_GAME = (
    "e2e4 d7d6 d2d4 g8f6 b1c3 g7g6 c1e3 f8g7 d1d2 c7c6 f2f3 b7b5 g1e2 b8d7 e3h6 g7h6 "
    "d2h6 c8b7 a2a3 e7e5 e1c1 d8e7 c1b1 a7a6 e2c1 e8c8 c1b3 e5d4 d1d4 c6c5 d4d1 d7b6 "
    "g2g3 c8b8 b3a5 b7a8 f1h3 d6d5 h6f4 b8a7 h1e1 d5d4 c3d5 b6d5 e4d5 e7d6 d1d4 c5d4 "
    "e1e7 a7b6 f4d4 b6a5 b2b4 a5a4 d4c3 d6d5 e7a7 a8b7 a7b7 d5c4 c3f6 a4a3 f6a6 a3b4 "
    "c2c3 b4c3 a6a1 c3d2 a1b2 d2d1 h3f1 d8d2 b7d7 d2d7 f1c4 b5c4 b2h8 d7d3 h8a8 c4c3 "
    "a8a4 d1e1 f3f4 f7f5 b1c1 d3d2 a4a7"
)
IMMORTAL = _GAME.split()

NOTE = "n" * 160


async def test_a_watcher_reads_but_never_moves(table):
    await table.choose("white")
    for tool in ("join_game", "get_board"):
        reply = await table.tool(tool, as_token=None)
        assert reply["seat"] == "watcher"
        assert reply["statusCode"] == "AGENT_TURN"
        assert reply["agentMayMove"] is False
        assert reply["legalMoves"] == {}
        assert reply["nextAction"]["tool"] == "wait_for_turn"
        assert "watching" in reply["message"]
    assert not (await table.look()).agent_present  # watching announces no agent
    with pytest.raises(ToolError) as info:
        await table.tool("move_piece", as_token=None, **{"from": "e2", "to": "e4"})
    body = info.value.body
    assert body["ok"] is False
    assert (body["code"], body["statusCode"]) == ("AGENT_TOKEN_REQUIRED", "AGENT_TOKEN_REQUIRED")
    assert body["agentMayMove"] is False
    assert body["nextAction"]["tool"] is None
    assert "?token=" in body["nextAction"]["instruction"]
    assert (await table.look()).moves == ()
    seated = await table.tool("move_piece", **{"from": "e2", "to": "e4"})
    assert seated["seat"] == "agent"


@pytest.mark.parametrize("tool", ["join_game", "get_board", "wait_for_turn", "move_piece"])
async def test_a_wrong_agent_token_is_refused_on_every_tool(table, tool):
    await table.choose("white")
    args = {"from": "e2", "to": "e4"} if tool == "move_piece" else {}
    body = await table.refused(tool, as_token="guessed", **args)
    # Its own status, not "connect with a token": an agent branching on statusCode asks for
    # the new one.
    assert (body["code"], body["statusCode"]) == ("AGENT_TOKEN_INVALID", "AGENT_TOKEN_INVALID")
    assert body["nextAction"]["tool"] is None
    assert "replaced by the human" in body["nextAction"]["instruction"]
    # Every tool refuses this URL: watching needs a reconnection without the wrong token.
    instruction = body["nextAction"]["instruction"]
    assert "you may watch with get_board" not in instruction.lower()
    assert "without ?token=" in instruction
    assert (await table.look()).moves == ()


async def test_another_agent_cannot_take_the_seat_after_one_joined(table):
    await table.choose("white")
    await table.tool("join_game")
    body = await table.refused("move_piece", as_token=None, **{"from": "e2", "to": "e4"})
    assert body["code"] == "AGENT_TOKEN_REQUIRED"
    # Whatever endpoint the watcher used (/mcp reads no ?token=): the table's chess endpoint.
    assert (
        "reconnect to the table's chess endpoint, /mcp/chess/<table>?token="
        in (body["nextAction"]["instruction"])
    )
    body = await table.refused("move_piece", as_token=table.token, **{"from": "e2", "to": "e4"})
    assert body["code"] == "AGENT_TOKEN_INVALID"


async def test_a_parked_agent_learns_at_once_that_its_token_was_replaced(table, autojump_clock):
    await table.choose("black")
    refusals: list = []

    async def wait() -> None:
        refusals.append(await table.refused("wait_for_turn"))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(3)
            await table.human(NewAgentToken(table.token, "replaced"))
    assert refusals[0]["code"] == "AGENT_TOKEN_INVALID"
    assert trio.current_time() == 3


async def test_a_watcher_waits_for_the_next_change(table, autojump_clock):
    await table.choose("white")
    results: list = []

    async def watch() -> None:
        results.append(await table.tool("wait_for_turn", as_token=None))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)  # the agent's turn does not end a watcher's wait
            await trio.sleep(5)
            await table.tool("move_piece", **{"from": "e2", "to": "e4"})
    assert trio.current_time() == 5
    assert results[0]["statusCode"] == "HUMAN_TURN"
    assert results[0]["lastMove"]["san"] == "e4"
    with trio.fail_after(60):
        quiet = await table.tool("wait_for_turn", as_token=None, timeout_ms=2000)
    assert quiet["statusCode"] == "WAIT_TIMEOUT"
    # The seat's token and the agent's presence are no change of the game a watcher sees.
    results.clear()
    start = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await trio.sleep(1)
            await table.human(NewAgentToken(table.token, "another"))
            await trio.sleep(1)
            await table.human_move("e7e5")
    assert trio.current_time() - start == 2
    assert results[0]["lastMove"]["san"] == "e5"


async def test_the_agent_is_told_its_draw_offer_was_declined(table):
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "Shall we? (=)"})
    await table.human_move("e7e5")
    reply = await table.tool("wait_for_turn", timeout_ms=1000)
    assert reply["drawDeclined"] is True
    assert "declined your draw offer" in reply["message"]
    assert reply["drawOffer"] is None
    moved = await table.tool("move_piece", **{"from": "g1", "to": "f3"})
    assert moved["drawDeclined"] is False
    assert "declined" not in moved["message"]


async def test_the_agent_is_told_in_words_that_its_move_declined_the_humans_offer(table):
    # An agent that meant to accept and left (=) out must hear that its move declined.
    await table.choose("black")
    await table.human_move("e2e4")
    await table.human(OfferDraw(table.token))
    shown = await table.tool("get_board")
    assert shown["drawOffer"] == "human"
    moved = await table.tool("move_piece", **{"from": "e7", "to": "e5"})
    assert moved["drawOffer"] is None
    assert moved["message"] == (
        "The human is to move. Your move e5 declined the human's draw offer (no (=) in its note)."
    )
    await table.human_move("g1f3")
    waited = await table.tool("wait_for_turn", timeout_ms=1000)
    assert "declined" not in waited["message"]  # said once, with the move


async def test_the_agent_is_told_in_words_that_its_move_offered_a_draw(table):
    await table.choose("white")
    moved = await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "Draw? (=)"})
    assert moved["drawOffer"] == "agent"
    assert moved["message"] == (
        "The human is to move. You offered a draw: the human accepts it on the page or declines"
        " it by moving."
    )


def _size(reply: dict) -> int:
    return len(json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode())


async def test_move_and_wait_replies_stay_under_one_and_a_half_kilobytes(table):
    await table.choose("white")
    sizes = []
    for ply, uci in enumerate(IMMORTAL):
        if ply % 2 == 0:
            waited = await table.tool("wait_for_turn", timeout_ms=1000)
            assert waited["agentMayMove"]
            sizes.append(_size(waited))
            args = {"from": uci[:2], "to": uci[2:4], "note": NOTE}
            sizes.append(_size(await table.tool("move_piece", **args)))
        else:
            await table.human_move(uci, NOTE)
    assert len(sizes) == len(IMMORTAL) + 1
    assert max(sizes) <= 1500, max(sizes)
