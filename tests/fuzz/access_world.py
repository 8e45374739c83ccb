"""The access tests' world: a real ``agora serve`` with every toolset, reached by the SDK.

`World.start` writes an agora.toml with five principals (alice: conductor scope; bob and
dave: plain participants; all three granted project ``shared``; olga granted only project
``other``; stella: star scope, no project), the router's evaluation adapter (the example
one, on a copy of its sealed cases) and a Memory policy with an authorized workspace that
captures, then runs ``agora serve`` on a loopback port.
`sdk_client` opens the official ``mcp`` SDK client for one principal over Streamable HTTP
with its bearer token, and `answer` turns any outcome of ``tools/call`` (a result, or a
JSON-RPC error the SDK raises) into one comparable dictionary.
"""

from __future__ import annotations

import json
import shutil
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))

from e2e_config import principal_toml
from e2e_process import AgoraProcess
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "router-adapter"
TOKENS = {
    "alice": "access-alice-token",
    "bob": "access-bob-token",
    "dave": "access-dave-token",
    "olga": "access-olga-token",
    "stella": "access-stella-token",
}
SCOPES = {"alice": '["conductor"]', "stella": '["star"]'}
PROJECTS = {"olga": '["other"]', "stella": "[]"}
#: The authorization the adapter accepts.
AUTH = "auth-access"
TIMEOUT = 30.0


@dataclass
class World:
    """The server and the paths the scenario names (workspace root)."""

    server: AgoraProcess
    workspace: Path

    @property
    def url(self) -> str:
        """The endpoint serving every toolset."""
        return f"{self.server.url}/mcp"

    @classmethod
    def start(cls, directory: Path) -> World:
        """Write the config and start the server."""
        cases = directory / "cases"
        shutil.copytree(EXAMPLE / "cases", cases)
        policy = directory / "memory-policy.json"
        policy.write_text(
            json.dumps(
                {
                    "format": "agora-router-memory-policy/1",
                    "ceiling": "reviewed",
                    "allowed_targets": ["managed-personal"],
                }
            )
        )
        workspace = directory / "ws"
        (workspace / ".codex").mkdir(parents=True)
        (workspace / ".codex" / "workflow-skill-router-memory.json").write_text(
            json.dumps({"format": "agora-router-memory-request/1", "requested_mode": "observe"})
        )
        router = (
            "[options.router]\n"
            f"workspace_roots = [{json.dumps(str(directory))}]\n"
            f"memory_policy = {json.dumps(str(policy))}\n"
            "[options.router.adapter]\n"
            f"command = {json.dumps([sys.executable, str(EXAMPLE / 'adapter.py')])}\n"
            f"cases_dir = {json.dumps(str(cases))}\n"
            f'authorizations = ["{AUTH}"]\n'
            "timeout_seconds = 20\n"
            "max_memory_mb = 512\n"
        )
        people = "".join(
            principal_toml(
                name,
                token,
                scopes=SCOPES.get(name, "[]"),
                projects=PROJECTS.get(name, '["shared"]'),
            )
            for name, token in TOKENS.items()
        )
        config = directory / "agora.toml"
        config.write_text(people + router)
        server = AgoraProcess("--db", str(directory / "access.db"), "--config", str(config))
        server.start()
        return cls(server, workspace)

    def stop(self) -> None:
        """SIGTERM the server; it must exit cleanly."""
        self.server.assert_clean_exit(self.server.stop())


@asynccontextmanager
async def sdk_client(world: World, name: str) -> AsyncIterator[Client]:
    """The official SDK client of principal ``name`` (its bearer token) on every toolset;
    ``anonymous`` sends no token."""
    headers = {} if name == "anonymous" else {"Authorization": f"Bearer {TOKENS[name]}"}
    async with create_mcp_http_client(headers=headers) as http_client:
        transport = streamable_http_client(world.url, http_client=http_client)
        async with Client(transport, read_timeout_seconds=TIMEOUT) as client:
            await catalog(client)  # every page: the SDK then checks each structured result
            yield client


async def answer(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The whole answer to one tools/call, as a dictionary: the result (isError,
    structuredContent, content) or the JSON-RPC error (code, message, data)."""
    try:
        result = await client.call_tool(tool, args)
    except MCPError as exc:
        return {"jsonrpc_error": exc.error.model_dump(by_alias=True, exclude_none=True)}
    return result.model_dump(by_alias=True, exclude_none=True)


async def read_answer(client: Client, uri: str) -> dict[str, Any]:
    """The whole answer to resources/read of ``uri`` (the result or the JSON-RPC error)."""
    try:
        result = await client.read_resource(uri, cache_mode="bypass")
    except MCPError as exc:
        return {"jsonrpc_error": exc.error.model_dump(by_alias=True, exclude_none=True)}
    return dict(result.model_dump(by_alias=True, exclude_none=True))


async def catalog(client: Client) -> list[str]:
    """Every tool the server lists (all pages)."""
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


def missing_id(entity_id: str) -> str:
    """The same id with its last eight hex digits changed (same pattern, no such entity)."""
    head, tail = entity_id[:-8], entity_id[-8:]
    return head + "".join("0123456789abcdef"[(int(c, 16) + 7) % 16] for c in tail)


def blank(reply: dict[str, Any], ids: set[str]) -> str:
    """``reply`` as sorted JSON text with each of ``ids`` replaced by ``<id>``."""
    text = json.dumps(reply, sort_keys=True)
    for entity_id in sorted(ids, key=len, reverse=True):
        text = text.replace(entity_id, "<id>")
    return text
