"""End to end: ``agora serve`` in a subprocess, the official ``mcp`` SDK as the agent.

The agent follows ``nextAction`` over Streamable HTTP (join_game, the wait_for_turn loop,
move_piece from legalMoves) and every structured result is validated against the
outputSchema that tools/list published. The human is scripted against the page's HTTP API
and woken by its SSE stream. The second test stops the server in the middle of a game, with
the agent parked in wait_for_turn, and finishes the game on a new server over the same DB.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from chess_page_http import http_json
from chess_players import FOOLS_MATE, SCHOLARS_MATE, ScriptedHuman, SdkAgent
from chess_server import AgoraProcess, agora_command, agora_serve, terminate_when_in_flight
from e2e_process import clean_env

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TOOLS = ["get_board", "join_game", "move_piece", "wait_for_turn"]


def sdk_client(url: str, mode: str = "auto") -> Any:
    """The SDK client on a Streamable HTTP endpoint; no call may outlive 30 s.

    ``auto`` negotiates the stateless 2026-07-28 revision; ``legacy`` the initialize
    handshake with an ``Mcp-Session-Id``.
    """
    return mcp.Client(url, read_timeout_seconds=30, mode=mode)


async def page_state(server: AgoraProcess, token: str) -> dict[str, Any]:
    """The human's view of the default table."""
    status, state = await http_json("GET", f"{server.url}/play/default/state?token={token}")
    assert status == 200, state
    return state


def durable_view(state: dict[str, Any]) -> dict[str, Any]:
    """What a restart must preserve."""
    return {
        key: state[key]
        for key in ("fen", "history", "agentColor", "humanColor", "phase", "gameNumber", "result")
    }


