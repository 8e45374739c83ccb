"""The four tools driven through their handlers on a real runtime, against a scripted human.

Every result is validated against its outputSchema by the `table` fixture's driver.
"""

from __future__ import annotations

import pytest
from games import LOYD_STALEMATE, SCHOLARS_MATE

from agora.toolsets.chess import ensure_table
from agora.toolsets.chess.commands import NewGame, OfferDraw, Resign
from agora.toolsets.chess.guide import CONTRACT
from agora.toolsets.chess.position import ungroup_moves

TO_PROMOTION = ["a2a4", "b7b5", "a4b5", "a7a6", "b5a6", "c8b7", "a6b7", "e7e6"]


async def test_join_game_returns_the_contract_and_the_opening_position(table):
    reply = await table.tool("join_game")
    assert reply["protocolVersion"] == "agora-chess/3"
    assert reply["statusCode"] == "SIDE_CHOICE_REQUIRED"
    assert reply["seat"] == "agent"
    assert reply["nextAction"] == {
        "tool": "wait_for_turn",
        "arguments": {"wait_for_human": True},
        "instruction": reply["nextAction"]["instruction"],
    }
    assert reply["agentMayMove"] is False
    assert reply["legalMoves"] == {}
    assert reply["fen"] == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    assert reply["board"] == [
        "8 r n b q k b n r",
        "7 p p p p p p p p",
        "6 . . . . . . . .",
        "5 . . . . . . . .",
        "4 . . . . . . . .",
        "3 . . . . . . . .",
        "2 P P P P P P P P",
        "1 R N B Q K B N R",
        "  a b c d e f g h",
    ]
    assert reply["agentColor"] is None
    assert reply["history"] == ""
    contract = reply["collaborationContract"]
    assert [s["name"] for s in contract["evaluationPath"]][:3] == ["checks", "captures", "threats"]
    assert "Never call move_piece while agentMayMove is false." in contract["safetyInvariants"]
    assert contract == __import__("msgspec").to_builtins(CONTRACT)
    assert (await table.look()).agent_present


async def test_wait_for_turn_bootstraps_at_once_before_the_side_choice(table):
    reply = await table.tool("wait_for_turn")
    assert reply["statusCode"] == "SIDE_CHOICE_REQUIRED"
    assert reply["nextAction"]["arguments"] == {"wait_for_human": True}
    assert reply["evaluationGuide"] is None


async def test_the_side_choice_gate_refuses_every_agent_move(table):
    body = await table.refused("move_piece", **{"from": "e2", "to": "e4"})
    assert body["code"] == "SIDE_NOT_CHOSEN"
    assert body["ok"] is False
    assert body["statusCode"] == "SIDE_CHOICE_REQUIRED"
    assert body["nextAction"]["tool"] == "wait_for_turn"
    assert body["nextAction"]["arguments"] == {"wait_for_human": True}
    assert (await table.look()).moves == ()


async def test_agent_turn_lists_legal_moves_in_uci_with_the_guide(table):
    await table.choose("white")
    reply = await table.tool("get_board")
    assert reply["statusCode"] == "AGENT_TURN"
    assert reply["agentMayMove"] is True
    assert reply["nextAction"]["tool"] == "move_piece"
    assert reply["legalMoves"]["g1"] == "f3 h3"
    assert len(ungroup_moves(reply["legalMoves"])) == 20
    assert "g1f3" in ungroup_moves(reply["legalMoves"])
    assert reply["ownership"] == {"white": "agent", "black": "human"}
    assert reply["pieces"]["e1"] == "K"
    assert reply["pieces"]["e8"] == "k"
    assert len(reply["pieces"]) == 32
    assert reply["evaluationGuide"]["material"] == 0
    waited = await table.tool("wait_for_turn")
    assert waited["legalMoves"] == reply["legalMoves"]
    assert waited["evaluationGuide"] == reply["evaluationGuide"]


async def test_a_move_is_recorded_with_its_note_and_hands_the_turn_over(table):
    await table.choose("white")
    reply = await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "centre"})
    assert reply["statusCode"] == "HUMAN_TURN"
    assert reply["agentMayMove"] is False
    assert reply["legalMoves"] == {}
    assert reply["nextAction"] == {
        "tool": "wait_for_turn",
        "arguments": {},
        "instruction": reply["nextAction"]["instruction"],
    }
    assert reply["lastMove"] == {
        "san": "e4",
        "uci": "e2e4",
        "by": "agent",
        "note": "centre",
    }
    await table.human_move("c7c5", "hello agent")
    board = await table.tool("get_board")
    assert board["lastMove"] == {
        "san": "c5",
        "uci": "c7c5",
        "by": "human",
        "note": "hello agent",
    }
    assert board["history"] == "1. e4 c5"


