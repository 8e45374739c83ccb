"""The human's page: its HTML, scripts and assets, served through the toolset's routes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from page_routes import http

from agora.toolsets.chess import page, toolset
from agora.toolsets.chess.snapshot import Snapshot
from agora.toolsets.chess.terms import NOTE_MAX_CHARS
from agora.toolsets.chess.web import ASSETS, ROUTES
from agora.web.http import Request

PUBLIC_URL = "http://127.0.0.1:8765"
STATIC = Path(__file__).resolve().parents[2] / "src" / "agora" / "toolsets" / "chess" / "static"


def test_the_toolset_registers_the_page_routes():
    chess_toolset = toolset()
    assert chess_toolset.endpoint_param == "table"
    assert set(chess_toolset.handlers) == {"join_game", "get_board", "move_piece", "wait_for_turn"}
    assert chess_toolset.routes == ROUTES


async def test_the_page_is_served_with_a_strict_content_security_policy(table):
    response = await http(table.runtime, "GET", "/play/default", query={"token": table.token})
    assert response.status == 200
    assert response.content_type.startswith("text/html")
    headers = dict(response.headers)
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "no-referrer"
    scripts = re.findall(rb'<script src="/play/static/([^"]+)" defer></script>', response.body)
    assert scripts == [b"view.js", b"moves.js", b"play.js", b"tables.js"]  # run in this order
    assert table.token.encode() not in response.body
    missing = await http(table.runtime, "GET", "/play/nowhere")
    assert missing.status == 404
    bad = await http(table.runtime, "GET", "/play/..%2F")
    assert bad.status == 404


async def test_assets_are_served_locally(table):
    for name, kind in (
        ("view.js", "text/javascript"),
        ("moves.js", "text/javascript"),
        ("play.js", "text/javascript"),
        ("tables.js", "text/javascript"),
        ("play.css", "text/css"),
        ("wK.svg", "image/svg+xml"),
        ("bN.svg", "image/svg+xml"),
    ):
        response = await http(table.runtime, "GET", f"/play/static/{name}")
        assert response.status == 200, name
        assert response.content_type.startswith(kind)
        assert dict(response.headers)["Cache-Control"] == "no-cache", name
    assert (await http(table.runtime, "GET", "/play/static/secret.txt")).status == 404
    html = (STATIC / "play.html").read_text()
    assert "http://" not in html
    assert "https://" not in html


def test_the_page_board_names_each_piece_by_its_image():
    fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    snap = Snapshot("t", 1, 1, fen, "side_choice", None, (), None, None, False, "agent")
    first = page.page_state(snap, human=False, public_url=PUBLIC_URL)
    again = page.page_state(snap, human=False, public_url=PUBLIC_URL)  # from the FEN cache
    assert again.board == first.board
    assert len(first.board) == 32
    assert (first.board["f3"], first.board["e5"], first.board["e8"]) == ("wN", "bP", "bK")
    assert "g1" not in first.board
    assert list(first.board) == sorted(first.board, key=lambda sq: (sq[1], sq[0]))
    assert all(f"{code}.svg" in ASSETS for code in first.board.values())


def test_the_page_never_inserts_server_text_as_html():
    scripts = sorted(STATIC.glob("*.js"))
    assert {s.name for s in scripts} == {"view.js", "moves.js", "play.js", "tables.js"}
    for script in scripts:
        text = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, (script.name, sink)


async def test_the_play_page_named_by_the_unknown_table_error_exists(table):
    missing = await http(table.runtime, "GET", "/play/nowhere/state")
    assert "/play page" in json.loads(missing.body)["error"]
    for path in ("/play", "/play/"):
        response = await http(table.runtime, "GET", path)
        assert response.status == 200, path
        assert response.content_type.startswith("text/html")
        assert "script-src 'self'" in dict(response.headers)["Content-Security-Policy"]
        assert b'id="create-table"' in response.body
        assert b'<script src="/play/static/tables.js"' in response.body
        assert table.token.encode() not in response.body
    script = await http(table.runtime, "GET", "/play/static/tables.js")
    assert script.status == 200
    assert b"${base}/play/tables" in script.body


async def test_a_browser_gets_an_unknown_table_as_an_html_page(table):
    from agora.toolsets.chess.web import play_page

    browser = "text/html,application/xhtml+xml,*/*;q=0.8"
    for name in ("x", "..%2F"):
        request = Request("GET", f"/play/{name}", {}, {"accept": browser}, b"", {"table": name})
        response = await play_page(request, table.runtime)
        assert response.status == 404
        assert response.content_type.startswith("text/html")
        assert b"/play" in response.body
        assert "default-src 'none'" in dict(response.headers)["Content-Security-Policy"]
    api_response = await http(table.runtime, "GET", "/play/x")
    assert api_response.content_type.startswith("application/json")


def test_the_note_box_counts_characters_as_the_server_does():
    """A tester's finding: the note box's maxlength counted UTF-16 units (80 emoji) while
    the server takes 160 code points; the page's script cuts at the server's limit, read
    from the box's data-max-chars."""
    html = (STATIC / "play.html").read_text()
    box = re.search(r"<input id=\"note\"[^>]*>", html)
    assert box is not None
    assert "maxlength" not in box.group(0)
    assert f'data-max-chars="{NOTE_MAX_CHARS}"' in box.group(0)
    assert "Array.from(box.value)" in (STATIC / "play.js").read_text()


def test_the_readme_quotes_the_presence_words_the_page_uses():
    """A tester's finding: README said the page shows "The agent is thinking." for an agent
    at the table, but the presence line reads "An agent has joined this table." (the status
    says the former on the agent's turn only). Every whole sentence README quotes there is
    one the page writes."""
    readme = (STATIC.parents[4] / "README.md").read_text()
    section = readme.split("- **Agent presence.**", 1)[1].split("\n\n", 1)[0]
    quoted = [q for q in re.findall(r'"([^"]+)"', " ".join(section.split())) if q[0] != "."]
    assert "An agent has joined this table." in quoted
    page_words = (STATIC / "view.js").read_text() + Path(page.__file__).read_text()
    assert [q for q in quoted if q not in page_words] == []
