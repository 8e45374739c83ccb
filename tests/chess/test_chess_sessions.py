"""A move is played only in the game and position its connection was last shown.

Several connections may hold one agent token (a second client, a restarted agent whose old
session still waits). Each connection's calls are remembered by the table: a move from one
that was last shown another game or position is refused with what changed, and every reply
(and the human's page) says when more than one connection holds the seat.
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
    assert body["nextAction"]["tool"] == "get_board"
    assert (await table.look()).moves == ()
    seen = await table.tool("get_board", connection=first)
    assert seen["gameNumber"] == 2
    moved = await table.tool("move_piece", connection=first, **{"from": "b1", "to": "c3"})
    assert moved["lastMove"]["san"] == "Nc3"


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
    await table.human_move("b8c6")
    # After the reply: the agent's turn again, but not the position two chose its move for.
    body = await table.refused("move_piece", connection=two, **{"from": "e2", "to": "e4"})
    assert (body["code"], body["statusCode"]) == ("NOT_YOUR_TURN", "AGENT_TURN")
    assert (
        "another connection with this table's agent token moved Nf3, then the human replied Nc6"
        in body["error"]
    )
    assert body["nextAction"]["tool"] == "get_board"
    assert [m.san for m in (await table.look()).moves] == ["Nf3", "Nc6"]


async def test_a_connection_the_server_has_no_record_of_may_move(table):
    await table.choose("white")
    await table.tool("get_board", connection=Connection())
    await table.human(NewGame(table.token))
    await table.choose("white")
    # A new connection (or any after a restart) was shown nothing: its move is played.
    moved = await table.tool("move_piece", connection=Connection(), **{"from": "e2", "to": "e4"})
    assert moved["lastMove"]["san"] == "e4"


async def test_replies_and_the_page_say_when_two_connections_hold_the_seat(table, runtime):
    one, two = Connection(), Connection()
    await table.choose("white")
    alone = await table.tool("get_board", connection=one)
    assert SHARED_SEAT not in alone["message"]
    await table.tool("get_board", connection=two)
    shared = await table.tool("get_board", connection=one)
    assert SHARED_SEAT in shared["message"]
    state = page_state(await table.look(), human=True, public_url=runtime.public_url)
    assert state.agent_shared


async def test_a_connection_that_replaces_another_is_not_a_second_holder(table):
    # A client's new TCP connection, or a relay that reconnected: the old one calls no more.
    await table.choose("white")
    await table.tool("get_board", connection=Connection())
    replacing = Connection()
    for _ in range(2):
        assert SHARED_SEAT not in (await table.tool("get_board", connection=replacing))["message"]
