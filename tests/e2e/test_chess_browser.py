"""End to end in a real browser: the human plays on the page in headless Chromium.

``agora serve`` runs in a subprocess; the test makes tables through ``POST /play/tables`` and
opens their human URLs in Debian's Chromium, driven by Playwright's sync API in a worker
thread, while the official ``mcp`` SDK plays the agent over Streamable HTTP with the table's
agent token. The human moves by click and by drag, at both orientations; the page must show
coordinates that flip with the board, the moves in pairs, the agent's notes live and as text
(a note carrying ``<script>`` runs nothing), the agent token with a working copy button, a
new agent token that takes the seat from the old one, a PGN download, and a clear refusal
for a wrong token. Screenshots: ``test-artifacts/chess-page-white.png`` and ``-black.png``.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import chess.pgn
import pytest
import trio
from chess_browser import (
    ARTIFACTS,
    NEEDS_CHROMIUM,
    chromium,
    live_page,
    new_page,
    seated_black,
)
from chess_page_http import new_table
from chess_players import FOOLS_MATE, beside_a_browser
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")
sync_api = pytest.importorskip("playwright.sync_api")

HOSTILE = '<script>window.__agoraPwned = 1</script><img src=x onerror="window.__agoraPwned = 2">'
# The U+202E (right-to-left override) is taken out: it reverses nothing, not even the note.
AGENT_NOTES = {2: f"e5, and this stays text: {HOSTILE}", 4: "Qh4# mates \u202eon the diagonal."}
SHOWN_NOTES = {2: AGENT_NOTES[2], 4: "Qh4# mates on the diagonal."}
HUMAN_NOTE = "Hello agent, good luck!"


def _corners(page: Any) -> list[tuple[str, str]]:
    """The grid's first and last squares with the coordinates drawn beside them: the rank at
    the left of the first column, the file under the last row."""
    squares = page.locator("#board .square")
    ranks = page.locator("#ranks .coord").all_text_contents()
    files = page.locator("#files .coord").all_text_contents()
    out = []
    for index in (0, 56, 63):
        row, column = divmod(index, 8)
        labels = (ranks[row] if column == 0 else "") + (files[column] if row == 7 else "")
        out.append((squares.nth(index).get_attribute("data-square"), labels))
    return out


def human_plays_white(url: str, spectator_url: str, agent_token: str) -> dict[str, Any]:
    """Fool's mate as White: the first move by clicks, the second by drag.

    Runs in a worker thread: Playwright's sync API has its own event loop.
    """
    expect = sync_api.expect
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)
        expect(page.locator("#role")).to_have_text("you: choose a side")
        assert page.locator("#new-game").is_disabled()  # nothing to abandon yet
        expect(page.locator("#agent-token")).to_have_text(agent_token)
        page.click("#copy-agent-token")
        expect(page.locator("#copied")).to_have_text("Copied.")
        copied = page.evaluate("() => navigator.clipboard.readText()")
        page.click("#human-white")
        expect(page.locator("#role")).to_have_text("you play white")
        corners = _corners(page)

        expect(page.locator("#status")).to_have_text("Your move.")
        page.fill("#note", HUMAN_NOTE)
        page.click('[data-square="f2"]')  # by clicks: the piece, then its target
        target = page.locator('[data-square="f3"]')
        expect(target).to_have_class(re.compile(r"\btarget\b"))
        target.click()
        expect(page.locator("#moves li")).to_have_count(1)
        expect(page.locator("#status")).to_have_text("The agent played 1… e5. Your move.")
        page.locator('[data-square="g2"]').drag_to(page.locator('[data-square="g4"]'))

        expect(page.locator("#status")).to_contain_text("checkmate")
        expect(page.locator("#trace li")).to_have_count(3)  # the human's note, then the agent's
        expect(page.locator("#agent-presence")).to_have_text("An agent has joined this table.")
        with page.expect_download() as download:
            page.click("#pgn")
        pgn = Path(download.value.path()).read_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "chess-page-white.png"), full_page=True)
        seen = {
            "copied": copied,
            "corners": corners,
            "pairs": [
                li.locator(".san").all_text_contents() for li in page.locator("#moves li").all()
            ],
            "trace": page.locator("#trace li").all_text_contents(),
            "note_bidi": page.locator("#trace li .note").evaluate_all(
                "els => els.map(e => getComputedStyle(e).unicodeBidi)"
            ),
            "status": page.locator("#status").text_content(),
            "injected": page.locator("#trace script, #trace img, #moves img").count(),
            "pwned": page.evaluate("() => window.__agoraPwned === undefined ? null : 1"),
            "pgn": pgn,
        }

        spectator = new_page(browser, errors)  # no token: watches, never sees the agent's
        spectator.goto(spectator_url)
        expect(spectator.locator("#role")).to_have_text("spectator")
        expect(spectator.locator("#moves li")).to_have_count(2)
        seen["spectator_seat_hidden"] = spectator.locator("#agent-seat").is_hidden()
        seen["spectator_html"] = spectator.content()

        wrong = new_page(browser, errors)
        wrong.goto(spectator_url + "?token=mistyped")
        expect(wrong.locator("#token-problem")).to_be_visible()
        seen["wrong"] = wrong.locator("#token-problem").text_content()
        seen["wrong_status"] = wrong.locator("#status").text_content()
        # Only the refusal shows: no empty board, blank table name or stuck "connecting".
        seen["wrong_visible"] = [
            sel
            for sel in ("main", "#board", "#table-label", "#live", "#mcp-http")
            if wrong.locator(sel).is_visible()
        ]
        seen["errors"] = [e for e in errors if "403" not in e]
        return seen


async def test_a_human_in_chromium_plays_white_by_click_and_drag(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "browser")
            assert table["agent"]["mcpHttp"].endswith(f"?token={table['agentToken']}")
            human = table["humanUrl"], table["spectatorUrl"], table["agentToken"]
            async with beside_a_browser(table, human_plays_white, *human) as (agent, seen):
                final = await agent.play(FOOLS_MATE, AGENT_NOTES)
                board = await agent.ok("get_board")

    assert final["result"]["reason"] == "checkmate"
    assert final["result"]["winnerRole"] == "agent"
    assert board["history"] == "1. f3 e5 2. g4 Qh4#"
    waits = [body for name, body in agent.replies if name == "wait_for_turn"]
    assert waits[-1]["lastMove"] == {"san": "g4", "uci": "g2g4", "by": "human", "note": None}
    assert any(w["lastMove"] and w["lastMove"]["note"] == HUMAN_NOTE for w in waits)

    assert seen["errors"] == []
    assert seen["copied"] == table["agentToken"]
    assert seen["corners"] == [("a8", "8"), ("a1", "1a"), ("h1", "h")]
    assert seen["pairs"] == [["f3", "e5"], ["g4", "Qh4#"]]
    assert seen["injected"] == 0
    assert seen["pwned"] is None
    assert seen["trace"][0] == f"1. f3you:{HUMAN_NOTE}"  # spaced by the style sheet
    agents = seen["trace"][1:]
    assert all(t.endswith(SHOWN_NOTES[p]) for t, p in zip(agents, (2, 4), strict=True))
    assert all("agent:" in t for t in agents)
    assert "\u202e" not in seen["pgn"]
    assert HOSTILE in agents[0]
    assert seen["note_bidi"] == ["isolate", "isolate", "isolate"]
    assert "checkmate" in seen["status"]
    game = chess.pgn.read_game(io.StringIO(seen["pgn"]))
    assert game is not None
    assert (game.headers["White"], game.headers["Black"]) == ("Human", "Agent")
    assert game.headers["Result"] == "0-1"
    assert [m.uci() for m in game.mainline_moves()] == FOOLS_MATE
    assert seen["spectator_seat_hidden"]
    assert table["agentToken"] not in seen["spectator_html"]
    assert "not this table's human token" in seen["wrong"]
    assert "Watch as a spectator" in seen["wrong"]
    assert "Not seated" in seen["wrong_status"]
    assert seen["wrong_visible"] == []
    assert (ARTIFACTS / "chess-page-white.png").stat().st_size > 10_000


def human_plays_black(url: str, old_token: str, replaced: trio.Event, portal: Any) -> dict:
    """Black against the agent's e4: drag e7e5, see the flipped board, replace the token."""
    expect = sync_api.expect
    errors: list[str] = []
    with chromium() as browser:
        page = seated_black(browser, url, errors)
        expect(page.locator("#status")).to_have_text("The agent played 1. e4. Your move.")
        page.locator('[data-square="e7"]').drag_to(page.locator('[data-square="e5"]'))
        expect(page.locator("#moves li .san")).to_have_count(3)
        expect(page.locator("#status")).to_have_text("The agent played 2. Nf3. Your move.")
        corners = _corners(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "chess-page-black.png"), full_page=True)
        page.click("#new-agent-token")
        expect(page.locator("#agent-token")).not_to_have_text(old_token)
        new_token = page.locator("#agent-token").text_content()
        portal(replaced.set)
        return {
            "corners": corners,
            "players": [
                page.locator("#player-top").text_content(),
                page.locator("#player-bottom").text_content(),
            ],
            "new_token": new_token,
            "endpoint": page.locator("#mcp-http").text_content(),
            "errors": errors,
        }


