"""End to end in a real browser: what the chess page says of the agent's presence and token.

``agora serve`` runs in a subprocess, the agent is the official ``mcp`` SDK and the human's
page runs in headless Chromium (a worker thread; `chess_browser`). The server keeps presence
in memory only, so the page must not claim more than it knows: after a restart no agent has
called "since the server started" (not "in the last 2 minutes": one may have called seconds
before), and after "New agent token" none has called "since the agent token was issued".
The "New token issued." confirmation lasts until the next move or game, not for good.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, chromium, live_page, seated_white, sync_api
from chess_players import SdkAgent
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

SINCE_RESTART = "No agent is at this table: none has called since the server started."
SINCE_TOKEN = "No agent is at this table: none has called since the agent token was issued."


def presence_after_restart_and_new_token(url: str) -> dict[str, Any]:
    """Read the presence line, issue a new agent token, read it again."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = live_page(browser, url, errors)
        seen["restarted"] = page.locator("#agent-presence").text_content()
        page.click("#new-agent-token")
        expect(page.locator("#copied")).to_have_text("New token issued.")
        seen["new_token"] = page.locator("#agent-presence").text_content()
        seen["errors"] = errors
    return seen


async def test_the_presence_line_says_no_agent_called_since_the_restart_or_new_token(tmp_path):
    db = tmp_path / "agora.db"
    with trio.fail_after(60):
        async with (
            agora_serve(db) as server,
            mcp.Client(server.mcp_url(), read_timeout_seconds=30) as client,
        ):
            agent = SdkAgent(client)
            await agent.list_tools()
            await agent.ok("get_board")  # the agent calls, just before the restart
        async with agora_serve(db) as server:
            seen = await trio.to_thread.run_sync(
                presence_after_restart_and_new_token, server.human_url
            )
    assert seen["restarted"] == SINCE_RESTART
    assert seen["new_token"] == SINCE_TOKEN
    assert seen["errors"] == []


def token_notice_through_a_move_and_a_new_game(url: str) -> dict[str, Any]:
    """Issue a new token, play e4; issue another, start a new game: read the notice each time."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        notice = page.locator("#copied")
        page.click("#new-agent-token")
        expect(notice).to_have_text("New token issued.")
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#moves li .san")).to_have_count(1)
        seen["after_move"] = notice.text_content()
        page.click("#new-agent-token")
        expect(notice).to_have_text("New token issued.")
        page.click("#new-game")  # the confirm is accepted
        expect(page.locator("#status")).to_have_text("Choose your side.")
        seen["after_new_game"] = notice.text_content()
        seen["errors"] = errors
    return seen


async def test_the_new_token_notice_goes_at_the_next_move_or_game(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            seen = await trio.to_thread.run_sync(
                token_notice_through_a_move_and_a_new_game, server.human_url
            )
    assert seen["after_move"] == ""
    assert seen["after_new_game"] == ""
    assert seen["errors"] == []
