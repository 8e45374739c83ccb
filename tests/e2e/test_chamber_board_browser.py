"""End to end in a real browser: the public chamber board, from cards made by real agents.

``agora serve --toolsets chamber`` runs in a subprocess; agents over WebSocket solve one room,
fail another and replay a chosen seed; Debian's Chromium (Playwright's sync API, in a worker
thread) opens ``/board``, reads the ranked rows, follows a row's link to its cards and a card's
link to its page. Practice cards never rank. Screenshot: ``test-artifacts/chamber-board.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from chamber_server import ENTRY, ChamberServer, Play, WsPlayer, ok

from agora.client import connect

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--no-proxy-server"]  # fmt: skip

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api")


async def _make_cards(url: str) -> dict[str, Any]:
    async with connect(url) as client:
        player = WsPlayer(client)
        await player.list_tools()
        made: dict[str, Any] = {}
        entered = await ok(player, "enter_open_challenge", {**ENTRY, "product": "gpt-5.6-sol"})
        handle = entered["attempt_handle"]
        await Play(player, handle).run()
        made["solved"] = await ok(player, "seal_attempt", {"challenge_handle": handle})
        entered = await ok(player, "enter_open_challenge", {**ENTRY, "product": "composer-3"})
        handle = entered["attempt_handle"]
        await ok(player, "chamber_action", {"challenge_handle": handle, "op": "hint"})
        made["failed"] = await ok(player, "seal_attempt", {"challenge_handle": handle})
        practice = {**ENTRY, "product": "cheater-1", "seed": "replayed-room"}
        handle = (await ok(player, "enter_open_challenge", practice))["attempt_handle"]
        made["practice"] = await ok(player, "seal_attempt", {"challenge_handle": handle})
        return made


def _browse(base: str, errors: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 700})
            page.set_default_timeout(15_000)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/board")
            seen["title"] = page.title()
            seen["suites"] = page.locator("h2").all_text_contents()
            rows = page.locator("table.board tr")
            seen["rows"] = [
                rows.nth(i).locator("td").all_text_contents() for i in range(1, rows.count())
            ]
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "chamber-board.png"), full_page=True)
            page.get_by_role("link", name="1 card").first.click()
            page.wait_for_url("**/board/cards?**")
            seen["cards_page"] = page.locator("li").all_text_contents()
            page.locator("li a").first.click()
            page.wait_for_url("**/cards/card-*")
            seen["card_page"] = page.locator("h1").text_content()
        finally:
            browser.close()
    return seen


async def test_the_board_in_chromium_ranks_products_and_links_to_their_cards(
    tmp_path: Path,
) -> None:
    server = ChamberServer(tmp_path)
    server.start()
    try:
        with trio.fail_after(120):
            made = await _make_cards(server.mcp_url)
            errors: list[str] = []
            seen = await trio.to_thread.run_sync(_browse, server.url, errors)
        await server.stop()
    finally:
        server.ensure_stopped()
    assert errors == []
    assert seen["title"].startswith("Chamber board")
    assert seen["suites"] == ["chambre-chrono-v0", "chambre-atelier-v0"]
    solved, failed = made["solved"]["card"], made["failed"]["card"]
    assert failed["hints_used"] == failed["actions_used"] == 1
    assert seen["rows"] == [
        [
            "1",
            "gpt-5.6-sol",
            "1",
            "1",
            "100%",
            "0",
            "0",
            str(solved["actions_used"]),
            "0",
            "0",
            "1 card",
        ],
        # no solved attempt: no median of solved attempts' actions ("none")
        ["2", "composer-3", "1", "0", "0%", "0", "0", "none", "1", "0", "1 card"],
    ]
    assert len(seen["cards_page"]) == 1
    assert seen["cards_page"][0].startswith(made["solved"]["card_id"])
    assert made["solved"]["card_id"] in seen["card_page"]
    assert all("cheater-1" not in " ".join(row) for row in seen["rows"])