async def test_the_board_flips_for_black_and_a_new_agent_token_takes_the_seat(tmp_path):
    replaced = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def portal(fn: Any) -> None:
        trio.from_thread.run_sync(fn, trio_token=token)

    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "flip")
            human = table["humanUrl"], table["agentToken"], replaced, portal
            script = ["e2e4", "e7e5", "g1f3"]
            async with beside_a_browser(table, human_plays_black, *human) as (agent, seen):
                played = await agent.play(script, {1: "King's pawn."}, stop_after_ply=3)
                await replaced.wait()
                is_error, refused = await agent.call("get_board", {})

    assert played["lastMove"]["uci"] == "g1f3"
    assert is_error
    assert (refused["code"], refused["statusCode"]) == (
        "AGENT_TOKEN_INVALID",
        "AGENT_TOKEN_INVALID",
    )
    assert seen["errors"] == []
    assert seen["corners"] == [("h1", "1"), ("h8", "8h"), ("a8", "a")]
    assert seen["players"] == ["Agent (white)", "You (black)to move"]
    assert seen["new_token"] != table["agentToken"]
    assert seen["endpoint"].endswith(f"?token={seen['new_token']}")
    assert (ARTIFACTS / "chess-page-black.png").stat().st_size > 10_000


def human_creates_a_table_at_play(base: str) -> dict[str, Any]:
    """Open /play, create a table with its button, and follow the link to the table."""
    expect = sync_api.expect
    errors: list[str] = []
    with chromium() as browser:
        page = new_page(browser, errors)
        page.goto(f"{base}/play")
        page.fill("#new-table-name", "no spaces")
        page.press("#new-table-name", "Enter")  # a form: Enter creates, as the button does
        expect(page.locator("#new-table")).to_contain_text("cannot be a table name")
        refused = page.locator("#new-table").text_content()
        page.fill("#new-table-name", "From-Index")  # capitals become lower case
        page.press("#new-table-name", "Enter")
        link = page.locator("#new-table a").first
        expect(link).to_have_text("Play at table from-index")
        expect(page.locator("#new-table")).to_contain_text("Agent endpoint: http")
        # A tester's finding: nothing offered a link to share for others to watch.
        created_watch = page.locator("#new-table a").nth(1).get_attribute("href")
        created_text = page.locator("#new-table").text_content()
        link.click()
        expect(page.locator("#live")).to_have_text("live")
        url, role = page.url, page.locator("#role").text_content()
        share = page.locator("#spectator-link")
        expect(share).to_be_visible()
        watch = (share.get_attribute("href"), share.text_content())
        result_role = page.locator("#new-table").get_attribute("role")
        # A table's own page creates tables with the same script.
        page.fill("#new-table-name", "from-table")
        page.click("#create-table")
        expect(page.locator("#new-table a").first).to_have_text("Play at table from-table")
        expect(page.locator("#new-table")).to_contain_text("/mcp/chess/from-table?token=")
        return {
            "url": url,
            "role": role,
            "refused": refused,
            "result_role": result_role,
            "created_watch": created_watch,
            "created_text": created_text,
            "watch": watch,
            "errors": [e for e in errors if "status of 400" not in e],  # the refused name
        }


