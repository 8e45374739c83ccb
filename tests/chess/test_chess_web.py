"""The human's page and its JSON/SSE API, called through the toolset's routes."""

from __future__ import annotations

import io
import json
import re
from contextlib import aclosing
from pathlib import Path

import chess.pgn
import trio

from agora.toolsets.chess import page, toolset
from agora.toolsets.chess.commands import Tokens
from agora.toolsets.chess.table import Snapshot
from agora.toolsets.chess.web import ASSETS, ROUTES
from agora.web.http import EventStream, Request, Response

PUBLIC_URL = "http://127.0.0.1:8765"
STATIC = Path(__file__).resolve().parents[2] / "src" / "agora" / "toolsets" / "chess" / "static"


async def http(runtime, method, path, body=None, query=None) -> Response | EventStream:
    for route in ROUTES:
        params = route.match(method, path)
        if params is not None:
            raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body else b""
            request = Request(method, path, query or {}, {}, raw, params)
            return await route.handler(request, runtime)
    raise AssertionError(f"no route for {method} {path}")


async def api(runtime, method, path, body=None, query=None) -> tuple[int, dict]:
    response = await http(runtime, method, path, body, query)
    assert isinstance(response, Response)
    assert response.content_type.startswith("application/json")
    return response.status, json.loads(response.body)


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


async def test_a_spectator_sees_the_table_but_no_moves(table):
    await table.choose("black")
    status, spectator = await api(table.runtime, "GET", "/play/default/state")
    assert status == 200
    assert spectator["role"] == "spectator"
    assert spectator["legalMoves"] == []
    assert spectator["status"] == "The human is to move."
    status, human = await api(
        table.runtime, "GET", "/play/default/state", query={"token": table.token}
    )
    assert human["role"] == "human"
    assert human["humanColor"] == "white"
    assert human["status"] == "Your move."
    assert len(human["legalMoves"]) == 20
    assert human["board"]["e1"] == "wK"
    agent = table.agent_token
    assert human["agentToken"] == agent
    assert human["agent"] == {
        "mcpHttp": f"{PUBLIC_URL}/mcp/chess/default?token={agent}",
        "mcpWebsocket": f"ws://127.0.0.1:8765/mcp/chess/default?token={agent}",
    }
    assert spectator["agentToken"] is None
    assert spectator["agent"] == {
        "mcpHttp": f"{PUBLIC_URL}/mcp/chess/default",
        "mcpWebsocket": "ws://127.0.0.1:8765/mcp/chess/default",
    }
    assert agent not in json.dumps(spectator)


async def test_without_the_token_nobody_chooses_sides_or_moves(table):
    rt = table.runtime
    assert await api(
        rt, "POST", "/play/default/side", {"token": "nope", "agentColor": "white"}
    ) == (
        403,
        {"error": "only the human's page, with its token, may do this.", "code": "FORBIDDEN"},
    )
    status, body = await api(rt, "POST", "/play/default/side", {"agentColor": "white"})
    assert (status, body["code"]) == (400, "BAD_REQUEST")
    await table.choose("black")
    status, body = await api(
        rt, "POST", "/play/default/move", {"token": "", "from": "e2", "to": "e4"}
    )
    assert (status, body["code"]) == (403, "FORBIDDEN")
    for action in ("resign", "offer-draw", "accept-draw", "new-game"):
        status, body = await api(rt, "POST", f"/play/default/{action}", {"token": "x"})
        assert (status, body["code"]) == (403, "FORBIDDEN"), action
    assert (await table.look()).moves == ()


async def test_the_human_plays_a_game_through_the_api(table):
    rt, token = table.runtime, table.token
    status, state = await api(
        rt, "POST", "/play/default/side", {"token": token, "agentColor": "black"}
    )
    assert (status, state["phase"], state["humanColor"]) == (200, "human_turn", "white")
    status, body = await api(
        rt, "POST", "/play/default/move", {"token": token, "from": "e2", "to": "e5"}
    )
    assert (status, body["code"]) == (409, "ILLEGAL_MOVE")
    status, body = await api(
        rt, "POST", "/play/default/move", {"token": token, "from": "e2", "to": "x"}
    )
    assert (status, body["code"]) == (400, "MALFORMED_SQUARE")
    status, state = await api(
        rt, "POST", "/play/default/move", {"token": token, "from": "e2", "to": "e4", "note": "hi"}
    )
    assert status == 200
    assert state["phase"] == "agent_turn"
    assert state["status"] == "Waiting for the agent to connect."
    assert state["lastMove"]["note"] == "hi"
    status, body = await api(
        rt, "POST", "/play/default/move", {"token": token, "from": "d2", "to": "d4"}
    )
    assert (status, body["code"]) == (409, "NOT_YOUR_TURN")
    await table.tool("join_game")
    await table.tool(
        "move_piece", **{"from": "e7", "to": "e5", "note": "<script>alert(1)</script>"}
    )
    status, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert state["history"][-1]["note"] == "<script>alert(1)</script>"
    status, state = await api(rt, "POST", "/play/default/resign", {"token": token})
    assert state["result"]["reason"] == "resignation"
    assert state["result"]["winnerRole"] == "agent"
    status, body = await api(rt, "POST", "/play/default/resign", {"token": token})
    assert (status, body["code"]) == (409, "GAME_OVER")
    status, state = await api(rt, "POST", "/play/default/new-game", {"token": token})
    assert (state["gameNumber"], state["phase"]) == (2, "side_choice")


