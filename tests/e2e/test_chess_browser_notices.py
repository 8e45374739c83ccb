"""End to end in a real browser: what the chess page tells the human when things go wrong.

``agora serve`` runs in a subprocess and the human's page in headless Chromium (a worker
thread; `chess_browser`). What the page must say plainly, among others:

- the server went away: a move sent while it is stopped says "The server cannot be reached;
  try again." (not the browser's ``TypeError: Failed to fetch``), and the message goes once
  the server is back on the same port and the page's stream reconnects;
- the agent (the official ``mcp`` SDK) declined the human's draw offer by moving without
  ``(=)``: "The agent declined your draw offer." until the human's next move;
- a move refused because another page of the human's moved first says so, whether the
  refused page's stream was down or live (and showed that move before the refusal came).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from chess_browser import (
    NEEDS_CHROMIUM,
    chromium,
    live_page,
    new_page,
    seated_black,
    seated_white,
    sync_api,
)
from chess_page_http import new_table
from chess_players import beside_a_browser
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

UNREACHABLE = "The server cannot be reached; try again."
DECLINED = "The agent declined your draw offer."


class Portal:
    """The browser thread's way to the test's Trio thread: set an event, wait for one."""

    def __init__(self) -> None:
        self.token = trio.lowlevel.current_trio_token()

    def set(self, event: trio.Event) -> None:
        trio.from_thread.run_sync(event.set, trio_token=self.token)

    def wait(self, event: trio.Event) -> None:
        trio.from_thread.run(event.wait, trio_token=self.token)


def human_moves_while_the_server_is_down(url: str, portal: Portal, steps: dict[str, Any]) -> dict:
    """Choose White, have the server stopped, try f2f3, have it started again, play f2f3."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        portal.set(steps["stop"])
        portal.wait(steps["stopped"])
        expect(page.locator("#live")).to_have_text("reconnecting")
        page.click('[data-square="f2"]')
        page.click('[data-square="f3"]')
        expect(page.locator("#error")).not_to_have_text("")
        seen["down"] = page.locator("#error").text_content()
        portal.set(steps["start"])
        portal.wait(steps["started"])
        expect(page.locator("#live")).to_have_text("live")  # the stream reconnected by itself
        expect(page.locator("#error")).to_have_text("")
        seen["back"] = page.locator("#error").text_content()
        page.click('[data-square="f2"]')
        page.click('[data-square="f3"]')
        expect(page.locator("#moves li")).to_have_count(1)
        seen["errors"] = [e for e in errors if "Failed to load resource" not in e]
    return seen


async def test_a_move_sent_while_the_server_is_down_says_so_and_clears_once_it_is_back(tmp_path):
    steps = {name: trio.Event() for name in ("stop", "stopped", "start", "started", "done")}
    seen: dict[str, Any] = {}

    async def human(url: str, portal: Portal) -> None:
        seen.update(
            await trio.to_thread.run_sync(human_moves_while_the_server_is_down, url, portal, steps)
        )
        steps["done"].set()

    db = tmp_path / "agora.db"
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            async with agora_serve(db) as server:
                nursery.start_soon(human, server.human_url, Portal())
                await steps["stop"].wait()
            steps["stopped"].set()  # SIGTERM'd, and it exited cleanly
            await steps["start"].wait()
            port = server.url.rsplit(":", 1)[1]
            async with agora_serve(db, "--port", port):
                steps["started"].set()
                await steps["done"].wait()
    assert seen["down"] == UNREACHABLE
    assert seen["back"] == ""
    assert seen["errors"] == []


