"""MCP messages as a raw end-to-end client writes them, and checks on the results it reads.

Plain data and pure functions: this module must not start processes or open connections.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import jsonschema

if TYPE_CHECKING:
    from collections.abc import Mapping

CHESS_TOOLS = {"join_game", "get_board", "move_piece", "wait_for_turn"}

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def jsonl(*messages: Mapping[str, Any]) -> bytes:
    """Messages as a stdio client writes them: one JSON text per line."""
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def nested(levels: int) -> dict[str, Any]:
    """A ``params`` object that is ``levels`` containers deep (itself being level 1)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def check_structured(tool: dict[str, Any], result: dict[str, Any]) -> None:
    """A successful result whose structuredContent validates against the tool's outputSchema
    and is mirrored as a JSON text block."""
    assert not result.get("isError"), result
    structured = result["structuredContent"]
    jsonschema.Draft202012Validator(tool["outputSchema"]).validate(structured)
    assert json.loads(result["content"][0]["text"]) == structured
