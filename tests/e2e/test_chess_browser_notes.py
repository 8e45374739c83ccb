"""End to end in a real browser: the agent's newest note is in view without scrolling.

A tester's finding: in a 30-move game with a note on every agent move, the note on the move
the agent had just played was 1,063 px down a 900 px page (the Notes list, oldest first,
grows under the moves; on a phone, under the board too). The page now says the agent's
newest note under the status line. ``agora serve`` runs in a subprocess, the agent is the
official ``mcp`` SDK, the human plays through the page API, and the page is headless Chromium.
"""

from __future__ import annotations

import random
from typing import Any

import chess
import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, SCREENS, chromium, sync_api
from chess_page_http import http_json, new_table
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

PLIES = 60


def _game() -> list[chess.Move]:
    """60 plies of a fixed random game that does not end before them."""
    rng = random.Random(11)
    while True:
        board, moves = chess.Board(), []
        for _ in range(PLIES):
            legal = sorted(board.legal_moves, key=chess.Move.uci)
            if not legal:
                break
            move = rng.choice(legal)
            board.push(move)
            moves.append(move)
        if len(moves) == PLIES and board.outcome(claim_draw=True) is None:
            return moves


def _args(move: chess.Move) -> dict[str, Any]:
    args: dict[str, Any] = {"from": chess.square_name(move.from_square)}
    args["to"] = chess.square_name(move.to_square)
    if move.promotion:
        args["promotion"] = chess.piece_symbol(move.promotion)
    return args


def newest_note_in_view(url: str) -> dict[str, Any]:
    """On a desktop and on a phone: the agent's newest note, and whether it is in view."""
    expect = sync_api.expect
    seen: dict[str, Any] = {"errors": []}
    with chromium() as browser:
        for screen, options in SCREENS.items():
            context = browser.new_context(**options)
            page = context.new_page()
            page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
            page.goto(url)
            expect(page.locator("#moves li .san")).to_have_count(PLIES)
            note = page.locator("#last-note")
            box = note.bounding_box()
            seen[screen] = {
                "text": note.text_content(),
                "in_view": box is not None
                and box["y"] + box["height"] <= options["viewport"]["height"],
            }
            context.close()
    return seen


async def test_the_agents_newest_note_is_in_view_without_scrolling(tmp_path):
    moves = _game()
    with trio.fail_after(90):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "notes")
            play = f"{server.url}/play/{table['table']}"
            token = table["token"]
            await http_json("POST", f"{play}/side", {"token": token, "agentColor": "black"})
            async with mcp.Client(table["agent"]["mcpHttp"]) as agent:
                for ply, move in enumerate(moves):
                    if ply % 2 == 0:
                        status, _ = await http_json(
                            "POST", f"{play}/move", {"token": token, **_args(move)}
                        )
                        assert status == 200
                    else:
                        note = f"Agent note for move {ply // 2 + 1}."
                        await agent.call_tool("get_board", {})  # a blind move is refused
                        result = await agent.call_tool("move_piece", {**_args(move), "note": note})
                        assert not result.is_error, result
            seen = await trio.to_thread.run_sync(newest_note_in_view, table["humanUrl"])
    board = chess.Board()
    for move in moves[:-1]:
        board.push(move)
    san = board.san(moves[-1])
    expected = f"The agent's note on 30… {san}:Agent note for move 30."
    assert seen["desktop"] == {"text": expected, "in_view": True}
    assert seen["phone"] == {"text": expected, "in_view": True}
    assert seen["errors"] == []
