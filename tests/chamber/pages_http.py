"""A chamber server on a real loopback socket, in the test's own Trio run, and its pages.

`open_pages` serves ``--toolsets chamber`` on a ``:memory:`` store with a `FakeWall` the test
moves; cards are made with real tool calls over an in-process MCP client (`Pages.card`) and
the pages are read over HTTP (`Pages.get`, urllib in a worker thread, no proxy).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio
from chamber_agent import ENTRY

from agora.config import Config
from agora.runtime.clock import Clock
from agora.server.embed import open_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.runtime.clock import FakeWall
    from agora.server.embed import Server
    from agora.server.inprocess import InProcessClient

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Reply:
    """One HTTP response."""

    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


def _fetch(url: str, accept: str) -> Reply:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with _OPENER.open(request, timeout=20) as r:
            return Reply(r.status, r.headers.get("content-type", ""), r.read())
    except urllib.error.HTTPError as refused:
        with refused:
            return Reply(refused.code, refused.headers.get("content-type", ""), refused.read())


@dataclass
class Pages:
    """The running server, and a client that makes cards on it."""

    server: Server
    mcp: InProcessClient

    @property
    def url(self) -> str:
        return self.server.url

    async def get(self, path: str, accept: str = "application/json") -> Reply:
        """``GET path`` over HTTP."""
        return await trio.to_thread.run_sync(_fetch, self.url + path, accept)

    async def card(self, **entry: Any) -> dict[str, Any]:
        """Enter a room and seal it at once (a failed card); the seal's reply."""
        entered = await self.mcp.call_tool("enter_open_challenge", {**ENTRY, **entry})
        handle = entered["structuredContent"]["attempt_handle"]
        sealed = await self.mcp.call_tool("seal_attempt", {"challenge_handle": handle})
        return sealed["structuredContent"]  # type: ignore[no-any-return]


@asynccontextmanager
async def open_pages(wall: FakeWall) -> AsyncIterator[Pages]:
    """A chamber server on 127.0.0.1 (no room pool), its clock ``wall``."""
    config = Config(
        host="127.0.0.1",
        port=0,
        db=":memory:",
        toolsets=["chamber"],
        options={"chamber": {"room_pool_size": 0}},
    )
    async with (
        open_server(config, clock=Clock(wall)) as server,
        server.client("/mcp/chamber") as mcp,
    ):
        await mcp.initialize()
        yield Pages(server, mcp)
