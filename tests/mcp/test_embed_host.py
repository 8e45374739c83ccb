"""What a Trio program embedding agora gets: the server stops gracefully however its block
ends (a cancellation of the host's scope too), exceptions leave `open_server` and
`Server.client` as themselves, and an in-process client reads what a network client reads.

The network clients are the official MCP SDK's, over Streamable HTTP on loopback, run by
tasks of the host program outside the scope that ends the server.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.server.app import load_toolsets
from agora.server.embed import open_server, serve
from agora.toolsets.base import ToolCall, Toolset

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.shared.exceptions import MCPError  # noqa: E402

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TOOL = {"name": "slow", "description": "Takes its time.", "inputSchema": {"type": "object"}}
GRACE = 1
TIMEOUT = 30


class Slow:
    """A tool that sleeps until cancelled, noting when it began and when it was cut."""

    def __init__(self) -> None:
        self.began = trio.Event()
        self.cancelled: float | None = None

    async def __call__(self, call: ToolCall) -> dict[str, Any]:
        self.began.set()
        try:
            await trio.sleep(TIMEOUT)
        except trio.Cancelled:
            self.cancelled = trio.current_time()
            raise
        return {}


async def _parked(server: Any) -> None:
    while not server.runtime.registry.parked():  # noqa: ASYNC110 - the server's own count
        await trio.sleep(0.01)


async def _clients(
    server: Any, nursery: trio.Nursery, results: dict[str, Any], *, slow_call: bool = True
) -> None:
    """A slow call (unless not ``slow_call``) and a parked chess long-poll, each from an SDK
    client of its own."""

    async def slow() -> None:
        async with mcp.Client(f"{server.url}/mcp/slowpoke", read_timeout_seconds=TIMEOUT) as c:
            try:
                results["slow"] = await c.call_tool("slow", {})
            except MCPError as exc:
                results["slow"] = exc

    async def wait() -> None:
        try:
            async with mcp.Client(f"{server.url}/mcp/chess", read_timeout_seconds=TIMEOUT) as c:
                reply = await c.call_tool("wait_for_turn", {"timeout_ms": 55_000})
                results["wait"] = reply.structured_content
        except Exception:
            # Answered, the SDK's client then ends its session on a server that may be gone
            # by then, and says so: only the answer is under test.
            if "wait" not in results:
                raise

    if slow_call:
        nursery.start_soon(slow)
    nursery.start_soon(wait)


def _check_graceful(results: dict[str, Any], tool: Slow, cancelled_at: float, left: float) -> None:
    # The parked long-poll was answered at once, as a shutdown answers it...
    assert results["wait"]["statusCode"] == "WAIT_TIMEOUT", results["wait"]
    assert results["wait"]["shuttingDown"] is True
    # ...and the slow call had its grace, then was cut and answered -32603.
    assert isinstance(results["slow"], MCPError), results["slow"]
    assert results["slow"].error.code == -32603
    assert "may or may not have been saved" in results["slow"].error.message
    assert tool.cancelled is not None
    assert cancelled_at + GRACE <= tool.cancelled <= left


def _config(tmp_path: Any) -> Config:
    # The default linger: the SDK's client lists the tools after a call's reply (to check
    # the result against the tool's output schema), a request that follows a reply.
    return Config(port=0, db=str(tmp_path / "host.db"), grace_seconds=GRACE)


async def test_a_host_cancelling_the_block_gets_the_graceful_shutdown(tmp_path):
    tool = Slow()
    sets = [*load_toolsets(["chess"]), Toolset("slowpoke", {"slow": tool}, contract=None,
                                               tools=[TOOL])]  # fmt: skip
    results: dict[str, Any] = {}
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as host:
            with trio.CancelScope() as scope:
                async with open_server(_config(tmp_path), toolsets=sets) as server:
                    await _clients(server, host, results)
                    await tool.began.wait()
                    await _parked(server)
                    cancelled_at = trio.current_time()
                    scope.cancel()
                    await trio.sleep_forever()
            left = trio.current_time()
    # The host's Cancelled came back to the host's scope as itself, not in a group.
    assert scope.cancelled_caught
    _check_graceful(results, tool, cancelled_at, left)


async def test_cancelling_serve_stops_it_gracefully(tmp_path):
    # `serve` stops only by cancellation: that must be its graceful way out.
    config = _config(tmp_path)
    config.toolsets = ["chess"]
    results: dict[str, Any] = {}
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as host, trio.open_nursery() as running:
            server = await running.start(serve, config)
            await _clients(server, host, results, slow_call=False)
            await _parked(server)
            running.cancel_scope.cancel()
    assert results["wait"]["statusCode"] == "WAIT_TIMEOUT", results
    assert results["wait"]["shuttingDown"] is True


async def test_a_toolset_on_start_error_leaves_as_itself_naming_the_toolset():
    async def on_start(runtime: Any) -> None:
        raise FileNotFoundError("notes.key")

    sets = [Toolset("notes", {"slow": Slow()}, contract=None, tools=[TOOL], on_start=on_start)]
    with trio.fail_after(TIMEOUT), pytest.raises(FileNotFoundError) as info:
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False):
            pytest.fail("the server started")
    assert type(info.value) is FileNotFoundError  # not in a group
    assert any("toolset 'notes'" in note for note in info.value.__notes__)


async def test_an_error_raised_in_an_in_process_client_block_leaves_as_itself():
    sets = [Toolset("notes", {"slow": Slow()}, contract=None, tools=[TOOL])]

    async def host_program() -> None:
        async with (
            open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()
            raise KeyError("the host's own")

    with trio.fail_after(TIMEOUT), pytest.raises(KeyError) as info:
        await host_program()
    assert type(info.value) is KeyError  # not in the client's nursery's group


async def test_an_in_process_client_reads_json_not_the_servers_objects():
    state = {"items": ["a"]}

    async def get(call: ToolCall) -> dict[str, Any]:
        return state

    async def when(call: ToolCall) -> dict[str, Any]:
        return {"at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "n": float("nan")}

    tools = [{"name": n, "description": "d", "inputSchema": {"type": "object"}}
             for n in ("get", "when")]  # fmt: skip
    sets = [Toolset("mine", {"get": get, "when": when}, contract=None, tools=tools)]
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server,
            server.client("/mcp/mine") as client,
        ):
            await client.initialize()
            got = await client.call_tool("get")
            got["structuredContent"]["items"].append("the client's")
            assert state == {"items": ["a"]}  # the server's own state is not the client's
            at = await client.call_tool("when")
    assert at["structuredContent"] == {"at": "2026-01-01T00:00:00Z", "n": None}
