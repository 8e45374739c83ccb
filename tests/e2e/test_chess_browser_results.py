"""End to end in a real browser: how the chess page says a game ended.

``agora serve`` runs in a subprocess and the human's page in headless Chromium (a worker
thread; `chess_browser`). The score in the status line ("(0-1)", "(1/2-1/2)") stays on one
line however narrow the page: it used to wrap at its hyphen. An agreed draw says who accepted
whose offer, as a declined one says who declined it.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, seated_white, sync_api
from chess_page_http import new_table
from chess_players import beside_a_browser
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

RESIGNED = "The agent won by resignation: you resigned (0-1)."


def human_resigns(url: str) -> dict[str, Any]:
    """As White, resign at once; read the status line and its score's layout."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        page.click("#resign")  # the confirm is accepted
        expect(page.locator("#status")).to_have_text(RESIGNED)
        score = page.locator("#status .score")
        seen["score"] = score.text_content()
        seen["wrap"] = score.evaluate("e => getComputedStyle(e).whiteSpace")
        seen["errors"] = errors
    return seen


async def test_the_score_in_the_result_never_wraps(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            seen = await trio.to_thread.run_sync(human_resigns, server.human_url)
    assert seen["score"] == "(0-1)"
    assert seen["wrap"] == "nowrap"
    assert seen["errors"] == []


def human_offers_a_draw_the_agent_accepts(url: str) -> dict[str, Any]:
    """As White: offer a draw, play e4; the agent answers e5 with ``(=)``: agreed."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        page.click("#offer-draw")
        expect(page.locator("#status")).to_have_text("Your move. You offered a draw.")
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#status")).to_contain_text("(1/2-1/2)")
        seen["status"] = page.locator("#status").text_content()
        seen["errors"] = errors
    return seen


async def test_the_human_is_told_the_agent_accepted_their_draw_offer(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "agreed")
            human = human_offers_a_draw_the_agent_accepts
            async with beside_a_browser(table, human, table["humanUrl"]) as (agent, seen):
                final = await agent.play(["e2e4", "e7e5"], {2: "agreed (=)"})
    assert final["result"]["reason"] == "agreement"
    assert seen["status"] == (
        "The agent played 1… e5. The agent accepted your draw offer: drawn by agreement (1/2-1/2)."
    )
    assert seen["errors"] == []
