"""The page's words for a finished game and for a new table's name, said to the human."""

from __future__ import annotations

import pytest
from games import SCHOLARS_MATE
from page_routes import api

from agora.toolsets.chess.commands import AcceptDraw, OfferDraw, Resign

FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]


async def _statuses(table) -> tuple[str, str]:
    """The status line the human and a spectator see."""
    rt = table.runtime
    _, mine = await api(rt, "GET", "/play/default/state", query={"token": table.token})
    _, watched = await api(rt, "GET", "/play/default/state")
    return mine["status"], watched["status"]


async def test_the_human_who_resigned_is_told_so(table):
    await table.choose("black")
    await table.human(Resign(table.token))
    assert await _statuses(table) == (
        "The agent won by resignation: you resigned (0-1).",
        "The agent won by resignation: the human resigned (0-1).",
    )


async def test_a_checkmate_is_told_from_the_human_side(table):
    await table.choose("black")  # the human plays White's scholar's mate
    await table.play(SCHOLARS_MATE)
    assert await _statuses(table) == (
        "You won by checkmate (1-0).",
        "The human won by checkmate (1-0).",
    )


async def test_the_agent_checkmate_is_told_from_the_human_side(table):
    await table.choose("black")
    await table.play(FOOLS_MATE)
    assert await _statuses(table) == (
        "The agent won by checkmate (0-1).",
        "The agent won by checkmate (0-1).",
    )


async def test_a_check_is_told_whoever_gives_it(table):
    """A tester's finding: the page said "Check!" when the agent's move gave check, but
    nothing when the human's own move did."""
    await table.choose("black")
    await table.play(["e2e4", "f7f6", "d1h5"])  # the human's queen checks the agent's king
    assert await _statuses(table) == ("Check! The agent is thinking.",) * 2
    await table.play(["g7g6", "h5g6", "h7g6", "f1e2", "h8h2", "e1f1", "h2h1", "f1e1"])
    await table.play(["h1g1"])  # and the agent's rook takes the knight with check
    assert await _statuses(table) == ("Check! Your move.", "Check! The human is to move.")


async def test_a_draw_is_told_plainly(table):
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "(=)"})
    await table.human(AcceptDraw(table.token))
    assert await _statuses(table) == (
        "You accepted the agent's draw offer: drawn by agreement (1/2-1/2).",
        "The human accepted the agent's draw offer: drawn by agreement (1/2-1/2).",
    )


async def test_the_agent_accepting_the_humans_draw_offer_is_told(table):
    """A tester's finding: a refusal was told ("The agent declined your draw offer.") but an
    acceptance only as "Drawn by agreement"."""
    await table.choose("black")
    await table.human(OfferDraw(table.token))
    await table.human_move("e2e4")  # the offer stands over the human's own move
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "agreed (=)"})
    assert await _statuses(table) == (
        "The agent accepted your draw offer: drawn by agreement (1/2-1/2).",
        "The agent accepted the human's draw offer: drawn by agreement (1/2-1/2).",
    )


async def test_the_humans_offer_crossing_the_agents_is_an_acceptance(table):
    await table.choose("black")
    await table.human(OfferDraw(table.token))
    await table.human_move("e2e4")
    await table.tool("wait_for_turn")  # shows the agent the offer
    await table.tool("move_piece", **{"from": "e7", "to": "e5"})  # declines the offer
    await table.human_move("g1f3")
    await table.tool("move_piece", **{"from": "b8", "to": "c6", "note": "(=)"})  # offers
    await table.human(OfferDraw(table.token))
    assert (await _statuses(table))[0] == (
        "You accepted the agent's draw offer: drawn by agreement (1/2-1/2)."
    )


@pytest.mark.parametrize(
    ("asked", "made"),
    [
        pytest.param("Friday-Game", "friday-game", id="upper-case-is-lower-cased"),
        pytest.param("  spaced  ", "spaced", id="spaces-around-are-dropped"),
    ],
)
async def test_a_table_name_with_capitals_is_lower_cased(table, asked, made):
    status, body = await api(table.runtime, "POST", "/play/tables", {"name": asked})
    assert (status, body["table"]) == (201, made)
    assert body["humanUrl"].startswith(f"http://127.0.0.1:8765/play/{made}?token=")


@pytest.mark.parametrize("asked", ["no spaces", "é", "-dash-first", "x" * 41, "static", ""])
async def test_a_name_that_cannot_be_a_table_is_refused_clearly(table, asked):
    status, body = await api(table.runtime, "POST", "/play/tables", {"name": asked})
    assert (status, body["code"]) == (400, "BAD_REQUEST")
    assert body["error"].startswith(f"{asked.strip().lower()[:40]!r} cannot be a table name:")


async def test_the_page_learns_the_human_declined_the_agents_offer_until_its_next_move(table):
    """A tester's finding: after the human's move declined the agent's offer, the page did not
    say so (the agent's reply did, as drawDeclined)."""
    rt = table.runtime

    async def declined() -> tuple[bool, bool]:
        _, mine = await api(rt, "GET", "/play/default/state", query={"token": table.token})
        _, watched = await api(rt, "GET", "/play/default/state")
        return mine["humanDeclined"], watched["humanDeclined"]

    await table.choose("white")
    await table.tool("move_piece", **{"from": "d2", "to": "d4", "note": "Draw? (=)"})
    assert await declined() == (False, False)
    await table.human_move("d7d5")
    assert await declined() == (True, True)
    await table.tool("move_piece", **{"from": "c2", "to": "c4"})
    assert await declined() == (False, False)
