"""End to end in a real browser: the king put on its own rook castles, as on lichess.

A tester's finding: after 1. e4 a6 2. Nf3 a5 3. Bc4 a4, dragging the king from e1 onto h1
made it jump back without a word, and clicking e1 then h1 only picked up the rook; only the
king two squares over (g1) castled. ``agora serve`` runs in a subprocess; the position is
reached over the page's HTTP API (the human) and the official ``mcp`` SDK (the agent), then
headless Chromium (a worker thread; `chess_browser`) castles by drag and by click.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, live_page, sync_api
from chess_players import table_after
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

#: White (the human) may castle kingside after these.
MOVES = ["e2e4", "a7a6", "g1f3", "a6a5", "f1c4", "a5a4"]


def castle_onto_the_rook(urls: dict[str, str]) -> dict[str, Any]:
    """Put the king on h1 by drag on one table, by two clicks on the other."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        for how, url in urls.items():
            page = live_page(browser, url, errors)
            expect(page.locator("#moves li .san")).to_have_count(len(MOVES))
            if how == "drag":
                page.locator('[data-square="e1"]').drag_to(page.locator('[data-square="h1"]'))
            else:
                page.click('[data-square="e1"]')
                page.click('[data-square="h1"]')
            expect(page.locator("#moves li .san")).to_have_count(len(MOVES) + 1)
            board = page.locator("#board")
            seen[how] = {
                "last": page.locator("#moves li .san").last.text_content(),
                "g1": board.locator('[data-square="g1"]').get_attribute("aria-label"),
                "f1": board.locator('[data-square="f1"]').get_attribute("aria-label"),
                "error": page.locator("#error").text_content(),
            }
    seen["errors"] = errors
    return seen


async def test_the_king_dropped_or_clicked_on_its_rook_castles(tmp_path):
    with trio.fail_after(90):
        async with agora_serve(tmp_path / "agora.db") as server:
            urls = {
                how: await table_after(server, f"castle-{how}", MOVES, "black")
                for how in ("drag", "click")
            }
            seen = await trio.to_thread.run_sync(castle_onto_the_rook, urls)
    castled = {"last": "O-O", "g1": "g1, white king", "f1": "f1, white rook", "error": ""}
    assert seen["drag"] == castled
    assert seen["click"] == castled
    assert seen["errors"] == []
