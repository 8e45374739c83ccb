"""Chess behind the real MCP session layer: the endpoint's token, schemas and argument errors.

Every tools/call result here, refusals included, is validated against the outputSchema that
tools/list published, and its text block must be the same JSON as its structuredContent.
"""

from __future__ import annotations

import dataclasses
import json
import re
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import jsonschema
import trio

from agora.config import Config
from agora.errors import StoreError
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chess import ensure_table, toolset
from agora.toolsets.chess.commands import ChooseSide, CreateTable, HumanMove, NewAgentToken
from agora.toolsets.chess.table import KIND

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Checked:
    """Calls tools on an in-process client and checks each result against tools/list."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.validators: dict[str, jsonschema.Draft202012Validator] = {}

    async def start(self) -> None:
        await self.client.initialize()
        listed = await self.client.request("tools/list")
        for tool in listed["result"]["tools"]:
            self.validators[tool["name"]] = jsonschema.Draft202012Validator(tool["outputSchema"])

    async def call(
        self, name: str, arguments: dict[str, Any], *, mirrored: bool = True
    ) -> tuple[bool, dict[str, Any]]:
        """One call; ``mirrored``: its text block must be the same JSON (the core words a
        failure inside the server as a sentence instead)."""
        result = await self.client.call_tool(name, arguments)
        body = result["structuredContent"]
        self.validators[name].validate(body)
        if mirrored:
            assert json.loads(result["content"][0]["text"]) == body
        return bool(result.get("isError")), body


BAD_ARGUMENTS = [
    ("move_piece", {"from": "e2"}),
    ("move_piece", {"from": "e2", "to": "e9"}),
    ("move_piece", {"from": "e2", "to": "e4", "promotion": "k"}),
    ("move_piece", {"from": "e2", "to": "e4", "colour": "white"}),
    ("move_piece", {"from": 12, "to": "e4"}),
    ("wait_for_turn", {"timeout_ms": 10}),
    ("wait_for_turn", {"wait_for_human": "yes"}),
    ("get_board", {"table": "other"}),
    ("join_game", {"x": 1}),
]


@asynccontextmanager
async def _clients(
    *paths: str, agent_side: str | None = None
) -> AsyncIterator[tuple[Any, Any, list[Checked]]]:
    """A chess server with its default table (the agent given ``agent_side`` by the human,
    when set), its tokens, and a started `Checked` client on each path (``{agent}`` stands
    for the agent token)."""
    config = Config(db=":memory:", toolsets=["chess"])
    async with open_server(
        config, clock=Clock(FakeWall()), toolsets=[toolset()], listen=False
    ) as server:
        tokens = await ensure_table(server.runtime)
        if agent_side is not None:
            await server.runtime.call(KIND, "default", ChooseSide(tokens.human, agent_side))
        async with AsyncExitStack() as stack:
            clients = []
            for path in paths:
                client = await stack.enter_async_context(
                    server.client(path.format(agent=tokens.agent))
                )
                clients.append(Checked(client))
                await clients[-1].start()
            yield server, tokens, clients


async def test_the_endpoint_token_seats_the_agent_and_every_reply_keeps_its_schema():
    with trio.fail_after(20):
        async with _clients("/mcp/chess/default?token={agent}", "/mcp/chess") as opened:
            server, tokens, (seated, watcher) = opened
            for name, arguments in BAD_ARGUMENTS:
                is_error, body = await seated.call(name, arguments)
                assert is_error, (name, arguments)
                assert (body["code"], body["statusCode"], body["agentMayMove"]) == (
                    "INVALID_ARGUMENTS",
                    "SIDE_CHOICE_REQUIRED",  # the table's, as on any refusal
                    False,
                )
                instruction = body["nextAction"]["instruction"]
                if "colour" in arguments:  # not a field: drop it, then wait as any move slip
                    assert "Drop 'colour'" in instruction
                if name == "move_piece":  # no side yet: wait for the human's choice
                    assert body["nextAction"]["tool"] == "wait_for_turn"
                else:  # no legalMoves to take arguments from: say what to fix
                    assert "legalMoves" not in instruction, (name, arguments)
                if "timeout_ms" in arguments:
                    assert body["nextAction"]["tool"] == "wait_for_turn"
                    assert "timeout_ms" in instruction
                    assert "1000" in instruction
                    assert "55000" in instruction

            refused = [await seated.call("move_piece", {"from": "e2", "to": "e4"})]
            await server.runtime.call(KIND, "default", ChooseSide(tokens.human, "white"))
            refused.append(await watcher.call("move_piece", {"from": "e2", "to": "e4"}))
            refused.append(await seated.call("move_piece", {"from": "a1", "to": "a1"}))
            codes = [(err, body["code"], body["statusCode"]) for err, body in refused]
            assert codes == [
                (True, "SIDE_NOT_CHOSEN", "SIDE_CHOICE_REQUIRED"),
                (True, "AGENT_TOKEN_REQUIRED", "AGENT_TOKEN_REQUIRED"),
                (True, "ILLEGAL_MOVE", "AGENT_TURN"),
            ]

            for name in ("join_game", "get_board"):  # a watcher's wait: test_chess_seat
                assert (await watcher.call(name, {}))[1]["seat"] == "watcher"
            for name in ("join_game", "get_board", "wait_for_turn"):
                assert (await seated.call(name, {}))[1]["seat"] == "agent"
            is_error, moved = await seated.call("move_piece", {"from": "e2", "to": "e4"})
            assert not is_error
            assert moved["lastMove"]["by"] == "agent"
            is_error, body = await seated.call("move_piece", {"from": "d2", "to": "d4"})
            assert (is_error, body["code"], body["statusCode"]) == (
                True,
                "NOT_YOUR_TURN",
                "HUMAN_TURN",
            )


async def test_bad_arguments_are_refused_with_the_table_as_it_stands():
    """A bad move on the agent's turn says the agent may move and lists the legal moves (the
    refusal used to say agentMayMove false, made before the table was read); on the human's
    turn it says wait; with a token the table refuses it keeps the arguments' own refusal."""
    paths = ("/mcp/chess/default?token={agent}", "/mcp/chess/default?token=not-the-token")
    with trio.fail_after(20):
        async with _clients(*paths, agent_side="white") as (_, _, (seated, stranger)):
            is_error, body = await seated.call("move_piece", {"from": "e2", "to": "e9"})
            assert is_error
            assert (body["code"], body["statusCode"], body["agentMayMove"]) == (
                "INVALID_ARGUMENTS",
                "AGENT_TURN",
                True,
            )
            assert body["error"].startswith("argument 'to'")
            assert body["nextAction"]["tool"] == "move_piece"
            assert body["legalMoves"]["e2"] == "e3 e4"
            _, board = await seated.call("get_board", {})
            assert body["legalMoves"] == board["legalMoves"]

            is_error, body = await seated.call("wait_for_turn", {"timeout_ms": 10})
            assert (body["statusCode"], body["agentMayMove"]) == ("AGENT_TURN", True)
            assert body["nextAction"]["tool"] == "wait_for_turn"  # says what it takes
            assert "timeout_ms" in body["nextAction"]["instruction"]

            assert not (await seated.call("move_piece", {"from": "e2", "to": "e4"}))[0]
            is_error, body = await seated.call("move_piece", {"from": "d7"})
            assert (body["statusCode"], body["agentMayMove"], body["legalMoves"]) == (
                "HUMAN_TURN",
                False,
                {},
            )
            assert body["nextAction"]["tool"] == "wait_for_turn"

            is_error, body = await stranger.call("move_piece", {"from": "d7"})
            assert (body["code"], body["statusCode"], body["agentMayMove"]) == (
                "INVALID_ARGUMENTS",
                "INVALID_ARGUMENTS",
                False,
            )
            assert body["nextAction"]["tool"] == "get_board"


