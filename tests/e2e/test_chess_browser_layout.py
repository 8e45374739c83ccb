"""End to end in a real browser: the chess page's move list fits the longest moves.

``agora serve`` runs in a subprocess and its default table's page in headless Chromium (a
worker thread; `chess_browser`). The page draws a history made of the longest SAN moves
(seven characters: a capture that promotes with check, a queen named by its square) through
its own `chessView.render`; no move may overflow its column or run into the next one.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, live_page
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

LONGEST = ["exd8=Q+", "Qa1xb2+", "R1xd8#", "cxd8=Q+", "Nbxd7#", "gxh1=N#"]

DRAW_HISTORY = """(sans) => {
  const state = JSON.parse(JSON.stringify(window.__state));
  state.history = sans.map((san, i) => ({
    ply: i + 1, moveNumber: Math.floor(i / 2) + 1, color: i % 2 ? "black" : "white",
    san, uci: "e2e4", from: "e2", to: "e4", by: i % 2 ? "agent" : "human", note: null,
  }));
  state.lastMove = state.history[state.history.length - 1];
  chessView.render(state, { selected: null, focus: null, dragging: null }, "#");
  const out = [];
  for (const row of document.querySelectorAll("#moves li")) {
    const cells = [...row.children].map((c) => c.getBoundingClientRect());
    const spans = [...row.querySelectorAll(".san")];
    out.push({
      text: spans.map((s) => s.textContent),
      overflow: spans.some((s) => s.scrollWidth > s.clientWidth),
      overlap: cells.some((c, i) => i > 0 && c.left < cells[i - 1].right),
    });
  }
  return out;
}"""


def draw_longest_moves(url: str) -> tuple[list[dict[str, Any]], list[str]]:
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)
        page.evaluate(
            "() => fetch(location.pathname + '/state').then(r => r.json())"
            ".then(s => { window.__state = s; })"
        )
        rows: list[dict[str, Any]] = page.evaluate(DRAW_HISTORY, LONGEST)
    return rows, errors


async def test_the_longest_moves_fit_their_columns(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            url = f"{server.url}/play/default"
            rows, errors = await trio.to_thread.run_sync(draw_longest_moves, url)
    assert [san for row in rows for san in row["text"]] == LONGEST
    assert [row for row in rows if row["overflow"] or row["overlap"]] == []
    assert errors == []