async def test_the_human_promotes_by_choice(table):
    rt, token = table.runtime, table.token
    await table.choose("black")
    await table.play(["a2a4", "b7b5", "a4b5", "a7a6", "b5a6", "c8b7", "a6b7", "e7e6"])
    _, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    choices = [m["promotion"] for m in state["legalMoves"] if m["from"] == "b7" and m["to"] == "a8"]
    assert sorted(choices) == ["b", "n", "q", "r"]
    _status, state = await api(
        rt,
        "POST",
        "/play/default/move",
        {"token": token, "from": "b7", "to": "a8", "promotion": "n"},
    )
    assert state["board"]["a8"] == "wN"


async def test_draw_offers_both_ways(table):
    rt, token = table.runtime, table.token
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": "a draw? (=)"})
    status, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert state["drawOffer"] == "agent"
    status, state = await api(rt, "POST", "/play/default/accept-draw", {"token": token})
    assert state["result"]["reason"] == "agreement"
    await api(rt, "POST", "/play/default/new-game", {"token": token})
    await table.choose("white")
    status, body = await api(rt, "POST", "/play/default/accept-draw", {"token": token})
    assert (status, body["code"]) == (409, "NO_DRAW_OFFER")
    status, state = await api(rt, "POST", "/play/default/offer-draw", {"token": token})
    assert state["drawOffer"] == "human"


async def test_creating_a_table_returns_its_urls_and_the_agent_endpoint(table, make_table):
    rt = table.runtime
    status, made = await api(rt, "POST", "/play/tables", {"name": "club-1"})
    assert status == 201
    assert made["table"] == "club-1"
    assert made["humanUrl"] == f"{PUBLIC_URL}/play/club-1?token={made['token']}"
    assert made["spectatorUrl"] == f"{PUBLIC_URL}/play/club-1"
    assert made["agent"]["mcpHttp"] == f"{PUBLIC_URL}/mcp/chess/club-1?token={made['agentToken']}"
    status, body = await api(rt, "POST", "/play/tables", {"name": "club-1"})
    assert (status, body["code"]) == (409, "TABLE_EXISTS")
    for bad in ("static", "Upper", "a/b", "", "x" * 41):
        status, body = await api(rt, "POST", "/play/tables", {"name": bad})
        assert status == 400, bad
        assert body["code"] == "BAD_REQUEST", bad
    status, anon = await api(rt, "POST", "/play/tables", None)
    assert status == 201
    assert anon["table"].startswith("t-")
    club = make_table(rt, "club-1", Tokens(made["token"], made["agentToken"]))
    assert (await club.tool("join_game"))["table"] == "club-1"
    await club.choose("white")
    assert (await table.look()).phase == "side_choice"


async def test_the_token_never_reaches_the_agent(table):
    await table.choose("white")
    for name in ("join_game", "get_board", "wait_for_turn"):
        text = json.dumps(await table.tool(name))
        assert table.token not in text
        assert table.agent_token not in text


async def test_a_wrong_token_in_the_link_is_refused_not_a_silent_spectator(table):
    rt = table.runtime
    for path in ("/play/default/state", "/play/default/events"):
        status, body = await api(rt, "GET", path, query={"token": "mistyped"})
        assert (status, body["code"]) == (403, "FORBIDDEN")
        assert "not this table's human token" in body["error"]
    status, body = await api(rt, "GET", "/play/default/state", query={"token": table.agent_token})
    assert status == 403


async def test_the_human_replaces_the_agent_token(table):
    rt = table.runtime
    old = table.agent_token
    status, body = await api(rt, "POST", "/play/default/agent-token", {"token": "nope"})
    assert (status, body["code"]) == (403, "FORBIDDEN")
    status, state = await api(rt, "POST", "/play/default/agent-token", {"token": table.token})
    assert status == 200
    assert state["agentToken"] not in (None, old)
    assert state["agent"]["mcpHttp"].endswith(f"?token={state['agentToken']}")
    body = await table.refused("get_board", as_token=old)
    assert (body["code"], body["statusCode"]) == ("AGENT_TOKEN_INVALID", "AGENT_TOKEN_REQUIRED")
    table.agent_token = state["agentToken"]
    assert (await table.tool("get_board"))["seat"] == "agent"


