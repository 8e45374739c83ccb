"""End to end in a real browser: the human plays with the keyboard alone.

``agora serve`` runs in a subprocess and the human's page in headless Chromium (a worker
thread; `chess_browser`). The board is one tab stop; the arrow keys move between squares (as
drawn: up is towards the agent), Enter or Space picks a piece and then its target, Escape
drops the pick (one made with the mouse too, wherever the focus is), and the focus stays on
the board when it is drawn again after the move.
A screen reader finds the grid's eight rows of cells, each named by its square and piece.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, seated_white, sync_api
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]


#: The board as the accessibility tree sees it: per row, its cells' roles and first label.
_GRID = """() => [...document.querySelectorAll('#board > [role="row"]')].map((row) => [
  [...row.children].map((cell) => cell.getAttribute("role")).join(","),
  row.children[0].getAttribute("aria-label"),
])"""
#: Each named square's label and aria-selected.
_LABELS = """(squares) => squares.map((s) => {
  const cell = document.querySelector(`[data-square="${s}"]`);
  return [cell.getAttribute("aria-label"), cell.getAttribute("aria-selected")];
})"""


#: The human's draw offer, posted from the page with its own token.
_OFFER_DRAW = """async () => {
  const token = new URLSearchParams(location.search).get("token");
  const table = location.pathname.split("/")[2];
  await fetch(`/play/${table}/offer-draw`, {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({token}),
  });
}"""


def _focused(page: Any) -> str | None:
    found: str | None = page.evaluate("() => document.activeElement.dataset.square || null")
    return found


def human_plays_by_keyboard(url: str) -> dict[str, Any]:
    """As White: e2e4 with the keyboard only; what the page showed at each step."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        seen["tab_stops"] = page.locator('#board .square[tabindex="0"]').count()
        seen["rows"] = page.evaluate(_GRID)
        page.focus('[data-square="e2"]')
        page.keyboard.press("Enter")
        expect(page.locator(".square.selected")).to_have_count(1)
        seen["picked"] = page.evaluate(_LABELS, ["e2", "e3", "e4", "e5"])
        page.keyboard.press("Enter")  # the same square again: the piece is put down
        expect(page.locator(".square.selected")).to_have_count(0)
        page.keyboard.press("Enter")
        expect(page.locator(".square.selected")).to_have_count(1)
        seen["hidden_coords"] = page.locator('.coord[aria-hidden="true"]').count()
        seen["row_names"] = page.locator('#board > [role="row"]').evaluate_all(
            "rows => rows.map(r => r.getAttribute('aria-label'))"
        )
        seen["targets"] = sorted(
            s.get_attribute("data-square") for s in page.locator(".square.target").all()
        )
        seen["focus_after_pick"] = _focused(page)
        page.keyboard.press("Escape")
        expect(page.locator(".square.selected")).to_have_count(0)
        page.keyboard.press("Space")
        expect(page.locator(".square.selected")).to_have_count(1)
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowUp")
        seen["focus_after_arrows"] = _focused(page)
        page.keyboard.press("Enter")
        expect(page.locator("#moves li .san")).to_have_count(1)
        seen["moves"] = page.locator("#moves li .san").all_text_contents()
        seen["focus_after_move"] = _focused(page)
        # The agent's turn: a click on a square focuses it, and a redraw (here the human's
        # draw offer, sent as the page would) keeps the focus there.
        page.click('[data-square="a2"]')
        page.evaluate(_OFFER_DRAW)
        expect(page.locator("#status")).to_contain_text("You offered a draw.")
        seen["focus_after_redraw"] = _focused(page)
        seen["errors"] = errors
    return seen


async def test_the_human_moves_with_the_keyboard_alone(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "k")
            seen = await trio.to_thread.run_sync(human_plays_by_keyboard, table["humanUrl"])
    assert seen["tab_stops"] == 1
    cells = ",".join(["gridcell"] * 8)
    assert seen["rows"] == [
        [cells, "a8, black rook"],
        [cells, "a7, black pawn"],
        *([[cells, f"a{rank}, empty"] for rank in (6, 5, 4, 3)]),
        [cells, "a2, white pawn"],
        [cells, "a1, white rook"],
    ]
    assert seen["hidden_coords"] == 16  # drawn for the eye; each cell's label names its square
    assert seen["row_names"] == [f"rank {n}" for n in range(8, 0, -1)]
    assert seen["picked"] == [
        ["e2, white pawn", "true"],
        ["e3, empty, a legal move", "false"],
        ["e4, empty, a legal move", "false"],
        ["e5, empty", "false"],
    ]
    assert seen["targets"] == ["e3", "e4"]
    assert seen["focus_after_pick"] == "e2"
    assert seen["focus_after_arrows"] == "e4"
    assert seen["moves"] == ["e4"]
    assert seen["focus_after_move"] == "e4"
    assert seen["focus_after_redraw"] == "a2"
    assert seen["errors"] == []


def human_picks_with_the_mouse_then_presses_escape(url: str) -> dict[str, Any]:
    """As White: click e2, Escape; then e2 and e4 by clicks: the move must be played."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        page.click('[data-square="e2"]')
        expect(page.locator(".square.selected")).to_have_count(1)
        seen["focus_after_click"] = _focused(page)  # the arrows carry on from the pick
        page.keyboard.press("Escape")
        seen["selected_after_escape"] = page.locator(".square.selected").count()
        # A pick made with the mouse is dropped by Escape wherever the focus went since.
        page.click('[data-square="e2"]')
        page.focus("#note")
        page.keyboard.press("Escape")
        seen["selected_after_escape_in_note"] = page.locator(".square.selected").count()
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#moves li .san")).to_have_text(["e4"])
        seen["errors"] = errors
    return seen


async def test_escape_drops_a_piece_picked_with_the_mouse(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "esc")
            seen = await trio.to_thread.run_sync(
                human_picks_with_the_mouse_then_presses_escape, table["humanUrl"]
            )
    assert seen["selected_after_escape"] == 0
    assert seen["selected_after_escape_in_note"] == 0
    assert seen["focus_after_click"] == "e2"
    assert seen["errors"] == []
