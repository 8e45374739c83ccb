"""The page's JSON API: what the human (and a spectator) may see and do through it."""

from __future__ import annotations

import json
import sys

from page_routes import api, http

from agora.toolsets.chess.commands import NewGame, Resign, Tokens

PUBLIC_URL = "http://127.0.0.1:8765"


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


async def test_a_new_offer_clears_the_last_ones_decline(table):
    """Newcomer finding: after the agent declined the human's offer by moving, a second offer
    read "You offered a draw. The agent declined your draw offer." (drawOffer "human" and
    drawDeclined true together), until the agent moved, and after a reload too."""
    rt, token = table.runtime, table.token
    await table.choose("black")  # the human plays White
    await table.human_move("e2e4")
    await api(rt, "POST", "/play/default/offer-draw", {"token": token})
    await table.tool("wait_for_turn")  # shows the agent the offer
    await table.tool("move_piece", **{"from": "e7", "to": "e5"})  # declines it
    _, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert (state["drawOffer"], state["drawDeclined"]) == (None, True)
    _, state = await api(rt, "POST", "/play/default/offer-draw", {"token": token})
    assert (state["drawOffer"], state["drawDeclined"]) == ("human", False)
    _, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert (state["drawOffer"], state["drawDeclined"]) == ("human", False)
    await table.human_move("g1f3")
    await table.tool("wait_for_turn")  # shows the agent the offer
    await table.tool("move_piece", **{"from": "b8", "to": "c6"})  # declines the second one
    _, state = await api(rt, "GET", "/play/default/state", query={"token": token})
    assert (state["drawOffer"], state["drawDeclined"]) == (None, True)


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
    for bad in ("static", "a/b", "", "x" * 41):  # capitals are lower-cased: page_words
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


async def test_the_agent_token_in_the_page_link_is_named_as_the_agent_token(table):
    # The banner prints the human and agent links one line apart: a player who opens the
    # agent's is told which link that is and which one to open, not "mistyped".
    for path in ("/play/default/state", "/play/default/events"):
        status, body = await api(
            rt := table.runtime, "GET", path, query={"token": table.agent_token}
        )
        assert (status, body["code"]) == (403, "FORBIDDEN")
        assert body["error"].startswith("This link carries the table's agent token")
        assert "(/mcp/chess/default?token=...)" in body["error"]
        assert "mistyped" not in body["error"]
    status, body = await api(rt, "GET", "/play/default/state", query={"token": "guess"})
    assert "mistyped, from another table, or an agent token the human" in body["error"]


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
    assert (body["code"], body["statusCode"]) == ("AGENT_TOKEN_INVALID", "AGENT_TOKEN_INVALID")
    table.agent_token = state["agentToken"]
    assert (await table.tool("get_board"))["seat"] == "agent"


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


async def test_every_page_post_refuses_a_nul_body_nested_too_deeply_or_wide_at_its_field(table):
    # The NUL check decoded the body untyped and walked it recursively: past Python's
    # recursion limit that raised (a 500 with a traceback); and a megabyte of empty arrays
    # cost its decode and walk up to 0.5 s of the event loop (a reviewer's finding). The
    # typed decode now comes first: a body of the page's few known fields refuses the
    # others at their name, before reading their value.
    rt = table.runtime
    posts = ("side", "move", "resign", "offer-draw", "accept-draw", "new-game", "agent-token")
    wide = b"[" + b",".join([b"[]"] * 300_000) + b"]"
    for value in (*(b"[" * d + b"]" * d for d in (sys.getrecursionlimit(), 300_000)), wide):
        for path in (*(f"/play/default/{p}" for p in posts), "/play/tables"):
            body = b'{"x":%s,"token":"\\u0000"}' % value
            status, refused = await api(rt, "POST", path, body)
            assert status == 400, (path, refused)
            assert refused["error"].startswith("Object contains unknown field `x`"), refused
    status, state = await api(rt, "GET", "/play/default/state", query={"token": table.token})
    assert (status, state["phase"]) == (200, "side_choice")  # nothing ran


async def test_the_status_says_check_when_the_human_is_in_check(table):
    await table.choose("white")
    await table.play(["e2e4", "f7f6", "d1h5"])
    _, mine = await api(table.runtime, "GET", "/play/default/state", query={"token": table.token})
    _, watched = await api(table.runtime, "GET", "/play/default/state")
    assert (mine["inCheck"], mine["status"]) == (True, "Check! Your move.")
    assert watched["status"] == "Check! The human is to move."
    await table.human_move("g7g6")
    _, mine = await api(table.runtime, "GET", "/play/default/state", query={"token": table.token})
    assert mine["status"] == "The agent is thinking."


async def test_an_action_with_no_body_is_told_what_to_send(table):
    for body in (b"", b"  \n"):
        for path in ("resign", "move", "side", "new-game"):
            status, refused = await api(table.runtime, "POST", f"/play/default/{path}", body)
            assert (status, refused["code"]) == (400, "BAD_REQUEST")
            assert refused["error"].startswith("the body is empty: send a JSON object"), path
            assert '"token"' in refused["error"]


async def test_an_earlier_game_is_downloaded_by_its_number(table):
    await table.choose("black")
    await table.human_move("e2e4")
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "first game"})
    await table.human(Resign(table.token))
    first = (await http(table.runtime, "GET", "/play/default/pgn")).body
    await table.human(NewGame(table.token))
    await table.choose("white")
    await table.tool("move_piece", **{"from": "d2", "to": "d4"})
    earlier = await http(table.runtime, "GET", "/play/default/pgn", query={"game": "1"})
    assert earlier.status == 200
    assert earlier.body == first
    assert 'filename="agora-default-game1.pgn"' in dict(earlier.headers)["Content-Disposition"]
    current = await http(table.runtime, "GET", "/play/default/pgn", query={"game": "2"})
    assert b"1. d4" in current.body
    assert current.body == (await http(table.runtime, "GET", "/play/default/pgn")).body
    for bad in ("3", "0", "x", "-1", "1.0", "\u00b2", "9" * 5000):
        missing = await http(table.runtime, "GET", "/play/default/pgn", query={"game": bad})
        assert missing.status == 404, bad


async def test_the_server_counts_a_human_note_in_code_points(table):
    """The server is the authority on a note's length: 160 emoji (320 UTF-16 units) pass,
    161 are refused whatever the page let through."""
    await table.choose("black")
    rt, token = table.runtime, table.token
    move = {"token": token, "from": "e2", "to": "e4", "note": "\U0001f600" * 161}
    status, body = await api(rt, "POST", "/play/default/move", move)
    assert (status, body["code"]) == (400, "NOTE_TOO_LONG")
    assert body["error"] == "note has 161 characters; the limit is 160."
    status, state = await api(rt, "POST", "/play/default/move", move | {"note": move["note"][1:]})
    assert status == 200
    assert state["lastMove"]["note"] == "\U0001f600" * 160
