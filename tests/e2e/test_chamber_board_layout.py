"""In a real browser: the board's whole table shows on a desktop and on a phone.

The board page's HTML (`board_web`'s, as ``/board`` serves it) with two products, one with a
long claimed name, is laid out in Debian's Chromium at 1200 px and on a 390 px phone. Every
cell of every row, the link to its cards above all, must lie inside the screen and not be
clipped by the table's box (a box that scrolls sideways hides columns without a sign).
"""

from __future__ import annotations

from typing import Any

from page_screens import BROWSER, laid_out, width

from agora.toolsets.chamber.board_web import _board_html
from agora.toolsets.chamber.web import page

pytestmark = BROWSER

#: Each row's cells that are not wholly on screen, or hidden by the box they are in.
HIDDEN = """() => {
  const width = window.innerWidth;
  const out = [];
  for (const row of document.querySelectorAll("table.board tbody tr")) {
    for (const cell of row.querySelectorAll("td")) {
      const r = cell.getBoundingClientRect();
      const box = cell.closest(".wide").getBoundingClientRect();
      if (r.width === 0 || r.left < -1 || r.right > Math.min(width, box.right) + 1) {
        out.push(cell.textContent);
      }
    }
  }
  const link = document.querySelector("table.board a");
  link.scrollIntoView();
  const r = link.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {hidden: out, linkHit: hit === link, pageWidth: document.documentElement.scrollWidth};
}"""


def _row(rank: int, product: str, attempts: int) -> dict[str, Any]:
    return {
        "rank": rank, "product": product, "attempts": attempts, "solved": attempts - 1,
        "success_rate": (attempts - 1) / attempts, "expired": 1, "quarantined": 0,
        "median_actions": 12.5, "median_hints": 1.0,
        "median_wrong_submissions": 0.5, "cards": f"/board/cards?suite=s&product={product}",
    }  # fmt: skip


def _html() -> str:
    body = {
        "from": "2026-11-03",
        "to": "2026-12-02",
        "suites": {
            "chambre-chrono-v0": [
                _row(1, "a-product-name-of-some-length-4.5-preview", 120),
                _row(2, "composer-3", 3),
            ],
            "chambre-atelier-v0": [],
        },
        "entered": "any",
        "still_open": {"chambre-chrono-v0": {"composer-3": 2}, "chambre-atelier-v0": {}},
        "final_after": "2026-12-02T14:00:00Z",
    }
    return page("Chamber board", _board_html(body)).body.decode()


def test_the_whole_board_table_shows_on_a_desktop_and_a_phone() -> None:
    seen = laid_out(_html(), HIDDEN)
    for name, shown in seen.items():
        assert shown["hidden"] == [], name
        assert shown["linkHit"], name
        assert shown["pageWidth"] <= width(name), name