async def _store_fails(call: Any) -> dict[str, Any]:
    raise StoreError("the disk is full")


async def test_a_failure_inside_the_server_still_answers_the_declared_schema(caplog):
    chess_toolset = toolset()
    broken = dataclasses.replace(
        chess_toolset, handlers={**chess_toolset.handlers, "get_board": _store_fails}
    )
    config = Config(db=":memory:", toolsets=["chess"])
    with trio.fail_after(20):
        async with (
            open_server(config, clock=Clock(FakeWall()), toolsets=[broken], listen=False) as server,
            server.client("/mcp/chess") as client,
        ):
            checked = Checked(client)
            await checked.start()
            is_error, body = await checked.call("get_board", {}, mirrored=False)
    assert is_error
    assert (body["code"], body["statusCode"]) == ("INTERNAL_ERROR", "SERVER_ERROR")
    assert body["nextAction"]["tool"] == "get_board"
    assert re.search(r"correlation id corr-[0-9a-f]{16}", body["error"])


async def test_an_unknown_move_field_names_move_piece_like_every_other_move_slip():
    """A tester's finding: an unknown field of move_piece named get_board as the next
    action, while a bad from, to or promotion names move_piece."""
    with trio.fail_after(20):
        async with _clients("/mcp/chess/default?token={agent}", agent_side="white") as (
            _,
            _,
            (seated,),
        ):
            _, known = await seated.call("move_piece", {"from": "e2", "to": "e9"})
            args = {"from": "e2", "to": "e4", "colour": "white"}
            is_error, body = await seated.call("move_piece", args)
    assert is_error
    assert body["code"] == "INVALID_ARGUMENTS"
    assert body["nextAction"]["tool"] == known["nextAction"]["tool"] == "move_piece"
    assert body["nextAction"]["arguments"] == known["nextAction"]["arguments"]
    assert "Drop 'colour'" in body["nextAction"]["instruction"]
    assert "from, to, promotion and note" in body["nextAction"]["instruction"]