@pytest.mark.parametrize(
    "note",
    [
        pytest.param("\u202e", id="right-to-left override alone"),
        pytest.param("\u2066\u200f\u2069", id="isolate and mark"),
        pytest.param(" \u202e ", id="override between spaces"),
    ],
)
async def test_a_human_note_of_only_controls_reaches_the_agent_as_no_note(table, note):
    """A tester's finding: U+202E alone reached the agent as "" (a note with nothing in
    it) rather than null, as no note does."""
    await table.choose("black")
    await table.human_move("e2e4", note)
    for name in ("get_board", "wait_for_turn"):
        reply = await table.tool(name)
        assert reply["lastMove"]["note"] is None, name
    state = await table.look()
    assert state.moves[-1].note == note  # stored as sent: only what a reader is shown changes


async def test_rejections_name_the_problem_and_the_next_action(table):
    await table.choose("black")
    body = await table.refused("move_piece", **{"from": "e7", "to": "e5"})
    assert (body["code"], body["statusCode"]) == ("NOT_YOUR_TURN", "HUMAN_TURN")
    assert body["nextAction"]["tool"] == "wait_for_turn"
    await table.human_move("e2e4")
    body = await table.refused("move_piece", **{"from": "e7", "to": "e4"})
    assert body["code"] == "ILLEGAL_MOVE"
    assert body["error"] == ("the pawn on e7 cannot move to e4; from e7 it can move to e5, e6.")
    assert body["nextAction"]["tool"] == "move_piece"
    assert len(ungroup_moves(body["legalMoves"])) == 20
    assert body["legalMoves"]["e7"] == "e5 e6"
    body = await table.refused("move_piece", **{"from": "a1", "to": "a1"})
    assert body["code"] == "ILLEGAL_MOVE"
    assert "0000" not in body["error"]
    assert "both a1" in body["error"]
    body = await table.refused("move_piece", **{"from": "i7", "to": "e5"})
    assert body["code"] == "MALFORMED_SQUARE"
    body = await table.refused("move_piece", **{"from": "e7", "to": "e5", "note": "x" * 161})
    assert body["code"] == "NOTE_TOO_LONG"
    body = await table.refused("move_piece", **{"from": "e7", "to": "e5", "promotion": "q"})
    assert body["code"] == "ILLEGAL_MOVE"
    assert len((await table.look()).moves) == 1


async def test_scholars_mate_by_the_agent(table):
    await table.choose("white")
    last = await table.play(SCHOLARS_MATE)
    assert last is not None
    assert last["statusCode"] == "GAME_OVER"
    assert last["nextAction"]["tool"] is None
    assert last["result"] == {
        "score": "1-0",
        "reason": "checkmate",
        "winner": "white",
        "winnerRole": "agent",
        "summary": "1-0: white (agent) wins by checkmate.",
    }
    body = await table.refused("move_piece", **{"from": "a2", "to": "a3"})
    assert body["code"] == "GAME_OVER"
    assert body["nextAction"]["tool"] is None


async def test_scholars_mate_against_the_agent(table):
    await table.choose("black")
    await table.play(SCHOLARS_MATE)
    reply = await table.tool("wait_for_turn", timeout_ms=1000)
    assert reply["statusCode"] == "GAME_OVER"
    assert reply["result"]["winnerRole"] == "human"
    assert reply["inCheck"] is True


async def test_stalemate(table):
    await table.choose("white")
    last = await table.play(LOYD_STALEMATE)
    assert last is not None
    assert last["result"]["reason"] == "stalemate"
    assert last["result"]["winner"] is None


@pytest.mark.parametrize(("piece", "symbol"), [("q", "Q"), ("r", "R"), ("b", "B"), ("n", "N")])
async def test_promotion_to_each_piece(table, piece, symbol):
    await table.choose("white")
    await table.play(TO_PROMOTION)
    reply = await table.tool("get_board")
    promotions = [m for m in ungroup_moves(reply["legalMoves"]) if m.startswith("b7a8")]
    assert sorted(promotions) == ["b7a8b", "b7a8n", "b7a8q", "b7a8r"]
    played = await table.tool("move_piece", **{"from": "b7", "to": "a8", "promotion": piece})
    assert played["board"][0].startswith(f"8 {symbol}")
    assert played["lastMove"]["uci"] == f"b7a8{piece}"


async def test_promotion_defaults_to_queen(table):
    await table.choose("white")
    await table.play(TO_PROMOTION)
    played = await table.tool("move_piece", **{"from": "b7", "to": "a8"})
    assert played["lastMove"]["san"] == "bxa8=Q"


