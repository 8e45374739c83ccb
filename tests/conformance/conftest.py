"""Fixtures for the conformance fixture tests: an in-process session on a fixtures-only server.

`client` declares no client capabilities; `capable_client` declares sampling and
elicitation, so tools may send it server-to-client requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agora.config import Config
from agora.server.embed import open_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.server.embed import InProcessClient

CONFIG = Config(db=":memory:", port=0, conformance=True, toolsets=["conformance"])


async def _session(capabilities: dict[str, Any]) -> AsyncIterator[InProcessClient]:
    async with open_server(CONFIG, listen=False) as server, server.client("/mcp") as client:
        reply = await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "fixture-test", "version": "0"},
            },
        )
        assert "result" in reply
        await client.notify("notifications/initialized")
        yield client


@pytest.fixture
async def client() -> AsyncIterator[InProcessClient]:
    """An initialized session whose client declared no capabilities."""
    async for c in _session({}):
        yield c


@pytest.fixture
async def capable_client() -> AsyncIterator[InProcessClient]:
    """An initialized session whose client can sample and elicit."""
    async for c in _session({"sampling": {}, "elicitation": {}}):
        yield c
