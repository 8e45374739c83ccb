"""The outputSchemas of the four chess tools, generated from the reply Structs.

`OUTPUT_SCHEMAS` maps each tool name to a self-contained JSON Schema (every ``$ref`` inlined,
``"type": "object"`` at the top) produced by `msgspec.json.schema`; `REJECTION_SCHEMA` is
the body of a refused call. A script copies them into ``contracts/chess.json``. This module
only computes schemas; it must not describe shapes by hand.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from agora.toolsets.chess.replies import BoardReply, JoinReply, MoveReply, Rejection, WaitReply


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            resolved = _inline(defs[ref.removeprefix("#/$defs/")], defs)
            extra = {k: _inline(v, defs) for k, v in node.items() if k not in ("$ref", "$defs")}
            return {**resolved, **extra}
        return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    return node


def self_contained_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``struct`` with every ``$ref`` replaced by its definition.

    Args:
        struct: A Struct type without recursive fields.

    Returns:
        An object schema with no ``$ref`` and no ``$defs``.
    """
    raw = msgspec.json.schema(struct)
    schema: dict[str, Any] = _inline(raw, raw.get("$defs", {}))
    return schema


OUTPUT_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "join_game": self_contained_schema(JoinReply),
    "get_board": self_contained_schema(BoardReply),
    "move_piece": self_contained_schema(MoveReply),
    "wait_for_turn": self_contained_schema(WaitReply),
}

REJECTION_SCHEMA: Final = self_contained_schema(Rejection)