async def test_a_promotion_written_into_the_square_is_explained_in_words():
    """A tester's finding: to "a6q" got only "must match pattern ^[a-h][1-8]$"."""
    with trio.fail_after(20):
        async with _clients("/mcp/chess/default?token={agent}", agent_side="white") as (
            _,
            _,
            (seated,),
        ):
            is_error, body = await seated.call("move_piece", {"from": "a7", "to": "a8q"})
            others = [
                await seated.call("move_piece", {"from": "e7", "to": to}) for to in ("e9", "E5")
            ]
    assert is_error
    assert "pattern" not in body["error"]
    assert body["error"].startswith("argument 'to' is not a square: a square is two characters")
    assert "send it in promotion" in body["error"]
    assert body["nextAction"]["tool"] == "move_piece"
    # A tester's finding: a bad rank or an upper-case file got the promotion hint too.
    for is_error, other in others:
        assert is_error
        assert other["error"].startswith("argument 'to' is not a square")
        assert "promotion" not in other["error"]


async def test_a_token_on_an_endpoint_that_ignores_it_is_refused_in_words():
    """A tester's finding: on /mcp?token=<agent token> the token was dropped in silence: the
    agent was told it had none and shown table default, another game than its own."""
    calls = [
        ("join_game", {}),
        ("get_board", {}),
        ("wait_for_turn", {"timeout_ms": 1000}),
        ("move_piece", {"from": "e2", "to": "e4"}),
        ("move_piece", {"from": "e2"}),  # bad arguments: the same words
    ]
    with trio.fail_after(20):
        async with _clients("/mcp?token={agent}", "/mcp", agent_side="white") as opened:
            _, _, (ignored, plain) = opened
            refused = [await ignored.call(name, arguments) for name, arguments in calls]
            _, watched = await plain.call("get_board", {})
    for is_error, body in refused:
        assert is_error
        assert (body["code"], body["statusCode"], body["agentMayMove"]) == (
            "AGENT_TOKEN_REQUIRED",
            "AGENT_TOKEN_REQUIRED",
            False,
        )
        assert body["error"].startswith("This endpoint ignores ?token=")
        assert body["nextAction"]["tool"] is None
        assert "/mcp/chess/<table>?token=<agent token>" in body["nextAction"]["instruction"]
    assert (watched["seat"], watched["table"]) == ("watcher", "default")  # no token: watches


