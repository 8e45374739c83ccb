"""End to end in a real browser: the human promotes a pawn, by keyboard and by click.

``agora serve`` runs in a subprocess, the human's page in headless Chromium (a worker thread;
`chess_browser`) and the agent is the official ``mcp`` SDK over Streamable HTTP. White's a-pawn
walks to b7 against the agent's scripted replies; then the promotion chooser must wait for the
human's choice. The Space that picked the target square must not also press the chooser's
first button (a button clicks on Space's key-up, and the chooser takes the focus on its
key-down), and Escape must drop the chooser with nothing played.
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

#: White's pawn takes its way to b7 while Black moves its bishop and knight off b8's path.
SCRIPT = ["a2a4", "b7b5", "a4b5", "a7a6", "b5a6", "c8b7", "a6b7", "b8c6"]
#: White's moves before the promotion, played by keyboard (pick, then target).
WHITE = [(SCRIPT[i][:2], SCRIPT[i][2:4]) for i in range(0, len(SCRIPT), 2)]


def _key_move(page: Any, source: str, target: str, key: str) -> None:
    page.focus(f'[data-square="{source}"]')
    page.keyboard.press(key)
    page.focus(f'[data-square="{target}"]')
    page.keyboard.press(key)


def human_promotes(url: str) -> dict[str, Any]:
    """As White: four moves by keyboard, then b7-b8 with Space, the chooser, the knight."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        sans = page.locator("#moves li .san")
        for n, (source, target) in enumerate(WHITE):
            _key_move(page, source, target, "Enter" if n % 2 else "Space")
            expect(sans).to_have_count(2 * n + 2)  # the agent's reply came too
        chooser = page.locator("#promotion")
        _key_move(page, "b7", "b8", "Space")
        expect(chooser).to_be_visible()
        page.wait_for_timeout(300)  # a click the key-up made would have landed by now
        seen["after_space"] = {"chooser": chooser.is_visible(), "moves": sans.count()}
        seen["chooser_focus"] = page.evaluate(
            "() => document.activeElement.dataset.promotion || null"
        )
        page.keyboard.press("Escape")
        expect(chooser).to_be_hidden()
        seen["after_escape"] = {"moves": sans.count(), "focus": page.evaluate(
            "() => document.activeElement.dataset.square || null"
        )}  # fmt: skip
        # Picking another piece while the chooser is open drops it: no stale promotion
        # is played afterwards.
        page.click('[data-square="b7"]')
        page.click('[data-square="b8"]')
        expect(chooser).to_be_visible()
        page.click('[data-square="g1"]')
        expect(chooser).to_be_hidden()
        seen["after_other_pick"] = {"moves": sans.count(), "selected": page.evaluate(
            "() => document.querySelector('.square.selected').dataset.square"
        )}  # fmt: skip
        _key_move(page, "b7", "b8", "Enter")
        expect(chooser).to_be_visible()
        page.click('#promotion [data-promotion="n"]')
        expect(sans).to_have_count(9)
        seen["moves"] = sans.all_text_contents()
        seen["errors"] = errors
    return seen


async def test_the_human_chooses_the_piece_a_pawn_promotes_to(tmp_path):
    with trio.fail_after(90):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "q")
            async with beside_a_browser(table, human_promotes, table["humanUrl"]) as (agent, seen):
                await agent.play(SCRIPT, {}, stop_after_ply=len(SCRIPT))
                reply = await agent.ok("wait_for_turn", {"timeout_ms": 30_000})

    assert seen["errors"] == []
    assert seen["after_space"] == {"chooser": True, "moves": len(SCRIPT)}
    assert seen["chooser_focus"] == "q"
    assert seen["after_escape"] == {"moves": len(SCRIPT), "focus": "b8"}
    assert seen["after_other_pick"] == {"moves": len(SCRIPT), "selected": "g1"}
    assert seen["moves"][-1] == "b8=N"
    assert reply["lastMove"]["uci"] == "b7b8n"
