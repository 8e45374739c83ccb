"""End to end in a real browser: the chess page leads to every earlier game's PGN.

``agora serve`` runs in a subprocess and the human's page in headless Chromium (a worker
thread; `chess_browser`). The page links the last five earlier games by name; the older
ones, still served at ``/play/<table>/pgn?game=N``, must not vanish without a hint: the
page says how many there are ("and 2 older") and lists them when asked.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, live_page, sync_api
from chess_page_http import http_json, new_table
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]


def earlier_games(url: str) -> dict[str, Any]:
    """Read the earlier games' line, open its older games, read their links."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = live_page(browser, url, errors)
        box = page.locator("#earlier-games")
        expect(box).to_be_visible()
        seen["shown"] = box.locator(":scope > a").all_text_contents()
        seen["summary"] = box.locator("summary").text_content()
        seen["hidden_before"] = not box.locator("details a").first.is_visible()
        box.locator("summary").click()
        older = box.locator("details a")
        expect(older.first).to_be_visible()
        seen["older"] = older.all_text_contents()
        seen["older_hrefs"] = [a.get_attribute("href") for a in older.all()]
        seen["errors"] = errors
    return seen


async def test_the_page_says_how_many_older_games_there_are_and_links_them(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "many")
            token = {"token": table["token"]}
            for _ in range(7):  # games 1 to 7 abandoned: this is game 8
                side = {**token, "agentColor": "black"}
                status, _body = await http_json("POST", server.play_url("many", "side"), side)
                assert status == 200
                status, _body = await http_json("POST", server.play_url("many", "new-game"), token)
                assert status == 200
            seen = await trio.to_thread.run_sync(earlier_games, table["humanUrl"])
    assert seen["shown"] == ["game 7", "game 6", "game 5", "game 4", "game 3"]
    assert seen["summary"] == "and 2 older"
    assert seen["hidden_before"]
    assert seen["older"] == ["game 2", "game 1"]
    assert [h.rsplit("/", 1)[1] for h in seen["older_hrefs"]] == ["pgn?game=2", "pgn?game=1"]
    assert seen["errors"] == []
