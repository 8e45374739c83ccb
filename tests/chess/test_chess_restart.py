"""A server restart on a real database file resumes every table exactly."""

from __future__ import annotations

from contextlib import asynccontextmanager

import trio
from page_routes import api

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.chess import ensure_table
from agora.toolsets.chess.commands import NewGame, OfferDraw
from agora.toolsets.chess.sql import MIGRATIONS


@asynccontextmanager
async def server(path):
    """One server lifetime: a store on ``path`` and a runtime whose actors die with it."""
    async with open_store(path, MIGRATIONS) as store, trio.open_nursery() as nursery:
        runtime = Runtime(
            store, nursery, clock=Clock(FakeWall()), public_url="http://127.0.0.1:8765"
        )
        yield runtime
        runtime.begin_shutdown()
        nursery.cancel_scope.cancel()


async def test_a_restart_resumes_every_table_exactly(tmp_path, make_table):
    path = tmp_path / "agora.db"
    with trio.fail_after(30):
        async with server(path) as runtime:
            first = make_table(runtime, "default", await ensure_table(runtime))
            second = make_table(runtime, "blitz", await ensure_table(runtime, "blitz"))
            await first.tool("join_game")
            await first.choose("white")
            await first.tool("move_piece", **{"from": "e2", "to": "e4", "note": "centre"})
            await first.human_move("e7e5", "mirror")
            await first.tool("move_piece", **{"from": "f1", "to": "c4", "note": "eyes on f7"})
            await first.human(OfferDraw(first.token))
            await second.choose("black")
            before = [await first.tool("get_board"), await second.tool("get_board")]

        async with server(path) as runtime:
            tokens = await ensure_table(runtime)
            assert (tokens.human, tokens.agent) == (first.token, first.agent_token)
            first = make_table(runtime, "default", tokens)
            second = make_table(runtime, "blitz", await ensure_table(runtime, "blitz"))
            after = [await first.tool("get_board"), await second.tool("get_board")]
            # Whether the human is at the table is not stored: a restart forgets who came.
            assert [board.pop("human") for board in before] == ["away", "away"]
            assert [board.pop("human") for board in after] == ["absent", "absent"]
            assert after == before
            assert after[0]["drawOffer"] == "human"
            assert after[0]["history"] == "1. e4 e5 2. Bc4"
            assert after[0]["lastMove"]["note"] == "eyes on f7"
            assert after[1]["statusCode"] == "HUMAN_TURN"
            await first.human_move("b8c6")
            await first.tool("move_piece", **{"from": "d1", "to": "h5"})
            await first.human_move("g8f6")
            last = await first.tool("move_piece", **{"from": "h5", "to": "f7"})
            assert last["result"]["reason"] == "checkmate"

        async with server(path) as runtime:
            again = make_table(runtime, "default", await ensure_table(runtime))
            assert again.agent_token == first.agent_token
            done = await again.tool("wait_for_turn")
            assert done["statusCode"] == "GAME_OVER"
            assert done["lastMove"]["san"] == "Qxf7#"
            refused = await again.refused(
                "move_piece", as_token="stolen", **{"from": "a7", "to": "a6"}
            )
            assert refused["code"] == "AGENT_TOKEN_INVALID"


async def test_the_agents_declined_draw_offer_is_shown_until_the_humans_next_move(
    tmp_path, make_table
):
    """The human offers with a button, so no move's note records the offer: the game keeps
    the ply of the move that declined it, and a restart keeps that too."""
    path = tmp_path / "agora.db"

    async def declined(runtime) -> tuple[bool, bool]:
        query = {"token": table.token}
        _, human = await api(runtime, "GET", "/play/default/state", query=query)
        _, spectator = await api(runtime, "GET", "/play/default/state")
        return human["drawDeclined"], spectator["drawDeclined"]

    with trio.fail_after(30):
        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            await table.choose("black")
            await table.human(OfferDraw(table.token))
            await table.human_move("e2e4")
            assert await declined(runtime) == (False, False)  # the agent has not answered
            await table.tool("wait_for_turn")  # shows the agent the offer
            await table.tool("move_piece", **{"from": "e7", "to": "e5"})
            assert await declined(runtime) == (True, True)

        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            assert await declined(runtime) == (True, True)
            await table.human_move("g1f3")
            assert await declined(runtime) == (False, False)
            await table.human(OfferDraw(table.token))
            await table.tool("move_piece", **{"from": "b8", "to": "c6", "note": "yes (=)"})
            assert (await table.look()).result is not None  # accepted: a draw, not declined
            assert await declined(runtime) == (False, False)


async def test_after_a_restart_an_offer_whose_sight_is_unknown_is_not_called_unseen(
    tmp_path, make_table
):
    """The agent saw the offer, the server restarted, the agent moved: the server cannot tell
    whether the offer was seen, so it stands, and neither side is told it was not seen."""
    path = tmp_path / "agora.db"
    with trio.fail_after(30):
        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            await table.choose("black")
            await table.human_move("e2e4")
            await table.human(OfferDraw(table.token))
            assert (await table.tool("wait_for_turn"))["drawOffer"] == "human"

        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            moved = await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "no"})
            assert moved["drawOffer"] == "human"  # it stands
            assert "cannot tell whether you saw this offer: it stands" in moved["message"]
            assert "after your last look" not in moved["message"]
            query = {"token": table.token}
            _, state = await api(runtime, "GET", "/play/default/state", query=query)
            assert (state["drawOfferUnseen"], state["drawOfferSightUnknown"]) == (True, True)
            # Once a reply has shown it again, the next move answers it as always.
            await table.human_move("g1f3")
            await table.tool("move_piece", **{"from": "b8", "to": "c6"})
            assert (await table.look()).draw_offer is None


class _Connection:
    """Stands for one MCP session (the tools key what it was shown by this object)."""


async def test_after_a_restart_a_move_is_not_refused_for_want_of_a_record(tmp_path, make_table):
    # What the connections and the seat were shown is in memory: a restart forgets it.
    path = tmp_path / "agora.db"
    with trio.fail_after(30):
        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            await table.choose("white")
            await table.tool("get_board", connection=_Connection())
            await table.human(NewGame(table.token))  # the seat's last look: game 1
            await table.choose("white")

        async with server(path) as runtime:
            table = make_table(runtime, "default", await ensure_table(runtime))
            moved = await table.tool(
                "move_piece", connection=_Connection(), **{"from": "e2", "to": "e4"}
            )
            assert moved["lastMove"]["san"] == "e4"
