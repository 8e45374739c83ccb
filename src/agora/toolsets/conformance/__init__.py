"""The fixtures the official MCP conformance suite calls, served only with ``--conformance``.

Tools, resources, prompts and completion named as ``@modelcontextprotocol/conformance``
expects (`scripts/conformance.sh` runs it). The fixtures keep no durable state and must
never be enabled on a production endpoint: they exist to prove the protocol layer, not to
do work. This module only assembles the toolset.
"""

from __future__ import annotations

from agora.toolsets.base import Toolset
from agora.toolsets.conformance.resources import PROMPTS, Watched, complete, resources
from agora.toolsets.conformance.schemas import TOOLS
from agora.toolsets.conformance.tools import handlers


def toolset() -> Toolset:
    """The conformance fixture toolset (one fresh watched resource per server)."""
    watched = Watched()
    return Toolset(
        name="conformance",
        contract=None,
        tools=TOOLS,
        handlers=handlers(watched),
        resources=resources(watched),
        prompts=PROMPTS,
        completion=complete,
        options={},  # the fixtures take no options
    )