async def test_the_play_page_creates_a_table_and_links_to_it(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            seen = await trio.to_thread.run_sync(human_creates_a_table_at_play, server.url)
    assert seen["errors"] == []
    assert "/play/from-index?token=" in seen["url"]
    assert seen["role"] == "you: choose a side"
    assert seen["refused"].startswith("'no spaces' cannot be a table name: use 1 to 40 letters")
    assert seen["result_role"] == "status"  # the table page's result is announced too
    spectator = f"{server.url}/play/from-index"
    assert seen["created_watch"] == spectator
    assert f"Link for others to watch (no seat): {spectator}" in seen["created_text"]
    assert seen["watch"] == (spectator, spectator)  # the human's page: the link to share


def human_resigns_and_starts_again(url: str) -> dict[str, Any]:
    """White resigns at once, starts a new game, and downloads the first from its link."""
    expect = sync_api.expect
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)
        expect(page.locator("#earlier-games")).to_be_hidden()
        page.click("#human-white")
        expect(page.locator("#status")).to_have_text("Your move.")
        page.click("#resign")  # the page's confirm is accepted
        # The page says who resigned, from the human's side.
        expect(page.locator("#status")).to_have_text(
            "The agent won by resignation: you resigned (0-1)."
        )
        resigned_title = page.title()
        with page.expect_download() as current:
            page.click("#pgn")
        page.click("#new-game")
        expect(page.locator("#role")).to_have_text("you: choose a side")
        expect(page.locator("#pgn")).to_be_hidden()  # the new game has nothing to download yet
        links = page.locator("#earlier-games a")
        expect(links).to_have_count(1)
        with page.expect_download() as earlier:
            links.first.click()
        return {
            "label": page.locator("#earlier-games").text_content(),
            "resigned_title": resigned_title,
            "before": Path(current.value.path()).read_text(),
            "earlier": Path(earlier.value.path()).read_text(),
            "errors": errors,
        }