async def test_the_pgn_names_both_players_and_the_result(table):
    await table.choose("black")
    for uci, by in (("f2f3", "h"), ("e7e5", "a"), ("g2g4", "h"), ("d8h4", "a")):
        if by == "h":
            await table.human_move(uci, "hm} {" if uci == "f2f3" else None)
        else:
            await table.tool("move_piece", **{"from": uci[:2], "to": uci[2:], "note": "mate"})
    response = await http(table.runtime, "GET", "/play/default/pgn")
    assert response.status == 200
    assert response.content_type.startswith("application/x-chess-pgn")
    assert 'filename="agora-default-game1.pgn"' in dict(response.headers)["Content-Disposition"]
    text = response.body.decode()
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    assert game.headers["White"] == "Human"
    assert game.headers["Black"] == "Agent"
    assert game.headers["Result"] == "0-1"
    assert game.headers["Termination"] == "checkmate"
    assert game.headers["Site"] == f"{PUBLIC_URL}/play/default"
    assert [m.uci() for m in game.mainline_moves()] == ["f2f3", "e7e5", "g2g4", "d8h4"]
    assert [n.comment for n in game.mainline()][:2] == ["Human: hm) {", "Agent: mate"]
    assert game.end().board().is_checkmate()


async def _next(events, seconds=60):
    with trio.fail_after(seconds):
        return await events.__anext__()


async def test_the_event_stream_pushes_every_change(table, autojump_clock):
    stream = await http(table.runtime, "GET", "/play/default/events", query={"token": table.token})
    assert isinstance(stream, EventStream)
    events = stream.events
    name, data = await _next(events)
    first = json.loads(data)
    assert (name, first["role"], first["phase"]) == ("state", "human", "side_choice")
    await table.choose("white")
    name, data = await _next(events)
    assert (name, json.loads(data)["phase"]) == ("state", "agent_turn")
    await table.tool("move_piece", **{"from": "g1", "to": "f3", "note": "develop"})
    name, data = await _next(events)
    state = json.loads(data)
    assert state["lastMove"]["note"] == "develop"
    assert len(state["legalMoves"]) == 20
    start = trio.current_time()
    assert await _next(events) == ("ping", "{}")
    assert trio.current_time() - start == 20
    table.runtime.begin_shutdown()
    with trio.fail_after(5):
        rest = [item async for item in events]
    assert rest == []


async def test_a_spectator_stream_has_no_moves_to_offer(table, autojump_clock):
    await table.choose("black")
    stream = await http(table.runtime, "GET", "/play/default/events")
    assert isinstance(stream, EventStream)
    async with aclosing(stream.events) as events:
        _name, data = await _next(events)
    assert json.loads(data)["role"] == "spectator"
    assert json.loads(data)["legalMoves"] == []
    missing = await http(table.runtime, "GET", "/play/ghost/events")
    assert isinstance(missing, Response)
    assert missing.status == 404


async def test_every_page_post_refuses_a_nul_character_as_mcp_does(table):
    rt, token = table.runtime, table.token
    nul = "must not contain a NUL character (U+0000): agora stores no text with one"
    await api(rt, "POST", "/play/default/side", {"token": token, "agentColor": "white"})
    await table.tool("move_piece", **{"from": "e2", "to": "e4"})
    move = {"token": token, "from": "e7", "to": "e5", "note": "a\u0000b"}
    status, body = await api(rt, "POST", "/play/default/move", move)
    assert status == 400, body
    assert body["code"] == "BAD_REQUEST"
    assert body["error"] == f"note {nul}"
    status, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert state["lastMove"]["to"] == "e4"
    pgn = await http(rt, "GET", "/play/default/pgn")
    assert b"\x00" not in pgn.body
    for path in ("resign", "offer-draw", "accept-draw", "new-game", "agent-token"):
        status, body = await api(rt, "POST", f"/play/default/{path}", {"token": "x\u0000"})
        assert (status, body["error"]) == (400, f"token {nul}"), path
    status, body = await api(rt, "POST", "/play/tables", {"name": "a\u0000"})
    assert (status, body["error"]) == (400, f"name {nul}")


async def test_a_page_body_with_an_unpaired_surrogate_is_told_so(table):
    body = b'{"token":"%s","from":"e7","to":"e5","note":"a\\ud800"}' % table.token.encode()
    status, refused = await api(table.runtime, "POST", "/play/default/move", body)
    assert status == 400
    assert "\\ud800 (a high surrogate) must be followed by a low surrogate" in refused["error"]


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
    assert b'"/play/tables"' in script.body


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
