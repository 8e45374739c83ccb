"""A move is played only in the game and position its connection, or the seat, was last shown.

Several connections may hold one agent token (a second client, a restarted agent whose old
session still waits), and one agent may use several (a new TCP connection after a long
think, two calls at once). A move from a connection last shown another game or position is
refused with what changed; from a connection with no record of its own, when the seat's last
look showed another. Once a stale move finds another connection's move, every reply (and the
human's page) says more than one connection holds the seat.
"""

from __future__ import annotations

from agora.toolsets.chess.commands import NewGame
from agora.toolsets.chess.page import page_state
from agora.toolsets.chess.sessions import SHARED_SEAT


class Connection:
    """Stands for one MCP session: the tools key what it was shown by this object."""


async def test_a_move_chosen_before_the_human_started_a_new_game_is_not_played(table):
    first = Connection()
    await table.choose("white")
    board = await table.tool("get_board", connection=first)
    assert (board["gameNumber"], board["statusCode"]) == (1, "AGENT_TURN")
    await table.human(NewGame(table.token))
    await table.choose("white")
    body = await table.refused("move_piece", connection=first, **{"from": "b1", "to": "c3"})
    assert (body["code"], body["statusCode"]) == ("NOT_YOUR_TURN", "AGENT_TURN")
    assert "Not played: the human started game 2 since your last look" in body["error"]
    assert (await table.look()).moves == ()
    # The refusal is a look: it gives the position's legal moves, and a move from them is played.
    assert body["agentMayMove"]
    assert body["legalMoves"]["b1"] == "a3 c3"
    assert len(" ".join(body["legalMoves"].values()).split()) == 20
    assert body["nextAction"]["tool"] == "move_piece"
    assert "this refusal counts as your look" in body["nextAction"]["instruction"]
    moved = await table.tool("move_piece", connection=first, **{"from": "e2", "to": "e4"})
    assert (moved["gameNumber"], moved["lastMove"]["san"]) == (2, "e4")


async def test_a_move_chosen_before_another_connections_move_is_not_played(table):
    one, two = Connection(), Connection()
    await table.choose("white")
    for connection in (one, two):
        assert (await table.tool("wait_for_turn", connection=connection))["agentMayMove"]
    await table.tool("move_piece", connection=one, **{"from": "g1", "to": "f3", "note": "A"})
    # Before the human replies: it is not the agent's turn, and the refusal says who moved.
    body = await table.refused("move_piece", connection=two, **{"from": "e2", "to": "e4"})
    assert (body["code"], body["statusCode"]) == ("NOT_YOUR_TURN", "HUMAN_TURN")
    assert "another connection with this table's agent token moved Nf3" in body["error"]
    assert "last move Nf3 (g1f3) by the agent" in body["error"]
    assert body["legalMoves"] == {}  # the human's turn: nothing to choose from
    await table.human_move("b8c6")
    # After the reply: the agent's turn again, but not the position two last saw (the
    # refusal's, which counts as its look).
    body = await table.refused("move_piece", connection=two, **{"from": "e2", "to": "e4"})
    assert (body["code"], body["statusCode"]) == ("NOT_YOUR_TURN", "AGENT_TURN")
    assert "Not played: the human moved Nc6 since your last look" in body["error"]
    assert body["nextAction"]["tool"] == "move_piece"
    assert "e2" in body["legalMoves"]
    assert [m.san for m in (await table.look()).moves] == ["Nf3", "Nc6"]


async def test_a_move_from_a_new_connection_is_refused_when_the_seat_last_saw_another_game(table):
    # Over HTTP at 2026-07-28 a move after a long think comes on a new TCP connection.
    await table.choose("white")
    await table.tool("get_board", connection=Connection())
    await table.human(NewGame(table.token))
    await table.choose("white")
    body = await table.refused("move_piece", connection=Connection(), **{"from": "b1", "to": "c3"})
    assert body["code"] == "NOT_YOUR_TURN"
    assert "Not played: the human started game 2 since your last look (at game 1)" in body["error"]
    assert (await table.look()).moves == ()