async def test_a_finished_game_stays_downloadable_after_a_new_game(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "again")
            seen = await trio.to_thread.run_sync(human_resigns_and_starts_again, table["humanUrl"])
    assert seen["errors"] == []
    assert seen["label"] == "Earlier games (PGN): game 1"
    assert seen["resigned_title"] == "Game over — agora chess"
    assert seen["earlier"] == seen["before"]
    game = chess.pgn.read_game(io.StringIO(seen["earlier"]))
    assert game is not None
    assert (game.headers["Round"], game.headers["Result"]) == ("1", "0-1")


def human_tries_to_create_a_table(base: str) -> dict[str, Any]:
    """Open /play on a server with principals and press "Create table", with a good name and
    with one that is none (its quote must not reach the shell command shown)."""
    errors: list[str] = []
    said = []
    with chromium() as browser:
        page = new_page(browser, errors)
        page.goto(f"{base}/play")
        for name, shown in (("Mine", '"mine"'), ("bob's table", '"NAME"'), ("", "'{}'")):
            page.fill("#new-table-name", name)
            page.click("#create-table")
            sync_api.expect(page.locator("#new-table")).to_contain_text(shown)
            said.append(page.locator("#new-table").text_content())
        return {"said": said, "errors": errors}


async def test_the_play_page_on_a_server_with_principals_says_how_a_table_is_made(tmp_path):
    # A tester's finding: the button answered "Unauthorized: this action needs a bearer
    # token" every time, and nothing said how a human gets a table on such a server.
    from e2e_config import write_config

    config = write_config(tmp_path)
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db", "--config", str(config)) as server:
            seen = await trio.to_thread.run_sync(human_tries_to_create_a_table, server.url)
    head = (
        "This server creates tables only for its principals, and a browser sends no bearer"
        f" token. Create one with your token: curl -X POST {server.url}/play/tables -H"
        " 'Authorization: Bearer YOUR_TOKEN' -H 'Content-Type: application/json' -d"
    )
    tail = "; or play at the table agora serve printed at start."
    assert seen["said"] == [
        f'{head} \'{{"name": "mine"}}\', then open the humanUrl it answers{tail}',
        f'{head} \'{{"name": "NAME"}}\', then open the humanUrl it answers (NAME: 1 to 40'
        f" letters a-z, digits, _ or -, not static, tables or api){tail}",
        f"{head} '{{}}', then open the humanUrl it answers{tail}",  # the server picks a name
    ]
    assert [e for e in seen["errors"] if "401" not in e] == []
