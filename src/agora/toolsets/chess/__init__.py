"""Human-and-agent chess: one authoritative game per table, four tools, and a browser page.

The agent plays through ``join_game``, ``get_board``, ``move_piece`` and ``wait_for_turn`` at
``/mcp/chess/<table>?token=<agent token>`` (``/mcp/chess`` is the ``default`` table; without
the token a connection only watches); the human plays in the page at
``/play/<table>?token=<human token>``. This module only assembles the toolset.
"""

from __future__ import annotations

import secrets
import sys
from typing import TYPE_CHECKING, Final

from agora.toolsets.base import Toolset
from agora.toolsets.chess.arguments import issue_rejection
from agora.toolsets.chess.commands import CreateTable, Tokens
from agora.toolsets.chess.page import agent_links, human_url
from agora.toolsets.chess.refusals import internal_failure
from agora.toolsets.chess.served import served_tools
from agora.toolsets.chess.sql import MIGRATIONS
from agora.toolsets.chess.table import KIND
from agora.toolsets.chess.tools import HANDLERS, refuse_arguments
from agora.toolsets.chess.web import ROUTES

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

DEFAULT_TABLE = "default"

#: The initialize result's ``instructions`` on a chess endpoint: the first call, the loop,
#: the seat the token gives, and how a game ends, before any tool is called.
INSTRUCTIONS: Final = (
    "Chess against a human: one game per table; the human plays in the browser and chooses "
    "sides first, you play the other side. Call wait_for_turn first (no arguments) and "
    "loop on it: on SIDE_CHOICE_REQUIRED call it again with wait_for_human true; on "
    "AGENT_TURN pick a move from legalMoves and call move_piece, then wait_for_turn again; "
    "on HUMAN_TURN or WAIT_TIMEOUT call wait_for_turn again. Every reply's nextAction names "
    "the next call. Only a connection whose endpoint URL carries the table's agent token "
    "(?token=..., shown on the human's page) may move; without it you can only watch. Write "
    "(=) in move_piece's note to offer or accept a draw. A game ends with statusCode "
    "GAME_OVER (checkmate, a draw, or the human resigning or abandoning it): stop when "
    "nextAction.tool is null, or call wait_for_turn with wait_for_human true to play the "
    "human's next game. join_game (optional) returns the full collaboration contract, "
    "get_board the game's history."
)


async def ensure_table(runtime: Runtime, table: str = DEFAULT_TABLE) -> Tokens:
    """Create ``table`` if it does not exist yet.

    Args:
        runtime: The server's runtime.
        table: The table name.

    Returns:
        The table's human and agent tokens (the existing ones if the table was there).
    """
    fresh = CreateTable(secrets.token_urlsafe(24), secrets.token_urlsafe(24), must_be_new=False)
    tokens: Tokens = await runtime.call(KIND, table, fresh)
    return tokens


async def _on_start(runtime: Runtime) -> None:
    tokens = await ensure_table(runtime)
    if not runtime.public_url:
        return  # no page served by this process (``agora stdio``): no link to print
    links = agent_links(runtime.public_url, DEFAULT_TABLE, tokens.agent)
    print(
        f"chess: human player: {human_url(runtime.public_url, DEFAULT_TABLE, tokens.human)}\n"
        f"chess: agent endpoint: {links.mcp_http} (WebSocket {links.mcp_websocket})",
        file=sys.stderr,
        flush=True,
    )


def toolset() -> Toolset:
    """The chess toolset: tools, tables, pages, and the default table at start-up."""
    return Toolset(
        name="chess",
        handlers=HANDLERS,
        migrations=MIGRATIONS,
        contract=None,
        tools=served_tools(),
        routes=ROUTES,
        pages=(("/play", "Chess: open a table and play an agent in the browser"),),
        endpoint_param="table",
        endpoint_query=("token",),
        on_start=_on_start,
        reject_issues=issue_rejection,
        reject_call=refuse_arguments,
        shape_failure=internal_failure,
        options={},  # chess takes no options
        instructions=INSTRUCTIONS,
    )
