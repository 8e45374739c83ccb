"""End to end in a real browser: what the chess page's labels say before and after a move.

``agora serve`` runs in a subprocess and a table's human page in headless Chromium (a worker
thread; `chess_browser`). Before sides are chosen the player labels say the sides are open
(not "Black (black)"); with no move yet the move list says so instead of an empty box; the
tab's title says whose turn it is; the agent's moves read as text, not as links.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, live_page, sync_api
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

#: The page's own renderer draws a history of one human and one agent move.
_DRAW_TWO_MOVES = """() => fetch(location.pathname + "/state" + location.search)
  .then((r) => r.json()).then((state) => {
    state.history = ["human", "agent"].map((by, i) => ({
      ply: i + 1, moveNumber: 1, color: i ? "black" : "white", san: i ? "e5" : "e4",
      uci: "e2e4", from: "e2", to: "e4", by, note: null,
    }));
    chessView.render(state, { selected: null, focus: null, dragging: null }, "#");
    const look = (by) => {
      const style = getComputedStyle(document.querySelector(`#moves .san.${by}`));
      return [style.color, style.textDecorationLine, style.cursor];
    };
    return { human: look("human"), agent: look("agent"), text: getComputedStyle(
      document.querySelector("#moves")).color };
  })"""

#: The "no moves yet" line and the move list: shown or not (the line's text when shown).
_NO_MOVES = """() => {
  const shown = (node) => Boolean(node && node.offsetParent !== null);
  const line = document.getElementById("no-moves");
  const list = document.getElementById("moves");
  return { text: shown(line) ? line.textContent : null, list: shown(list) };
}"""


def _players(page: Any) -> list[str | None]:
    return [page.locator(f"#player-{at}").text_content() for at in ("top", "bottom")]


def labels_through_a_first_move(url: str) -> dict[str, Any]:
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = live_page(browser, url, errors)
        seen["players_before"] = _players(page)
        seen["title_before"] = page.title()
        seen["no_moves"] = page.evaluate(_NO_MOVES)
        page.click("#human-white")
        expect(page.locator("#status")).to_have_text("Your move.")
        seen["players_seated"] = _players(page)
        seen["title_your_move"] = page.title()
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#moves li .san")).to_have_count(1)
        seen["title_agent_move"] = page.title()
        seen["after_move"] = page.evaluate(_NO_MOVES)
        seen["styles"] = page.evaluate(_DRAW_TWO_MOVES)
        seen["errors"] = errors
    return seen


async def test_the_labels_say_what_is_so_before_and_after_a_move(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "labels")
            seen = await trio.to_thread.run_sync(labels_through_a_first_move, table["humanUrl"])
    assert seen["errors"] == []
    assert seen["players_before"] == ["Black: not chosen yet", "White: not chosen yet"]
    assert seen["players_seated"] == ["Agent (black)", "You (white)to move"]
    assert seen["title_before"] == "Choose your side — agora chess"
    assert seen["title_your_move"] == "Your move — agora chess"
    assert seen["title_agent_move"] == "The agent's move — agora chess"
    assert seen["no_moves"] == {"text": "No moves yet.", "list": False}
    assert seen["after_move"] == {"text": None, "list": True}
    styles = seen["styles"]
    assert styles["agent"] == styles["human"]  # one text colour, no underline or hand
    assert styles["agent"][0] == styles["text"]
    assert styles["agent"][1:] == ["none", "auto"]
