"""A human draw offer the agent had not been shown is not declined by its move.

Tester's finding: the agent read AGENT_TURN with no offer, the human clicked "Offer draw"
while it thought, and its move (chosen before the offer existed) was told to the human as
"The agent declined your draw offer." and recorded so in the PGN, though no reply had shown
the agent the offer. Now such an offer stands through that move, whose reply shows it and
says how to answer it; the agent's next move answers it.
"""

from __future__ import annotations

import io

import chess.pgn
from page_routes import api, http

from agora.toolsets.chess.commands import NewGame, OfferDraw


def _flat(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[1].split())


async def _pgn(table, game: int | None = None) -> str:
    query = {"game": str(game)} if game is not None else None
    text: str = (await http(table.runtime, "GET", "/play/default/pgn", query=query)).body.decode()
    assert chess.pgn.read_game(io.StringIO(text)) is not None
    return text


async def _page(table) -> dict:
    _, state = await api(table.runtime, "GET", "/play/default/state", query={"token": table.token})
    return state


async def _offer_while_the_agent_thinks(table) -> dict:
    """1. e4; the agent reads its turn (no offer); the human offers; the agent plays e5."""
    await table.choose("black")  # the human plays White
    await table.human_move("e2e4")
    seen = await table.tool("wait_for_turn")
    assert (seen["statusCode"], seen["drawOffer"]) == ("AGENT_TURN", None)
    await table.human(OfferDraw(table.token))
    return await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "Symmetry."})


async def test_an_offer_made_while_the_agent_thinks_stands_through_its_move(table):
    moved = await _offer_while_the_agent_thinks(table)
    assert (moved["drawOffer"], moved["drawDeclined"]) == ("human", False)
    assert "did not decline it" in moved["message"]
    assert "Write (=) in your next move's note to accept" in moved["message"]
    assert "a move without (=) declines it" in moved["message"]
    state = await _page(table)
    assert (state["drawOffer"], state["drawDeclined"], state["drawOfferUnseen"]) == (
        "human",
        False,
        True,
    )
    assert _flat(await _pgn(table)) == (
        "1. e4 { The human offers a draw. } 1... e5 { Agent: Symmetry. } *"
    )
    # The agent's next turn shows the offer; its move without (=) now declines it.
    await table.human_move("g1f3")
    shown = await table.tool("wait_for_turn")
    assert shown["drawOffer"] == "human"
    await table.tool("move_piece", **{"from": "b8", "to": "c6"})
    state = await _page(table)
    assert (state["drawOffer"], state["drawDeclined"], state["drawOfferUnseen"]) == (
        None,
        True,
        False,
    )
    said = (
        "1. e4 { The human offers a draw. } 1... e5 { Agent: Symmetry. } 2. Nf3 Nc6"
        " { The agent declines the draw offer. }"
    )
    assert _flat(await _pgn(table)) == f"{said} *"
    await table.human(NewGame(table.token))  # game 1 is now read back from the store
    assert _flat(await _pgn(table, 1)) == f"{said} {{ Abandoned: the human started a new game. }} *"


async def test_the_agent_may_accept_the_offer_it_passed_unseen(table):
    await _offer_while_the_agent_thinks(table)
    await table.human_move("g1f3")
    await table.tool("move_piece", **{"from": "b8", "to": "c6", "note": "agreed (=)"})
    state = await _page(table)
    assert state["status"] == "The agent accepted your draw offer: drawn by agreement (1/2-1/2)."
    assert "Nc6 { Agent: agreed (=) } { The agent accepts the draw offer. }" in _flat(
        await _pgn(table)
    )


async def test_an_offer_the_agent_was_shown_is_declined_by_its_move(table):
    await table.choose("black")
    await table.human_move("e2e4")
    await table.human(OfferDraw(table.token))
    assert (await table.tool("get_board"))["drawOffer"] == "human"  # the agent reads it
    moved = await table.tool("move_piece", **{"from": "e7", "to": "e5"})
    assert (moved["drawOffer"], moved["drawDeclined"]) == (None, False)
    state = await _page(table)
    assert (state["drawOffer"], state["drawDeclined"], state["drawOfferUnseen"]) == (
        None,
        True,
        False,
    )
