"""How many bytes an agent reads per chess call: reply sizes per tool over whole games.

An in-process agora (``open_server``, no sockets, ``:memory:`` store) hosts one table; the
agent is a real MCP session on the table's seated endpoint, the human is played straight
through the table entity. ``--games`` games of random legal moves (seeded, at most
``--plies`` plies each; the agent plays White in even games, Black in odd ones) plus one
long master game (Kasparov-Topalov 1999, 87 plies). Every move of both sides carries a note
of ``--note`` characters (160, the limit, by default: the worst case for ``lastMove``).

For each tool it prints the size of the structured result as compact JSON, which is also the
text block the result mirrors: median, p95 and max, and the largest reply of all; and how
often the byte budget (`REPLY_BUDGET`) made a reply drop its evaluation guide or cut a note.
The agent calls ``wait_for_turn`` before each of its moves (it answers at once on its turn),
``move_piece`` for each move, and ``get_board`` and ``join_game`` once per game.

Usage: ``.venv/bin/python bench/chess_replies.py [--games 40] [--plies 160] [--note 160]``.
Not run by CI; takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from typing import Any

import chess
import trio
from cli_args import int_range, non_negative_int, positive_int
from measure import percentile

from agora.config import Config
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chess import ensure_table, toolset
from agora.toolsets.chess.commands import ChooseSide, HumanMove, NewGame
from agora.toolsets.chess.replies import REPLY_BUDGET
from agora.toolsets.chess.table import KIND
from agora.toolsets.chess.terms import NOTE_MAX_CHARS

KASPAROV_TOPALOV = (
    "e2e4 d7d6 d2d4 g8f6 b1c3 g7g6 c1e3 f8g7 d1d2 c7c6 f2f3 b7b5 g1e2 b8d7 e3h6 g7h6 "
    "d2h6 c8b7 a2a3 e7e5 e1c1 d8e7 c1b1 a7a6 e2c1 e8c8 c1b3 e5d4 d1d4 c6c5 d4d1 d7b6 "
    "g2g3 c8b8 b3a5 b7a8 f1h3 d6d5 h6f4 b8a7 h1e1 d5d4 c3d5 b6d5 e4d5 e7d6 d1d4 c5d4 "
    "e1e7 a7b6 f4d4 b6a5 b2b4 a5a4 d4c3 d6d5 e7a7 a8b7 a7b7 d5c4 c3f6 a4a3 f6a6 a3b4 "
    "c2c3 b4c3 a6a1 c3d2 a1b2 d2d1 h3f1 d8d2 b7d7 d2d7 f1c4 b5c4 b2h8 d7d3 h8a8 c4c3 "
    "a8a4 d1e1 f3f4 f7f5 b1c1 d3d2 a4a7"
)


def size(body: dict[str, Any]) -> int:
    """Bytes of ``body`` as compact UTF-8 JSON."""
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


class Game:
    """Plays games on one table: the agent over MCP, the human through the entity."""

    def __init__(self, server: Any, client: Any, human_token: str, note: str) -> None:
        self.server = server
        self.client = client
        self.human_token = human_token
        self.note = note
        self.sizes: dict[str, list[int]] = defaultdict(list)
        self.largest: tuple[int, str, dict[str, Any]] = (0, "", {})
        self.guide_dropped = 0
        self.note_cut = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        body: dict[str, Any] = result["structuredContent"]
        assert not result.get("isError"), body
        measured = size(body)
        self.sizes[name].append(measured)
        if name == "wait_for_turn" and body["agentMayMove"] and body["evaluationGuide"] is None:
            self.guide_dropped += 1
        last = body.get("lastMove") or {}
        if name in ("wait_for_turn", "move_piece") and (last.get("note") or "").endswith("…"):
            self.note_cut += 1
        if measured > self.largest[0]:
            self.largest = (measured, name, body)
        return body

    async def play(self, agent_color: str, moves: list[str] | None, rng: random.Random, plies: int):
        runtime = self.server.runtime
        await self.call("join_game", {})
        await runtime.call(KIND, "default", ChooseSide(self.human_token, agent_color))  # type: ignore[arg-type]
        board = chess.Board()
        for ply in range(plies if moves is None else len(moves)):
            if board.is_game_over(claim_draw=True):
                break
            uci = moves[ply] if moves is not None else rng.choice(list(board.legal_moves)).uci()
            args = {"from": uci[:2], "to": uci[2:4], "note": self.note}
            if uci[4:]:
                args["promotion"] = uci[4:]
            if (board.turn == chess.WHITE) == (agent_color == "white"):
                waited = await self.call("wait_for_turn", {"timeout_ms": 1000})
                assert waited["agentMayMove"], waited["statusCode"]
                moved = await self.call("move_piece", args)
                if moved["statusCode"] == "GAME_OVER":
                    break
            else:
                command = HumanMove(self.human_token, uci[:2], uci[2:4], uci[4:] or None, self.note)
                snap = await runtime.call(KIND, "default", command)
                if snap.phase == "over":
                    break
            board.push_uci(uci)
        await self.call("get_board", {})
        await runtime.call(KIND, "default", NewGame(self.human_token))


async def main(args: argparse.Namespace) -> None:
    config = Config(db=":memory:", toolsets=["chess"])
    async with open_server(
        config, clock=Clock(FakeWall()), toolsets=[toolset()], listen=False
    ) as server:
        tokens = await ensure_table(server.runtime)
        async with server.client(f"/mcp/chess/default?token={tokens.agent}") as client:
            await client.initialize()
            games = Game(server, client, tokens.human, "n" * args.note)
            rng = random.Random(2026)
            for i in range(args.games):
                await games.play("white" if i % 2 == 0 else "black", None, rng, args.plies)
            await games.play("white", KASPAROV_TOPALOV.split(), rng, 0)
    print(f"chess reply sizes (compact JSON bytes), {args.games} random games + 1 master game,")
    print(f"every move with a {args.note}-character note:")
    for name in ("join_game", "get_board", "move_piece", "wait_for_turn"):
        values = sorted(games.sizes[name])
        print(
            f"  {name:14} n={len(values):5}  median {percentile(values, 0.5):6.0f}"
            f"  p95 {percentile(values, 0.95):6.0f}  max {values[-1]:6}"
        )
    print(
        f"  budget {REPLY_BUDGET} bytes: evaluation guide dropped in {games.guide_dropped}"
        f" waits, note cut in {games.note_cut} replies"
    )
    measured, name, body = games.largest
    if args.show:
        print(f"largest reply: {name}, {measured} bytes:\n{json.dumps(body, indent=1)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--games", type=non_negative_int, default=40, help="random games (0: only the master game)"
    )
    parser.add_argument("--plies", type=positive_int, default=160)
    parser.add_argument("--note", type=int_range(0, NOTE_MAX_CHARS), default=NOTE_MAX_CHARS)
    parser.add_argument("--show", action="store_true", help="print the largest reply")
    trio.run(main, parser.parse_args())