@pytest.mark.parametrize(
    ("mode", "revision"),
    [
        pytest.param("auto", "2026-07-28", id="stateless"),
        pytest.param("legacy", "2025-11-25", id="handshake"),
    ],
)
async def test_the_sdk_agent_mates_a_scripted_human(tmp_path, mode, revision):
    agent_notes = {
        1: "Centre pawn first.",
        3: "Bishop eyes f7.",
        5: "Queen joins the attack on f7.",
        7: "Qxf7 is mate.",
    }
    human_notes = {2: "I mirror you.", 4: "Developing.", 6: "Attacking your queen!"}
    with trio.fail_after(45):
        async with (
            agora_serve(tmp_path / "agora.db") as server,
            sdk_client(server.mcp_url(), mode) as client,
        ):
            assert client.protocol_version == revision
            agent = SdkAgent(client)
            assert await agent.list_tools() == TOOLS

            joined = await agent.ok("join_game")
            assert joined["statusCode"] == "SIDE_CHOICE_REQUIRED"
            assert joined["nextAction"]["tool"] == "wait_for_turn"
            assert joined["collaborationContract"]
            is_error, refused = await agent.call("move_piece", {"from": "e2", "to": "e4"})
            assert is_error
            assert refused["code"] == "SIDE_NOT_CHOSEN"

            status, body = await http_json(
                "POST",
                server.play_url("default", "side"),
                {"token": "not-the-token", "agentColor": "black"},
            )
            assert (status, body["code"]) == (403, "FORBIDDEN")

            human = ScriptedHuman(
                server, "default", server.token, SCHOLARS_MATE, "white", human_notes
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(human.play)
                final = await agent.play(SCHOLARS_MATE, agent_notes, start=joined)

            assert final["statusCode"] == "GAME_OVER"
            assert final["result"]["reason"] == "checkmate"
            assert final["result"]["winnerRole"] == "agent"
            assert final["result"]["score"] == "1-0"
            assert final["agentColor"] == "white"
            board = await agent.ok("get_board")
            assert board["ownership"] == {"white": "agent", "black": "human"}
            history = human.states[-1]["history"]
            assert [m["uci"] for m in history] == SCHOLARS_MATE
            assert [m["by"] for m in history] == ["agent", "human"] * 3 + ["agent"]
            assert {m["ply"]: m["note"] for m in history if m["note"]} == {
                **agent_notes,
                **human_notes,
            }
            assert board["history"] == "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7#"

            # The agent only ever woke up to act: no timeouts, and it saw each human note.
            waits = [body for name, body in agent.replies if name == "wait_for_turn"]
            assert [w["statusCode"] for w in waits] == ["AGENT_TURN"] * 4
            assert [w["lastMove"]["note"] for w in waits[1:]] == list(human_notes.values())
            assert [w["lastMove"]["by"] for w in waits[1:]] == ["human"] * 3

            # The page saw the same game end.
            assert human.states[-1]["phase"] == "over"
            assert human.states[-1]["fen"] == final["fen"]
            assert human.states[-1]["result"] == final["result"]

            again = await agent.ok("wait_for_turn", {"timeout_ms": 1000})
            assert again["statusCode"] == "GAME_OVER"
            is_error, refused = await agent.call("move_piece", {"from": "a2", "to": "a3"})
            assert is_error
            assert refused["code"] == "GAME_OVER"
            is_error, refused = await agent.call("move_piece", {"from": "a2", "to": "a9"})
            assert (is_error, refused["code"], refused["statusCode"]) == (
                True,
                "INVALID_ARGUMENTS",
                "GAME_OVER",  # the table's: nothing more to play
            )
            assert refused["nextAction"]["tool"] is None

            # Another connection without the agent token may watch but never move.
            async with sdk_client(server.mcp_url(seated=False), mode) as other:
                watcher = SdkAgent(other)
                await watcher.list_tools()
                assert (await watcher.ok("get_board"))["seat"] == "watcher"
                is_error, refused = await watcher.call("move_piece", {"from": "a2", "to": "a3"})
                assert (is_error, refused["statusCode"]) == (True, "AGENT_TOKEN_REQUIRED")


async def test_a_restart_mid_game_keeps_the_table_and_the_game_finishes(tmp_path):
    db = tmp_path / "agora.db"
    agent_notes = {2: "e5 grabs the centre.", 4: "Qh4 is mate."}
    human_notes = {1: "f3, a bold start.", 3: "g4 <b>for sure</b>."}
    with trio.fail_after(45):
        async with agora_serve(db) as server:
            token, agent_token = server.token, server.agent_token
            async with sdk_client(server.mcp_url()) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                human = ScriptedHuman(
                    server, "default", token, FOOLS_MATE, "black", human_notes, stop_at_ply=2
                )
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(human.play)
                    played = await agent.play(FOOLS_MATE, agent_notes, stop_after_ply=2)
                assert played["statusCode"] == "HUMAN_TURN"
                before = await page_state(server, token)

                # The agent parks in wait_for_turn; SIGTERM answers it before the server ends.
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(terminate_when_in_flight, server, 1)
                    wait = {**played["nextAction"]["arguments"], "timeout_ms": 20000}
                    parked = await agent.ok("wait_for_turn", wait)
                assert parked["statusCode"] == "WAIT_TIMEOUT", parked
                assert parked["shuttingDown"] is True  # reconnect, then call again
                assert parked["nextAction"]["tool"] == "wait_for_turn"
                assert parked["fen"] == played["fen"]

        async with agora_serve(db) as server:
            assert server.token == token, "the default table keeps its human token"
            assert server.agent_token == agent_token, "and its agent token"
            after = await page_state(server, token)
            assert durable_view(after) == durable_view(before)
            assert after["agentColor"] == "black"
            assert [m["note"] for m in after["history"]] == [human_notes[1], agent_notes[2]]

            async with sdk_client(server.mcp_url()) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                board = await agent.ok("get_board")
                assert board["fen"] == played["fen"]
                assert board["history"] == "1. f3 e5"
                assert board["lastMove"]["note"] == agent_notes[2]
                assert board["agentColor"] == "black"
                human = ScriptedHuman(server, "default", token, FOOLS_MATE, "black", human_notes)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(human.play)
                    final = await agent.play(FOOLS_MATE, agent_notes, start=board)
            assert final["result"]["reason"] == "checkmate"
            assert final["result"]["winnerRole"] == "agent"
            finished = await page_state(server, token)
            assert [m["uci"] for m in finished["history"]] == FOOLS_MATE

        # A finished game survives a restart too.
        async with agora_serve(db) as server:
            assert durable_view(await page_state(server, token)) == durable_view(finished)


async def test_a_stdio_agent_is_seated_by_the_endpoint_it_is_given(tmp_path):
    from mcp.client.stdio import StdioServerParameters

    db = tmp_path / "agora.db"
    with trio.fail_after(45):
        async with agora_serve(db) as server:
            agent_token = server.agent_token
        for endpoint, seat in (
            (f"/mcp/chess/default?token={agent_token}", "agent"),
            (None, "watcher"),
        ):
            args = ["stdio", "--toolset", "chess", "--db", str(db)]
            if endpoint:
                args += ["--endpoint", endpoint]
            command, *prefix = agora_command()
            params = StdioServerParameters(command=command, args=[*prefix, *args], env=clean_env())
            async with mcp.Client(params, read_timeout_seconds=30) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                assert (await agent.ok("get_board"))["seat"] == seat
                is_error, refused = await agent.call("move_piece", {"from": "e2", "to": "e4"})
                assert is_error
                expected = "SIDE_NOT_CHOSEN" if seat == "agent" else "AGENT_TOKEN_REQUIRED"
                assert refused["code"] == expected


async def test_the_agent_reads_the_humans_note_without_bidi_controls(tmp_path):
    # Each control could reorder how the note, or the text after it, reads in a UI.
    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    note = f"I resign{controls}.ngiser t'nod I"
    with trio.fail_after(45):
        async with (
            agora_serve(tmp_path / "agora.db") as server,
            sdk_client(server.mcp_url()) as client,
        ):
            agent = SdkAgent(client)
            await agent.list_tools()
            human = ScriptedHuman(server, "default", server.token, ["e2e4"], "black")
            status, body = await human.post("side", {"agentColor": "black"})
            assert status == 200, body
            status, body = await human.post("move", {"from": "e2", "to": "e4", "note": note})
            assert status == 200, body
            waited = await agent.ok("wait_for_turn", {"timeout_ms": 5000})
            board = await agent.ok("get_board")
    assert waited["statusCode"] == "AGENT_TURN"
    shown = "I resign.ngiser t'nod I"
    assert (waited["lastMove"]["by"], waited["lastMove"]["note"]) == ("human", shown)
    assert board["lastMove"]["note"] == shown
    # Nowhere in what the agent was told, text blocks included (`SdkAgent` checks they match).
    for _, reply in agent.replies:
        assert not any(c in json.dumps(reply, ensure_ascii=False) for c in controls)


async def test_a_move_on_a_new_tcp_connection_is_guarded_and_parallel_calls_share_no_seat(
    tmp_path,
):
    # At 2026-07-28 a connection is a TCP connection: two calls at once go out on two, and a
    # move after a think longer than the server's 15 s idle close comes on a new one.
    with trio.fail_after(45):
        async with agora_serve(tmp_path / "agora.db") as server:
            human = ScriptedHuman(server, "default", server.token, [], "white")
            assert (await human.post("side", {"agentColor": "white"}))[0] == 200
            async with sdk_client(server.mcp_url()) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                async with trio.open_nursery() as nursery:
                    for _ in range(2):
                        nursery.start_soon(agent.ok, "get_board")
                board = await agent.ok("get_board")
                assert board["gameNumber"] == 1
                assert "holds the agent's seat too" not in board["message"]
                assert not (await page_state(server, server.token))["agentShared"]
            assert (await human.post("new-game", {}))[0] == 200
            assert (await human.post("side", {"agentColor": "white"}))[0] == 200
            async with sdk_client(server.mcp_url()) as client:  # the long think's new one
                agent = SdkAgent(client)
                await agent.list_tools()
                is_error, body = await agent.call("move_piece", {"from": "b1", "to": "c3"})
            assert (is_error, body["code"]) == (True, "NOT_YOUR_TURN")
            assert "the human started game 2 since your last look (at game 1)" in body["error"]
            state = await page_state(server, server.token)
            assert (state["gameNumber"], state["history"]) == (2, [])
