"""End to end in a real browser: the chess page's layout on a phone.

``agora serve`` runs in a subprocess; two tables' human pages open in headless Chromium (a
worker thread; `chess_browser`) on a 390x844 phone screen, one seated as White and one as
Black. Below the board, the "Moves" heading follows the buttons without a gap of empty
screen. (The board itself, its pieces and coordinates, on a phone and on a desktop:
`test_chess_browser_layout`.)
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
#: From the bottom of the buttons to the top of the "Moves" heading.
_GAP = """() => document.querySelector("aside h2").getBoundingClientRect().top
  - document.querySelector("#controls .buttons").getBoundingClientRect().bottom"""


def _layout(page: Any) -> dict[str, Any]:
    sync_api.expect(page.locator("#controls")).to_be_visible()
    page.evaluate("() => document.fonts.ready")
    return {"gap": page.evaluate(_GAP)}


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


async def test_the_moves_follow_the_buttons_on_a_phone(tmp_path):
    seen = await _phone_layout(tmp_path)
    assert seen["errors"] == []
    for side in ("white", "black"):
        assert 0 <= seen[side]["gap"] <= MAX_GAP_PX, (side, seen[side]["gap"])
