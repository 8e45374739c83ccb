"""End to end in a real browser: every HTML page agora serves fits a phone's screen.

A phone's browser lays out a page without ``<meta name="viewport" ...>`` 980 px wide and
shrinks it to the screen, so 15 px text shows at about 6 px. ``agora serve --toolsets
chess,chamber`` runs in a subprocess; an agent over WebSocket makes two chamber cards (one
that ranks, one practice); Debian's Chromium, emulating a 375x700 phone (Playwright's
``is_mobile``, in a worker thread), opens each page: a card, the day's card listing, the
board and a board row's cards, the chess pages, and the refusal pages of the chamber, of
chess and of the front end. Each must lay out at the phone's width (nothing wider than the
screen) with its text shown at a readable size.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio
from chamber_server import ENTRY, WsPlayer, ok
from e2e_process import AgoraProcess, clean_env

from agora.client import connect

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--no-proxy-server"]  # fmt: skip
PHONE = {"width": 375, "height": 700}
#: Pixels a page may be wider than the screen (rounding), and the smallest text size shown.
SLACK = 2
MIN_TEXT_PX = 12

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api")

#: What the browser reports of a page: its layout width and the body text as shown.
MEASURE = """() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    textPx: parseFloat(getComputedStyle(document.body).fontSize) * window.visualViewport.scale,
    viewport: !!document.querySelector('meta[name=viewport]'),
})"""


async def _make_cards(url: str) -> dict[str, Any]:
    """A failed card (it ranks on the board) and a practice card, made by a real agent."""
    async with connect(url) as client:
        player = WsPlayer(client)
        await player.list_tools()
        entry = {**ENTRY, "product": "a-product-name-of-some-length-4.5-preview"}
        handle = (await ok(player, "enter_open_challenge", entry))["attempt_handle"]
        await ok(player, "chamber_action", {"challenge_handle": handle, "op": "hint"})
        failed = await ok(player, "seal_attempt", {"challenge_handle": handle})
        practice = {**ENTRY, "seed": "phone-room"}
        handle = (await ok(player, "enter_open_challenge", practice))["attempt_handle"]
        await ok(player, "seal_attempt", {"challenge_handle": handle})
        return failed


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=15) as response:
        return json.load(response)


def _measure(base: str, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Each path as the phone shows it: its status and `MEASURE`'s figures."""
    seen: dict[str, dict[str, Any]] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS
        )
        try:
            context = browser.new_context(
                viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2
            )
            page = context.new_page()
            page.set_default_timeout(15_000)
            for path in paths:
                response = page.goto(f"{base}{path}")
                assert response is not None
                seen[path] = {"status": response.status, **page.evaluate(MEASURE)}
        finally:
            browser.close()
    return seen


async def test_every_html_page_fits_a_phone_screen(tmp_path: Path) -> None:
    config = tmp_path / "agora.toml"
    config.write_text("[options.chamber]\nroom_pool_size = 4\n")
    server = AgoraProcess(
        "--db", str(tmp_path / "agora.db"), "--toolsets", "chess,chamber",
        "--config", str(config), env=clean_env(),
    )  # fmt: skip
    with server:
        with trio.fail_after(120):
            card = await _make_cards(f"{server.url}/mcp/chamber")
            today = dt.datetime.now(dt.UTC).date().isoformat()
            board = await trio.to_thread.run_sync(_json, f"{server.url}/board")
            (row,) = [row for rows in board["suites"].values() for row in rows]
            pages = {
                f"/cards/{card['card_id']}": 200,
                f"/cards?date={today}&format=html": 200,
                "/board": 200,
                row["cards"]: 200,
                "/play": 200,
                "/play/default": 200,
                "/cards/no-such-card?format=html": 404,
                "/board?from=yesterday": 400,
                "/play/no-such-table": 404,
                "/no-such-page": 404,
            }
            seen = await trio.to_thread.run_sync(_measure, server.url, list(pages))
    unfit = {
        path: shown
        for path, shown in seen.items()
        if shown["status"] != pages[path]
        or not shown["viewport"]
        or max(shown["innerWidth"], shown["scrollWidth"]) > PHONE["width"] + SLACK
        or shown["textPx"] < MIN_TEXT_PX
    }
    assert unfit == {}, json.dumps(unfit, indent=1)