def human_offers_a_draw(url: str, spectator_url: str) -> dict[str, Any]:
    """As White: offer a draw, play e4; the agent answers e5 without ``(=)``; then Nf3."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        page.click("#offer-draw")
        expect(page.locator("#status")).to_have_text("Your move. You offered a draw.")
        spectator = live_page(browser, spectator_url, errors)
        seen["offered"] = spectator.locator("#status").text_content()
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#moves li .san")).to_have_count(2)  # the agent's e5 came
        seen["declined"] = page.locator("#status").text_content()
        expect(spectator.locator("#moves li .san")).to_have_count(2)
        seen["spectator"] = spectator.locator("#status").text_content()
        page.click('[data-square="g1"]')
        page.click('[data-square="f3"]')
        expect(page.locator("#moves li .san")).to_have_count(3)
        seen["after"] = page.locator("#status").text_content()
        seen["errors"] = errors
    return seen


async def test_the_human_is_told_the_agent_declined_their_draw_offer(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "d")
            urls = table["humanUrl"], table["spectatorUrl"]
            async with beside_a_browser(table, human_offers_a_draw, *urls) as (agent, seen):
                played = await agent.play(["e2e4", "e7e5"], {}, stop_after_ply=2)
    assert played["drawOffer"] is None  # the agent's move declined it
    assert seen["offered"] == "The human is to move. The human offers a draw."
    assert seen["declined"] == f"The agent played 1… e5. Your move. {DECLINED}"
    assert seen["spectator"] == (
        "The agent played 1… e5. The human is to move. The agent declined the human's draw offer."
    )
    assert seen["after"] == "The agent is thinking."
    assert seen["errors"] == []


STANDS = "The agent moved before it saw the offer: it still stands."


def human_offers_while_the_agent_thinks(url: str, portal: Portal, steps: dict[str, Any]) -> dict:
    """As White: play e4; once the agent has read its turn, offer a draw; see its e5."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_white(browser, url, errors)
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        expect(page.locator("#moves li .san")).to_have_count(1)
        portal.set(steps["moved"])
        portal.wait(steps["read"])  # the agent's wait_for_turn showed no offer
        page.click("#offer-draw")
        expect(page.locator("#status")).to_have_text("The agent is thinking. You offered a draw.")
        portal.set(steps["offered"])
        expect(page.locator("#moves li .san")).to_have_count(2)  # the agent's e5 came
        seen["stands"] = page.locator("#status").text_content()
        seen["errors"] = errors
    return seen


async def test_an_offer_the_agent_had_not_seen_is_not_told_as_declined(tmp_path):
    """A tester's finding: the human offered while the agent thought; its move, chosen
    before, was told as "The agent declined your draw offer." Now the offer stands."""
    steps = {name: trio.Event() for name in ("moved", "read", "offered")}
    seen: dict[str, Any] = {}
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "u")
            human = human_offers_while_the_agent_thinks
            async with beside_a_browser(table, human, table["humanUrl"], Portal(), steps) as (
                agent,
                seen,
            ):
                await steps["moved"].wait()
                read = await agent.ok("wait_for_turn", {"timeout_ms": 20000})
                steps["read"].set()
                await steps["offered"].wait()
                played = await agent.ok("move_piece", {"from": "e7", "to": "e5"})
    assert (read["statusCode"], read["drawOffer"]) == ("AGENT_TURN", None)
    assert (played["drawOffer"], played["drawDeclined"]) == ("human", False)
    assert seen["stands"] == f"The agent played 1… e5. Your move. You offered a draw. {STANDS}"
    assert seen["errors"] == []


def refused_on_a_stale_page(url: str, table: dict[str, Any], portal: Portal, steps: dict) -> dict:
    """A page that missed the human's other page's c4 (its stream held off) tries d4, is
    refused; then its stream comes back and the agent answers e5."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    play = url.split("?")[0]
    with chromium() as browser:
        page = new_page(browser, errors)
        page.route("**/events?*", lambda route: route.abort())  # no live stream for now
        page.request.post(f"{play}/side", data={"token": table["token"], "agentColor": "black"})
        page.goto(url)
        expect(page.locator("#status")).to_have_text("Your move.")
        # The human's other page (a phone, say) plays c4: this one hears nothing of it.
        page.request.post(f"{play}/move", data={"token": table["token"], "from": "c2", "to": "c4"})
        page.click('[data-square="d2"]')
        page.click('[data-square="d4"]')
        expect(page.locator("#error")).to_contain_text("played first")
        seen["refused"] = page.locator("#error").text_content()
        seen["board"] = page.locator("#moves li .san").all_text_contents()
        page.unroute("**/events?*")
        expect(page.locator("#live")).to_have_text("live")  # the stream reconnected itself
        seen["kept"] = page.locator("#error").text_content()  # the turn has not changed yet
        portal.set(steps["refused"])
        portal.wait(steps["answered"])
        expect(page.locator("#status")).to_have_text("The agent played 1… e5. Your move.")
        seen["after"] = page.locator("#error").text_content()
        seen["errors"] = [e for e in errors if "Failed to load resource" not in e]
    return seen


async def test_a_refusal_about_an_earlier_turn_goes_when_the_turn_changes(tmp_path):
    """A tester's finding: two tabs moved at once; the refused one kept "it is the agent's
    turn (black)." in red beside "Your move." after the agent's reply."""
    steps = {name: trio.Event() for name in ("refused", "answered")}
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "r")
            args = (table["humanUrl"], table, Portal(), steps)
            async with beside_a_browser(table, refused_on_a_stale_page, *args) as (agent, seen):
                await steps["refused"].wait()
                await agent.ok("move_piece", {"from": "e7", "to": "e5"})
                steps["answered"].set()
    assert seen["refused"] == (
        "it is the agent's turn (black). Your move was not played: 1. c4 was played first,"
        " from another page of yours."
    )
    assert seen["board"] == ["c4"]  # the refused page shows the move that was played
    assert seen["kept"] == seen["refused"]
    assert seen["after"] == ""
    assert seen["errors"] == []