async def test_en_passant(table):
    await table.choose("white")
    last = await table.play(["e2e4", "a7a6", "e4e5", "d7d5", "e5d6"])
    assert last is not None
    assert last["lastMove"]["san"] == "exd6"
    board = (await table.tool("get_board"))["pieces"]
    assert "d5" not in board
    assert board["d6"] == "P"


@pytest.mark.parametrize(
    ("agent_color", "moves", "king", "rook"),
    [
        pytest.param("white", "e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1g1", "g1", "f1", id="white-short"),
        pytest.param(
            "white",
            "d2d4 d7d5 b1c3 b8c6 c1f4 c8f5 d1d2 d8d7 e1c1",
            "c1",
            "d1",
            id="white-long",
        ),
        pytest.param(
            "black", "e2e4 e7e5 g1f3 g8f6 f1c4 f8c5 b1c3 e8g8", "g8", "f8", id="black-short"
        ),
        pytest.param(
            "black",
            "d2d4 d7d5 b1c3 b8c6 c1f4 c8f5 d1d2 d8d7 a2a3 e8c8",
            "c8",
            "d8",
            id="black-long",
        ),
    ],
)
async def test_castling_both_sides(table, agent_color, moves, king, rook):
    await table.choose(agent_color)
    last = await table.play(moves.split())
    assert last is not None
    assert last["lastMove"]["san"] in ("O-O", "O-O-O")
    pieces = (await table.tool("get_board"))["pieces"]
    assert pieces[king].lower() == "k"
    assert pieces[rook].lower() == "r"


async def test_threefold_repetition_is_a_draw(table):
    await table.choose("white")
    await table.play(["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"])
    await table.human_move("f6g8")
    reply = await table.tool("wait_for_turn", timeout_ms=1000)
    assert reply["statusCode"] == "GAME_OVER"
    assert reply["result"]["reason"] == "threefold_repetition"
    assert reply["result"]["score"] == "1/2-1/2"


async def test_the_human_resigns(table):
    await table.choose("white")
    await table.human(Resign(table.token))
    reply = await table.tool("get_board")
    assert reply["statusCode"] == "GAME_OVER"
    assert reply["result"]["winnerRole"] == "agent"
    assert reply["result"]["reason"] == "resignation"


async def test_the_agent_accepts_a_human_draw_offer_in_its_note(table):
    await table.choose("white")
    await table.human(OfferDraw(table.token))
    board = await table.tool("get_board")
    assert board["drawOffer"] == "human"
    assert "(=)" in board["message"]
    reply = await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "Agreed (=)"})
    assert reply["statusCode"] == "GAME_OVER"
    assert reply["result"]["reason"] == "agreement"


async def test_an_agent_that_starts_at_wait_for_turn_learns_how_to_offer_a_draw(table):
    """The draw convention is in join_game's contract, and the seed's descriptions of
    move_piece and its note (kept verbatim) do not mention it; an agent that follows
    wait_for_turn's START HERE never calls join_game, so each call to move tells it."""
    await table.choose("white")
    reply = await table.tool("wait_for_turn")
    assert reply["nextAction"]["tool"] == "move_piece"
    instruction = reply["nextAction"]["instruction"]
    assert "(=)" in instruction
    assert "offer" in instruction
    assert "accept" in instruction
    offered = await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "Draw? (=)"})
    assert offered["drawOffer"] == "agent"


async def test_a_new_game_starts_with_a_new_side_choice(table):
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4"})
    await table.human(NewGame(table.token))
    reply = await table.tool("get_board")
    assert reply["gameNumber"] == 2
    assert reply["statusCode"] == "SIDE_CHOICE_REQUIRED"
    assert reply["history"] == ""
    assert reply["lastMove"] is None


async def test_a_table_that_does_not_exist_is_refused(runtime, make_table):
    ghost = make_table(runtime, "ghost", None)
    for tool in ("join_game", "get_board", "wait_for_turn"):
        body = await ghost.refused(tool)
        assert body["code"] == "TABLE_NOT_FOUND"
        assert body["statusCode"] == "TABLE_NOT_FOUND"
        assert body["nextAction"]["tool"] is None


async def test_tables_are_independent(runtime, table, make_table):
    other = make_table(runtime, "second", await ensure_table(runtime, "second"))
    assert other.token != table.token
    assert other.agent_token != table.agent_token
    await other.choose("white")
    await table.choose("white")
    body = await other.refused(
        "move_piece", as_token=table.agent_token, **{"from": "d2", "to": "d4"}
    )
    assert body["code"] == "AGENT_TOKEN_INVALID"
    await other.tool("move_piece", **{"from": "d2", "to": "d4"})
    assert (await table.tool("get_board"))["lastMove"] is None
    assert (await other.tool("get_board"))["history"] == "1. d4"
