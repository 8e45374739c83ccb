"""The two players of the chess end-to-end tests, and the games they play together.

- `SdkAgent` is the official ``mcp`` SDK client playing as the agent: it follows each reply's
  ``nextAction`` and validates every structured result, refusals included, against the
  outputSchema that tools/list published (and every refusal against the rejection schema).
- `ScriptedHuman` plays the human through the page API, woken by the SSE stream, never by
  polling.
- `beside_a_browser` gives a table's agent to a test while a human plays in a browser,
  each on its own thread.

This module must not start or stop servers (see chess_server). Nothing here sleeps.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import chess
import jsonschema
import trio
from chess_page_http import http_json, new_table, open_events

from agora.toolsets.chess.position import ungroup_moves
from agora.toolsets.chess.schemas import REJECTION_SCHEMA

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from chess_server import AgoraProcess

    from mcp import Client

#: Fool's mate: White (f3, g4) is mated by Black's queen on h4.
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
#: Scholar's mate: White's queen takes f7 with mate on move 4.
SCHOLARS_MATE = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]

REJECTION = jsonschema.Draft202012Validator(REJECTION_SCHEMA)


@dataclass
class ScriptedHuman:
    """Plays the human's side of ``script`` through the page API, woken by its SSE stream.

    Attributes:
        agent_color: The side choice the human makes first.
        notes: The human's note for each of its plies (by ply number, from 1).
        states: Every page state received on the stream.
    """

    server: AgoraProcess
    table: str
    token: str
    script: list[str]
    agent_color: str
    notes: dict[int, str] = field(default_factory=dict)
    stop_at_ply: int | None = None
    states: list[dict[str, Any]] = field(default_factory=list)
    version: int = -1

    async def post(self, action: str, body: dict[str, Any]) -> tuple[int, Any]:
        """A human action with the table's token."""
        return await http_json(
            "POST", self.server.play_url(self.table, action), {"token": self.token, **body}
        )

    async def play(self) -> dict[str, Any]:
        """Play until the game is over or ``stop_at_ply`` plies are on the board.

        Returns:
            The last page state seen.
        """
        events = self.server.play_url(self.table, f"events?token={self.token}")
        async with open_events(events) as reader:
            while True:
                state = await reader.next_state()
                self.states.append(state)
                assert state["role"] == "human"
                if state["version"] < self.version:
                    continue  # sent before our own last action was answered, as on the page
                plies = len(state["history"])
                if state["phase"] == "over" or plies == self.stop_at_ply:
                    return state
                if state["phase"] == "side_choice":
                    status, body = await self.post("side", {"agentColor": self.agent_color})
                    assert status == 200, body
                    self.version = body["version"]
                elif state["phase"] == "human_turn":
                    await self._move(state, plies)

    async def _move(self, state: dict[str, Any], plies: int) -> None:
        uci = self.script[plies]
        legal = {m["uci"] for m in state["legalMoves"]}
        assert uci in legal, (uci, sorted(legal))
        body: dict[str, Any] = {"from": uci[:2], "to": uci[2:4]}
        if note := self.notes.get(plies + 1):
            body["note"] = note
        status, reply = await self.post("move", body)
        assert status == 200, reply
        self.version = reply["version"]
        assert reply["history"][-1]["uci"] == uci


@dataclass
class SdkAgent:
    """The official MCP SDK client, playing as the agent by following ``nextAction``.

    Every structured result, refusals included, is validated against the outputSchema
    from tools/list (refusals also against the rejection schema alone), and the text block
    of either must carry the same JSON.
    """

    client: Client
    validators: dict[str, jsonschema.Draft202012Validator] = field(default_factory=dict)
    replies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def list_tools(self) -> list[str]:
        """tools/list; builds a validator per outputSchema and returns the tool names."""
        listed = await self.client.list_tools()
        for tool in listed.tools:
            assert tool.output_schema is not None, tool.name
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            self.validators[tool.name] = jsonschema.Draft202012Validator(tool.output_schema)
        return sorted(self.validators)

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool; returns ``(is_error, structured body)`` with the body validated."""
        result = await self.client.call_tool(name, arguments)
        body = result.structured_content
        assert body is not None, result
        text = [block.text for block in result.content if block.type == "text"]
        assert text, result
        assert json.loads(text[0]) == body
        self.validators[name].validate(body)
        assert body["ok"] is not result.is_error
        if result.is_error:
            REJECTION.validate(body)
        self.replies.append((name, body))
        return bool(result.is_error), body

    async def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed."""
        is_error, body = await self.call(name, arguments or {})
        assert not is_error, body
        return body

    async def play(
        self,
        script: list[str],
        notes: dict[int, str],
        *,
        start: dict[str, Any] | None = None,
        stop_after_ply: int | None = None,
        wait_ms: int = 20000,
    ) -> dict[str, Any]:
        """Follow nextAction from ``start`` (default: join_game) until the game is over.

        The agent plays the entry of ``script`` for the current ply (read off the FEN),
        which must be one of its ``legalMoves``, with the note for that ply.

        Returns:
            The last reply (GAME_OVER, or the ``move_piece`` reply at ``stop_after_ply``).
        """
        reply = start if start is not None else await self.ok("join_game")
        while True:
            action = reply["nextAction"]
            if action["tool"] is None:
                assert reply["statusCode"] == "GAME_OVER", reply
                return reply
            if action["tool"] == "wait_for_turn":
                assert not reply["agentMayMove"]
                arguments = {**action["arguments"], "timeout_ms": wait_ms}
                reply = await self.ok("wait_for_turn", arguments)
                continue
            assert action["tool"] == "move_piece", action
            assert reply["statusCode"] == "AGENT_TURN", reply
            assert reply["agentMayMove"], reply
            reply = await self._move(reply, script, notes)
            if ply_of(reply) == stop_after_ply:
                return reply

    async def _move(
        self, reply: dict[str, Any], script: list[str], notes: dict[int, str]
    ) -> dict[str, Any]:
        ply = ply_of(reply)
        uci = script[ply]
        assert uci in ungroup_moves(reply["legalMoves"]), (uci, reply["legalMoves"])
        args = {"from": uci[:2], "to": uci[2:4]}
        if uci[4:]:
            args["promotion"] = uci[4:]
        if note := notes.get(ply + 1):
            args["note"] = note
        played = await self.ok("move_piece", args)
        assert played["lastMove"]["uci"] == uci
        assert played["lastMove"]["by"] == "agent"
        assert played["lastMove"]["note"] == notes.get(ply + 1)
        return played