async def test_another_tables_agent_token_is_sent_to_its_own_tables_endpoint():
    """A tester's finding: /mcp/chess?token=<table t-1's agent token> (table default's
    endpoint) called the token wrong or replaced, so its holder went to renew a token that
    works. A current agent token is sent to its table's endpoint; any other token (a replaced
    one, a human token) learns nothing of other tables."""
    calls = [
        ("join_game", {}),
        ("get_board", {}),
        ("wait_for_turn", {"timeout_ms": 1000}),
        ("move_piece", {"from": "e2", "to": "e4"}),
    ]
    with trio.fail_after(20):
        async with _clients() as (server, tokens, _), AsyncExitStack() as stack:
            runtime = server.runtime
            await runtime.call(KIND, "t-1", CreateTable("human-1", "agent-1"))
            await runtime.call(KIND, "t-2", CreateTable("human-2", "agent-2"))
            await runtime.call(KIND, "t-2", NewAgentToken("human-2", "agent-2b"))

            async def client(path: str) -> Checked:
                checked = Checked(await stack.enter_async_context(server.client(path)))
                await checked.start()
                return checked

            bare = await client("/mcp/chess?token=agent-1")
            refused = [await bare.call(name, arguments) for name, arguments in calls]
            named = await client(f"/mcp/chess/t-2?token={tokens.agent}")
            _, to_default = await named.call("get_board", {})
            plain = []
            for token in ("agent-2", "human-1", "guess"):  # replaced, the human's, wrong
                _, body = await (await client(f"/mcp/chess?token={token}")).call("get_board", {})
                plain.append(body)
            _, seated = await (await client("/mcp/chess/t-1?token=agent-1")).call("get_board", {})
    for is_error, body in refused:
        assert is_error
        assert (body["code"], body["statusCode"], body["agentMayMove"]) == (
            "AGENT_TOKEN_INVALID",
            "AGENT_TOKEN_INVALID",
            False,
        )
        assert body["error"] == (
            "This endpoint serves table 'default' (the one /mcp/chess without a table's name"
            " serves), but your agent token belongs to another table's seat: table 't-1'."
            " Connect to /mcp/chess/t-1?token=<this same agent token>."
        )
        assert body["nextAction"]["tool"] is None
        assert body["nextAction"]["instruction"].startswith(
            "Reconnect to /mcp/chess/t-1?token=<this same agent token>"
        )
    assert to_default["error"].startswith(
        "This endpoint serves table 't-2', but your agent token belongs to another table's"
        " seat: table 'default'."
    )
    for body in plain:
        assert body["code"] == "AGENT_TOKEN_INVALID"
        assert "wrong or the human replaced it" in body["error"]
        assert "t-1" not in json.dumps(body)
        assert "t-2" not in json.dumps(body)
    assert (seated["seat"], seated["table"]) == ("agent", "t-1")


async def test_two_sessions_with_one_agent_token_never_play_a_stale_move():
    seat = "/mcp/chess/default?token={agent}"
    with trio.fail_after(20):
        async with _clients(seat, seat, agent_side="white") as (server, tokens, (one, two)):
            for client in (one, two):
                assert (await client.call("wait_for_turn", {}))[1]["statusCode"] == "AGENT_TURN"
            is_error, moved = await one.call("move_piece", {"from": "g1", "to": "f3"})
            assert not is_error
            assert "holds the agent's seat too" not in moved["message"]  # no evidence yet
            human = HumanMove(tokens.human, "b8", "c6")
            await server.runtime.call(KIND, "default", human)
            is_error, body = await two.call("move_piece", {"from": "e2", "to": "e4"})
            assert (is_error, body["code"], body["nextAction"]["tool"]) == (
                True,
                "NOT_YOUR_TURN",
                "move_piece",
            )
            assert "moved Nf3, then the human replied Nc6 since your last look" in body["error"]
            assert "holds the agent's seat too" in (await one.call("get_board", {}))[1]["message"]
            is_error, moved = await two.call("move_piece", {"from": "e2", "to": "e4"})
            assert (is_error, moved["lastMove"]["san"]) == (False, "e4")


async def test_a_null_optional_argument_is_refused_with_words_to_leave_it_out():
    # The seed's inputSchema types promotion and note as strings (no null): clients that send
    # null for unset fields are told to leave them out, and a promotion piece where it goes.
    seat = "/mcp/chess/default?token={agent}"
    with trio.fail_after(20):
        async with _clients(seat, agent_side="white") as (_server, _tokens, (agent,)):
            for field in ("promotion", "note"):
                move = {"from": "b1", "to": "c3", field: None}
                is_error, body = await agent.call("move_piece", move)
                assert (is_error, body["code"]) == (True, "INVALID_ARGUMENTS")
                assert f"argument '{field}' is null: leave it out instead" in body["error"]
                assert body["error"].count("leave it out instead") == 1  # one sentence, once
            _, board = await agent.call("get_board", {})
            instruction = board["nextAction"]["instruction"]
            assert "a 5th letter goes in promotion" in instruction
