"""The outputSchemas of the four chess tools, generated from the reply Structs.

`OUTPUT_SCHEMAS` maps each tool name to a self-contained JSON Schema (every ``$ref`` inlined,
``"type": "object"`` at the top) produced by `msgspec.json.schema`. Every reply of a tool,
refusals included, validates against it: the schema is ``anyOf`` the tool's reply (``ok``
true) and `REJECTION_SCHEMA`, the body of a refused call (``ok`` false). A script copies them
into ``contracts/chess.json``. This module only computes schemas; it must not describe
shapes by hand beyond pinning ``ok``.
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


def _pinned_ok(struct: type[msgspec.Struct], ok: bool) -> dict[str, Any]:
    schema = self_contained_schema(struct)
    schema["properties"]["ok"] = {"const": ok}
    return schema


REJECTION_SCHEMA: Final = _pinned_ok(Rejection, False)


def reply_or_rejection(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The outputSchema of a tool answering ``struct``: that reply, or a refusal.

    Args:
        struct: The tool's reply Struct.

    Returns:
        An object schema whose ``anyOf`` is the reply (``ok`` true) or `REJECTION_SCHEMA`.
    """
    reply = _pinned_ok(struct, True)
    return {
        "type": "object",
        "title": reply.get("title", struct.__name__),
        "anyOf": [reply, REJECTION_SCHEMA],
    }


#: The reply Struct of each tool; `OUTPUT_SCHEMAS` wraps each with the refusal.
REPLIES: Final[dict[str, type[msgspec.Struct]]] = {
    "join_game": JoinReply,
    "get_board": BoardReply,
    "move_piece": MoveReply,
    "wait_for_turn": WaitReply,
}

OUTPUT_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    name: reply_or_rejection(struct) for name, struct in REPLIES.items()
}