async def test_a_move_from_a_new_connection_is_refused_when_the_seat_last_saw_another_position(
    table,
):
    one = Connection()
    await table.choose("white")
    await table.tool("move_piece", connection=one, **{"from": "d2", "to": "d4"})
    await table.human_move("d7d5")
    body = await table.refused("move_piece", connection=Connection(), **{"from": "e2", "to": "e4"})
    assert "Not played: the human moved d5 since your last look" in body["error"]
    assert [m.san for m in (await table.look()).moves] == ["d4", "d5"]


async def test_a_new_connection_may_move_in_what_the_seats_last_look_showed(table):
    await table.choose("white")
    # No look at all (after a restart, or a new token): the move is played.
    moved = await table.tool("move_piece", connection=Connection(), **{"from": "e2", "to": "e4"})
    assert moved["lastMove"]["san"] == "e4"
    await table.human_move("e7e5")
    await table.tool("wait_for_turn", connection=Connection())
    # The seat's last look showed this position: a new connection's move is played.
    moved = await table.tool("move_piece", connection=Connection(), **{"from": "g1", "to": "f3"})
    assert moved["lastMove"]["san"] == "Nf3"


async def test_two_calls_at_once_are_not_a_second_holder(table, runtime):
    # One agent's parallel calls come on two connections: neither says the seat is shared.
    one, two = Connection(), Connection()
    await table.choose("white")
    for connection in (one, two, one, two):
        reply = await table.tool("get_board", connection=connection)
        assert SHARED_SEAT not in reply["message"]
    moved = await table.tool("move_piece", connection=one, **{"from": "e2", "to": "e4"})
    assert SHARED_SEAT not in moved["message"]
    state = page_state(await table.look(), human=True, public_url=runtime.public_url)
    assert not state.agent_shared


async def test_replies_and_the_page_say_so_once_another_connection_moved(table, runtime):
    one, two = Connection(), Connection()
    await table.choose("white")
    for connection in (one, two):
        await table.tool("get_board", connection=connection)
    moved = await table.tool("move_piece", connection=one, **{"from": "g1", "to": "f3"})
    assert SHARED_SEAT not in moved["message"]
    await table.human_move("b8c6")
    refused = await table.refused("move_piece", connection=two, **{"from": "e2", "to": "e4"})
    assert "another connection with this table's agent token moved Nf3" in refused["error"]
    assert SHARED_SEAT in (await table.tool("get_board", connection=one))["message"]
    state = page_state(await table.look(), human=True, public_url=runtime.public_url)
    assert state.agent_shared


async def test_a_connection_that_replaces_another_is_not_a_second_holder(table):
    # A client's new TCP connection, or a relay that reconnected: the old one calls no more.
    await table.choose("white")
    await table.tool("get_board", connection=Connection())
    replacing = Connection()
    for _ in range(2):
        assert SHARED_SEAT not in (await table.tool("get_board", connection=replacing))["message"]


async def test_one_agents_look_on_another_connection_counts_for_its_move(table):
    """Tester finding: an agent that sent get_board and wait_for_turn at once (two TCP
    connections at the stateless revision) had most of its moves refused: the move went out
    on the connection of the earlier look, though the other had just shown the position."""
    looked, waited = Connection(), Connection()
    await table.choose("black")
    await table.human_move("e2e4")
    assert (await table.tool("get_board", connection=looked))["agentMayMove"]
    await table.tool("move_piece", connection=looked, **{"from": "e7", "to": "e5"})
    board = await table.tool("get_board", connection=looked)  # the human's turn
    assert not board["agentMayMove"]
    await table.human_move("g1f3")
    assert (await table.tool("wait_for_turn", connection=waited))["agentMayMove"]
    moved = await table.tool("move_piece", connection=looked, **{"from": "b8", "to": "c6"})
    assert moved["lastMove"]["san"] == "Nc6"
