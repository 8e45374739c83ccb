"""In a real browser: the chamber's listing pages fit the screen whatever a product is called.

A chamber server on a loopback socket (`pages_http`, in this Trio run) seals a card for a
product of 79 unbroken letters (the longest a product id may be); Debian's Chromium opens
the pages that name it (the board, the board row's cards, the day's listing, the card) at
390 px (a phone) and 1280 px, and none may scroll sideways: a heading breaks as a table cell
does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio
from page_screens import BROWSER, CHROMIUM

from agora.runtime.clock import FakeWall

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chamber"))
from chamber_agent import START
from pages_http import open_pages

pytestmark = BROWSER
sync_api = pytest.importorskip("playwright.sync_api")
WIDTHS = (390, 1280)
PRODUCT = "p" * 79
DAY = START.date().isoformat()


def _widths(base: str, paths: list[str]) -> dict[tuple[str, int], int]:
    seen: dict[tuple[str, int], int] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            for width in WIDTHS:
                tab = browser.new_context(viewport={"width": width, "height": 800}).new_page()
                tab.set_default_timeout(15_000)
                for path in paths:
                    tab.goto(base + path)
                    seen[path, width] = tab.evaluate("document.documentElement.scrollWidth")
        finally:
            browser.close()
    return seen


async def test_a_79_letter_product_scrolls_no_page_sideways() -> None:
    wall = FakeWall(START)
    with trio.fail_after(120):
        async with open_pages(wall) as pages:
            card_id = (await pages.card(product=PRODUCT))["card_id"]
            row = f"suite=chambre-chrono-v0&product={PRODUCT}&from={DAY}&to={DAY}"
            paths = ["/board", f"/board/cards?{row}", f"/cards?date={DAY}", f"/cards/{card_id}"]
            seen = await trio.to_thread.run_sync(_widths, pages.url, paths)
    too_wide = {key: px for key, px in seen.items() if px > key[1]}
    assert too_wide == {}
