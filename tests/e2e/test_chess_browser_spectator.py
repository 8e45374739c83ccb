"""End to end in a real browser: a spectator sees the board as boards are shown, White below.

``agora serve`` runs in a subprocess; a table is made through ``POST /play/tables``, its human
seats the agent as White (so the human plays Black) in headless Chromium, and a second page
opens the table's spectator URL. The human's board is drawn from Black's side (h1 at the top
left, the human's name below); the spectator's from White's (a8 at the top left, White
below), whichever side the human took. Screenshot: ``test-artifacts/chess-spectator.png``.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import ARTIFACTS, NEEDS_CHROMIUM, chromium, new_page, seated_black
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]
sync_api = pytest.importorskip("playwright.sync_api")


def _look(page: Any) -> dict[str, Any]:
    """The board's top-left and bottom-right squares, the rank and file labels in drawn
    order, and the player lines at the top and bottom."""
    squares = page.locator("#board .square")
    return {
        "corners": [squares.nth(i).get_attribute("data-square") for i in (0, 63)],
        "ranks": "".join(page.locator("#ranks .coord").all_text_contents()),
        "files": "".join(page.locator("#files .coord").all_text_contents()),
        "top": page.locator("#player-top").inner_text(),
        "bottom": page.locator("#player-bottom").inner_text(),
    }


def human_black_and_a_spectator(human_url: str, spectator_url: str) -> dict[str, Any]:
    """The human seats the agent as White; what the human's page and a spectator's show.

    Runs in a worker thread: Playwright's sync API has its own event loop.
    """
    expect = sync_api.expect
    errors: list[str] = []
    with chromium() as browser:
        human = seated_black(browser, human_url, errors)
        spectator = new_page(browser, errors)
        spectator.goto(spectator_url)
        expect(spectator.locator("#role")).to_have_text("spectator")
        expect(spectator.locator("#player-top")).to_contain_text("Human (black)")
        seen = {"human": _look(human), "spectator": _look(spectator), "errors": errors}
        ARTIFACTS.mkdir(exist_ok=True)
        spectator.screenshot(path=str(ARTIFACTS / "chess-spectator.png"), full_page=True)
    return seen


async def test_a_spectator_sees_white_below_when_the_human_plays_black(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "watched")
            seen = await trio.to_thread.run_sync(
                human_black_and_a_spectator, table["humanUrl"], table["spectatorUrl"]
            )
    assert seen["errors"] == []
    human, spectator = seen["human"], seen["spectator"]
    assert human["corners"] == ["h1", "a8"]  # the human's own side, Black, below
    assert human["ranks"] == "12345678"
    assert human["files"] == "hgfedcba"
    assert human["bottom"].startswith("You (black)")
    assert spectator["corners"] == ["a8", "h1"]
    assert spectator["ranks"] == "87654321"
    assert spectator["files"] == "abcdefgh"
    assert spectator["top"].startswith("Human (black)")
    assert spectator["bottom"].startswith("Agent (white)")