def ply_of(reply: dict[str, Any]) -> int:
    """How many plies the game in ``reply`` has (games start from the initial position)."""
    return chess.Board(reply["fen"]).ply()


async def fools_mate_against_the_page(
    server: AgoraProcess, client: Any, notes: dict[int, str]
) -> tuple[SdkAgent, ScriptedHuman, dict[str, Any], dict[str, Any]]:
    """The agent behind ``client`` (an SDK client session, through whatever process) plays
    fool's mate as black against a human on ``server``'s page; the agent (with its replies),
    the human (with the states its page saw), the agent's final reply, and the page's state
    after the game."""
    agent = SdkAgent(client)
    assert set(await agent.list_tools()) == {
        "join_game",
        "get_board",
        "move_piece",
        "wait_for_turn",
    }
    joined = await agent.ok("join_game")
    # The human moves through the page; the agent's waits wake on those moves, and the
    # page on the agent's.
    human = ScriptedHuman(server, "default", server.token, FOOLS_MATE, "black")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(human.play)
        final = await agent.play(FOOLS_MATE, notes, start=joined)
    status, page = await http_json("GET", f"{server.url}/play/default/state?token={server.token}")
    assert status == 200
    return agent, human, final, page


def check_fools_mate(
    agent: SdkAgent, final: dict[str, Any], page: dict[str, Any], notes: dict[int, str]
) -> None:
    """The agent won fool's mate, woken once per human move (never a timeout), and the
    page shows every move with its side and the agent's last note."""
    assert final["result"]["reason"] == "checkmate"
    assert final["result"]["winnerRole"] == "agent"
    waits = [body for name, body in agent.replies if name == "wait_for_turn"]
    statuses = [w["statusCode"] for w in waits]
    assert statuses.count("AGENT_TURN") == 2, statuses  # one per human move
    assert "WAIT_TIMEOUT" not in statuses, statuses
    assert page["phase"] == "over"
    assert [m["uci"] for m in page["history"]] == FOOLS_MATE
    assert [m["by"] for m in page["history"]] == ["human", "agent"] * 2
    assert page["history"][3]["note"] == notes[4]


@asynccontextmanager
async def beside_a_browser(
    table: dict[str, Any], human: Callable[..., dict[str, Any]], *args: Any
) -> AsyncIterator[tuple[SdkAgent, dict[str, Any]]]:
    """The agent of ``table`` (`SdkAgent`, its tools listed) while ``human(*args)`` drives a
    browser in a thread; yields the agent and a dict that holds what ``human`` returned once
    the block has ended (the block ends when both are done)."""
    import mcp

    seen: dict[str, Any] = {}

    async def in_a_thread() -> None:
        seen.update(await trio.to_thread.run_sync(human, *args))

    async with mcp.Client(table["agent"]["mcpHttp"], read_timeout_seconds=30) as client:
        agent = SdkAgent(client)
        await agent.list_tools()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(in_a_thread)
            yield agent, seen


async def table_after(server: Any, name: str, moves: list[str], agent_color: str) -> str:
    """A new table on ``server`` whose human gave the agent ``agent_color``, brought through
    ``moves`` (UCI, from the start: the human's over the page's HTTP API, the agent's over
    the official ``mcp`` SDK); its human URL."""
    import mcp  # (the tests that call this skip without it)

    table = await new_table(server.url, name)
    human = table["token"]
    status, _ = await http_json(
        "POST", server.play_url(name, "side"), {"token": human, "agentColor": agent_color}
    )
    assert status == 200
    async with mcp.Client(table["agent"]["mcpHttp"], read_timeout_seconds=30) as client:
        agent = SdkAgent(client)
        await agent.list_tools()
        for ply, uci in enumerate(moves):
            move = {"from": uci[:2], "to": uci[2:]}
            if (ply % 2 == 0) == (agent_color == "black"):  # the human's move
                status, body = await http_json(
                    "POST", server.play_url(name, "move"), {"token": human, **move}
                )
                assert status == 200, body
            else:  # an agent looks at the board before it moves (a blind move is refused)
                await agent.ok("get_board", {})
                await agent.ok("move_piece", move)
    url: str = table["humanUrl"]
    return url
