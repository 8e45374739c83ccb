"""End to end in a real browser: the human clicks on the page in headless Chromium.

``agora serve`` runs in a subprocess; the page creates nothing itself here, the test makes a
table through ``POST /play/tables`` and opens its human URL in Debian's Chromium, driven by
Playwright's sync API in a worker thread. The human chooses sides and plays by clicking
squares while the official ``mcp`` SDK plays the agent over Streamable HTTP. The page must
show the agent's notes live and as text (a note carrying ``<script>`` runs nothing), and a
screenshot of the final position is saved to ``test-artifacts/chess-page.png``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio
from chess_server import FOOLS_MATE, SdkAgent, agora_serve, http_json

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "chess-page.png"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
PAGE_TIMEOUT_MS = 15_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs: Debian chromium at /usr/bin/chromium (apt-get)"
    ),
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="needs: Playwright for Python (pip install -e '.[test]')"
)

HOSTILE = '<script>window.__agoraPwned = 1</script><img src=x onerror="window.__agoraPwned = 2">'
AGENT_NOTES = {2: f"e5, and this stays text: {HOSTILE}", 4: "Qh4# mates on the diagonal."}
HUMAN_NOTE = "Hello agent, good luck!"


def human_in_chromium(url: str, agent_moves: int) -> dict[str, Any]:
    """Play White's fool's-mate moves by clicking, then read what the page shows.

    Runs in a worker thread: Playwright's sync API has its own event loop.
    """
    expect = sync_api.expect
    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            expect(page.locator("#live")).to_have_text("live")
            expect(page.locator("#role")).to_have_text("you play")
            page.click("#human-white")
            expect(page.locator("#role")).to_have_text("you play white")

            moves = page.locator("#moves li")
            for ply, uci in enumerate(FOOLS_MATE[::2]):
                expect(moves).to_have_count(2 * ply)
                expect(page.locator("#status")).to_have_text("Your move.")
                if ply == 0:
                    page.fill("#note", HUMAN_NOTE)
                page.click(f'[data-square="{uci[:2]}"]')
                target = page.locator(f'[data-square="{uci[2:4]}"]')
                expect(target).to_have_class(re.compile(r"\btarget\b"))
                target.click()  # the agent may answer before the next check: no count here

            expect(moves).to_have_count(agent_moves * 2)
            expect(page.locator("#status")).to_contain_text("checkmate")
            expect(page.locator("#trace li")).to_have_count(agent_moves)
            expect(page.locator("#agent-presence")).to_have_text("An agent has joined this table.")
            ARTIFACT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACT), full_page=True)
            return {
                "trace": page.locator("#trace li").all_text_contents(),
                "moves": moves.all_text_contents(),
                "status": page.locator("#status").text_content(),
                "injected": page.locator("#trace script, #trace img, #moves img").count(),
                "pwned": page.evaluate("() => window.__agoraPwned === undefined ? null : 1"),
                "errors": errors,
            }
        finally:
            browser.close()


async def test_a_human_in_chromium_plays_the_sdk_agent(tmp_path):
    seen: dict[str, Any] = {}

    async def human(url: str) -> None:
        seen.update(await trio.to_thread.run_sync(human_in_chromium, url, 2))

    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            status, table = await http_json(
                "POST", f"{server.url}/play/tables", {"name": "browser"}
            )
            assert status == 201, table
            async with mcp.Client(table["agent"]["mcpHttp"], read_timeout_seconds=30) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(human, table["humanUrl"])
                    final = await agent.play(FOOLS_MATE, AGENT_NOTES)
                board = await agent.ok("get_board")

    assert final["table"] == "browser"
    assert final["result"]["reason"] == "checkmate"
    assert final["result"]["winnerRole"] == "agent"
    assert board["history"] == "1. f3 e5 2. g4 Qh4#"

    assert seen["errors"] == []
    assert seen["injected"] == 0
    assert seen["pwned"] is None
    assert all(t.endswith(AGENT_NOTES[p]) for t, p in zip(seen["trace"], (2, 4), strict=True))
    assert HOSTILE in seen["trace"][0]
    assert "checkmate" in seen["status"]
    assert seen["moves"][0].endswith(HUMAN_NOTE)
    assert ARTIFACT.stat().st_size > 10_000
