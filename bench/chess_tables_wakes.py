"""What both workloads of bench/chess_tables.py share: an agent's wake, and how it is timed.

`Wake` is an agent's wait answered by a human move; `played_at` reads when the table stamped
each human move; `report_latency` prints a latency line; `tool` calls a tool and refuses a
refusal. This module must not start servers or run a workload.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import chess
from measure import percentile

if TYPE_CHECKING:
    from pathlib import Path

    from agora.client import WsClient

CONNECT_AT_ONCE = 200


def report_latency(label: str, samples: list[float]) -> None:
    if not samples:
        print(f"  {label}: no samples")
        return
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    print(
        f"  {label}: n={len(samples)}  p50 {p50 * 1e3:.2f} ms  p99 {p99 * 1e3:.2f} ms"
        f"  max {max(samples) * 1e3:.2f} ms"
    )


@dataclass
class Wake:
    """An agent's wait answered by a human move (table, game, ply), with client times."""

    table: str
    game: int
    ply: int
    wait_sent: float
    received: float


async def tool(client: WsClient, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    body: dict[str, Any] = result["structuredContent"]
    if result.get("isError"):
        raise RuntimeError(f"{name} refused: {body}")
    return body


def played_at(db: Path) -> dict[tuple[str, int, int], float]:
    """When each human move was stamped by its table (just before its commit)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT table_name, game_no, ply, played_at FROM chess_moves WHERE by = 'human'"
        ).fetchall()
    return {(t, g, p): dt.datetime.fromisoformat(at).timestamp() for t, g, p, at in rows}


def ply_of(reply: dict[str, Any]) -> int:
    """The plies played in the reply's game (from its FEN; games start at the opening)."""
    return chess.Board(reply["fen"]).ply()