def refused_on_a_live_page(url: str) -> dict[str, Any]:
    """Two live pages of the human, the agent's side chosen: B sends c4, held on its way
    while A plays d4 and B's stream shows it; then B's c4 reaches the server, refused."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    held: list[Any] = []
    with chromium() as browser:
        a = seated_white(browser, url, errors)
        b = live_page(browser, url, errors)
        expect(b.locator("#status")).to_have_text("Your move.")
        b.route("**/move", lambda route: held.append(route))  # B's move waits: sent, not arrived
        b.click('[data-square="c2"]')
        b.click('[data-square="c4"]')
        while not held:
            b.wait_for_timeout(20)
        a.click('[data-square="d2"]')
        a.click('[data-square="d4"]')
        expect(b.locator("#moves li .san")).to_have_text(["d4"])  # B's stream brought it
        seen["live"] = b.locator("#live").text_content()
        held[0].continue_()
        expect(b.locator("#error")).to_contain_text("played first")
        seen["refused"] = b.locator("#error").text_content()
        seen["board"] = b.locator("#moves li .san").all_text_contents()
        seen["errors"] = [e for e in errors if "Failed to load resource" not in e]  # the 409
    return seen


async def test_a_move_refused_on_a_live_page_says_the_other_page_moved_first(tmp_path):
    """A tester's finding: with both pages live (the usual case), the refused page's stream
    had shown the other page's move before the refusal came, so the page judged by that
    state and said only "it is the agent's turn (black).", not who moved first."""
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            seen = await trio.to_thread.run_sync(refused_on_a_live_page, server.human_url)
    assert seen["live"] == "live"
    assert seen["refused"] == (
        "it is the agent's turn (black). Your move was not played: 1. d4 was played first,"
        " from another page of yours."
    )
    assert seen["board"] == ["d4"]
    assert seen["errors"] == []


def human_declines_by_moving(url: str, portal: Portal, steps: dict[str, Any]) -> dict:
    """As Black: the agent's 1. d4 offers a draw; the human answers 1... d5."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        page = seated_black(browser, url, errors)
        portal.set(steps["seated"])
        expect(page.locator("#moves li .san")).to_have_count(1)  # the agent's d4 came
        seen["offered"] = page.locator("#status").text_content()
        page.click('[data-square="d7"]')
        page.click('[data-square="d5"]')
        expect(page.locator("#moves li .san")).to_have_count(2)
        seen["declined"] = page.locator("#status").text_content()
        seen["errors"] = errors
    return seen


async def test_the_human_is_told_a_move_declines_the_agents_offer_and_that_it_did(tmp_path):
    """A tester's finding: with the agent's offer open there was no "decline" anywhere, and
    after the human's move nothing confirmed the offer was declined."""
    steps = {"seated": trio.Event()}
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "o")
            args = (table["humanUrl"], Portal(), steps)
            async with beside_a_browser(table, human_declines_by_moving, *args) as (agent, seen):
                await steps["seated"].wait()
                await agent.ok("move_piece", {"from": "d2", "to": "d4", "note": "Draw? (=)"})
    assert seen["offered"] == (
        "The agent played 1. d4. Your move."
        " The agent offers a draw: accept it, or play your move to decline it."
    )
    assert seen["declined"] == "The agent is thinking. You declined the agent's draw offer."
    assert seen["errors"] == []
