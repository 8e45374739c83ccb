"""End to end in a real browser: the chess page's layout on a phone.

``agora serve`` runs in a subprocess; two tables' human pages open in headless Chromium (a
worker thread; `chess_browser`) on a 390x844 phone screen, one seated as White and one as
Black (the board flips, so other squares carry the coordinates). In the starting position
every labelled square but two holds a piece: no coordinate label's box may overlap its
square's piece picture, and the pictures stay most of their square. Below the board, the
"Moves" heading follows the buttons without a gap of empty screen.
Screenshots: ``test-artifacts/chess-phone-white.png`` and ``-black.png``.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, on_a_phone_at_both_orientations, sync_api
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

#: The most empty screen, in CSS pixels, between the buttons and the "Moves" heading.
MAX_GAP_PX = 40
#: The least share of its square's width a piece picture keeps beside a coordinate.
MIN_PIECE_SHARE = 0.7

#: Each labelled square holding a piece: the labels' boxes and the picture's, and the square's.
_LABELLED = """() => [...document.querySelectorAll("#board .square")]
  .filter((square) => square.querySelector(".coord") && square.querySelector("img"))
  .map((square) => {
    const box = (el) => { const r = el.getBoundingClientRect();
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; };
    return {
      square: square.dataset.square,
      size: box(square),
      labels: [...square.querySelectorAll(".coord")].map(box),
      piece: box(square.querySelector("img")),
    };
  })"""

#: From the bottom of the buttons to the top of the "Moves" heading.
_GAP = """() => document.querySelector("aside h2").getBoundingClientRect().top
  - document.querySelector("#controls .buttons").getBoundingClientRect().bottom"""


def _overlap(one: dict[str, float], two: dict[str, float]) -> bool:
    return (
        one["left"] < two["right"]
        and two["left"] < one["right"]
        and one["top"] < two["bottom"]
        and two["top"] < one["bottom"]
    )


def _layout(page: Any) -> dict[str, Any]:
    sync_api.expect(page.locator("#controls")).to_be_visible()
    page.evaluate("() => document.fonts.ready")
    return {"labelled": page.evaluate(_LABELLED), "gap": page.evaluate(_GAP)}


async def _phone_layout(tmp_path: Any) -> dict[str, Any]:
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            white = await new_table(server.url, "pw")
            black = await new_table(server.url, "pb")
            return await trio.to_thread.run_sync(
                on_a_phone_at_both_orientations,
                white["humanUrl"],
                black["humanUrl"],
                _layout,
                "chess-phone",
            )


async def test_the_coordinates_never_cover_a_piece_on_a_phone(tmp_path):
    seen = await _phone_layout(tmp_path)
    assert seen["errors"] == []
    for side in ("white", "black"):
        labelled = seen[side]["labelled"]
        # The first rank's eight pieces and the left file's three more (rank 2, 7 and 8).
        assert len(labelled) == 11, side
        covered = [
            square["square"]
            for square in labelled
            if any(_overlap(label, square["piece"]) for label in square["labels"])
        ]
        assert covered == [], side
        small = [
            square["square"]
            for square in labelled
            if square["piece"]["right"] - square["piece"]["left"]
            < MIN_PIECE_SHARE * (square["size"]["right"] - square["size"]["left"])
        ]
        assert small == [], side


async def test_the_moves_follow_the_buttons_on_a_phone(tmp_path):
    seen = await _phone_layout(tmp_path)
    assert seen["errors"] == []
    for side in ("white", "black"):
        assert 0 <= seen[side]["gap"] <= MAX_GAP_PX, (side, seen[side]["gap"])
