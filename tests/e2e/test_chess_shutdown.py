"""Chess ``wait_for_turn`` parked over a real connection when the server shuts down gracefully.

Shutdown answers a parked wait at once with an ordinary WAIT_TIMEOUT (the contract's status
codes are fixed), marked ``shuttingDown: true`` with a next action that says to wait a few
seconds and call again (the client reconnects by itself), so the agent can tell the server
going away from a real timeout, which carries no mark. The agent is the official ``mcp`` SDK
client: against ``agora serve`` stopped with SIGTERM, and against an embedded server leaving
its block.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from chess_players import SdkAgent
from chess_server import agora_serve, terminate_when_in_flight

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.chess import ensure_table

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: The parked wait's own timeout: far beyond how long a shutdown may take to answer it.
PARKED_MS = 30_000
#: Seconds within which shutdown must answer the parked wait (well under ``PARKED_MS``).
ANSWERED_WITHIN = 10


@asynccontextmanager
async def _agent_at(path: Path) -> AsyncIterator[tuple[Any, SdkAgent]]:
    """``agora serve`` on the database ``path`` and an SDK agent seated at its table, its
    tools listed (as hosts list them when they connect)."""
    async with (
        agora_serve(path) as server,
        mcp.Client(server.mcp_url(), read_timeout_seconds=30) as client,
    ):
        agent = SdkAgent(client)
        await agent.list_tools()
        yield server, agent


def _assert_cut_short_by_shutdown(reply: dict[str, Any], args: dict[str, Any]) -> None:
    assert reply["statusCode"] == "WAIT_TIMEOUT", reply
    assert reply["shuttingDown"] is True, reply
    assert "shutting down" in reply["message"]
    action = reply["nextAction"]
    assert (action["tool"], action["arguments"]) == ("wait_for_turn", args)
    assert "wait a few seconds and call wait_for_turn again" in action["instruction"]


async def test_sigterm_answers_a_parked_wait_marked_shutting_down(tmp_path):
    with trio.fail_after(45):
        async with _agent_at(tmp_path / "agora.db") as (server, agent):
            joined = await agent.ok("join_game")
            assert joined["statusCode"] == "SIDE_CHOICE_REQUIRED"
            args = dict(joined["nextAction"]["arguments"])
            async with trio.open_nursery() as nursery:
                nursery.start_soon(terminate_when_in_flight, server, 1)
                start = trio.current_time()
                # Validated against the served outputSchema, text mirror included.
                reply = await agent.ok("wait_for_turn", {**args, "timeout_ms": PARKED_MS})
            assert trio.current_time() - start < ANSWERED_WITHIN
    _assert_cut_short_by_shutdown(reply, args)
    assert reply["fen"] == joined["fen"]
    served = agent.validators["wait_for_turn"].schema["anyOf"][0]["properties"]
    assert served["shuttingDown"]["enum"] == [True]  # declared, not merely tolerated


async def test_a_real_timeout_is_not_marked_shutting_down(tmp_path):
    with trio.fail_after(45):
        async with _agent_at(tmp_path / "agora.db") as (_, agent):
            reply = await agent.ok("wait_for_turn", {"wait_for_human": True, "timeout_ms": 1000})
    assert reply["statusCode"] == "WAIT_TIMEOUT", reply
    assert "shuttingDown" not in reply
    assert reply["nextAction"]["tool"] == "wait_for_turn"
    assert "shutting down" not in reply["nextAction"]["instruction"]


async def _park(url: str, parked: trio.Event, got: dict[str, Any]) -> None:
    async with mcp.Client(url, read_timeout_seconds=30) as client:
        agent = SdkAgent(client)
        await agent.list_tools()
        parked.set()
        args = {"wait_for_human": True, "timeout_ms": PARKED_MS}
        got["reply"] = await agent.ok("wait_for_turn", args)
        got["at"] = trio.current_time()


async def _until_parked(server: Any) -> None:
    """Until the agent's wait is parked on its table."""
    while server.runtime.registry.parked() == 0:  # noqa: ASYNC110 (a count, nothing to await)
        await trio.sleep(0.01)


async def test_an_embedded_server_closing_answers_a_parked_wait_marked_shutting_down():
    got: dict[str, Any] = {}
    parked = trio.Event()
    with trio.fail_after(20):
        async with (
            trio.open_nursery() as nursery,
            open_server(Config(port=0, db=":memory:", toolsets=["chess"])) as server,
        ):
            tokens = await ensure_table(server.runtime)
            url = f"{server.url}/mcp/chess/default?token={tokens.agent}"
            nursery.start_soon(_park, url, parked, got)
            await parked.wait()
            await _until_parked(server)
            start = trio.current_time()
    assert got["at"] - start < ANSWERED_WITHIN
    _assert_cut_short_by_shutdown(got["reply"], {"wait_for_human": True})
