"""The outputSchema each router tool declares: the contract's result, or a refusal.

The contract's outputSchemas are closed and describe results only, while every refusal of a
router tool is an ``isError`` result with a structured body (`agora.toolsets.router.replies`:
``ok: false``, a ``code``, ...). MCP asks a tool's structured results to conform to its
outputSchema, and the TypeScript SDK's client (Claude Code's, Cursor's) checks every
structuredContent it gets against the schema it listed, an ``isError`` one too: each router
refusal reached such a host as the client's own error ("Structured content does not match
the tool's output schema"), and the model never read what was refused or what to do. So
each tool declares ``{"type": "object", "anyOf": [the contract's result, REFUSAL]}``: a
result is held to the contract exactly as before, a refusal to the shape all of them share.

The contract's annotations leave ``destructiveHint`` and ``openWorldHint`` out (but
``purge_workflow_memory``'s ``destructiveHint: true``), and MCP's defaults for a missing hint
are the worst case, destructive and open-world: a client would treat recording an event like
deleting data. No router tool reaches outside the server, and only the purge deletes, so
every tool declares both hints, false unless the contract says otherwise.
"""

from __future__ import annotations

from typing import Any, Final

from agora.toolsets.router.replies import REFUSAL_CODES, UNAVAILABLE

#: The codes of the refusals made outside `agora.toolsets.router.replies.refusal`.
OTHER_CODES: Final = ("internal-error", "invalid-arguments")

#: What every router refusal has: ``ok: false`` and its ``code``, with the fields each code
#: adds (a ``message`` but for ``capability-unavailable``, which names its ``reason`` and
#: ``fallback_action``; ``retryable``; the versions of a conflict; an ``internal-error``'s
#: ``correlation_id`` and ``state_changed``) left open.
REFUSAL: Final[dict[str, Any]] = {
    "title": "RouterRefusal",
    "description": (
        "An isError answer: the call was refused or failed (code), nothing changed unless "
        "state_changed says otherwise; retryable says whether calling again can help."
    ),
    "type": "object",
    "required": ["ok", "code"],
    "properties": {
        "ok": {"const": False},
        "code": {
            "enum": sorted({*REFUSAL_CODES, UNAVAILABLE, "internal-error", "invalid-arguments"})
        },
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
        "state_changed": {"enum": [False, "unknown"]},
        "correlation_id": {"type": "string"},
    },
}


#: The hints every router tool declares unless the contract gives its own.
HINTS: Final = {"destructiveHint": False, "openWorldHint": False}


def declared(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` (a tools/list entry from the contract) with the outputSchema it declares:
    its result's schema or `REFUSAL` (the contract's ``$schema`` kept at the top), and
    `HINTS` beside its own annotations."""
    tool["annotations"] = HINTS | tool.get("annotations", {})
    result = tool.get("outputSchema")
    if result is None:
        return tool
    result = dict(result)
    top: dict[str, Any] = {}
    if "$schema" in result:
        top["$schema"] = result.pop("$schema")
    tool["outputSchema"] = top | {"type": "object", "anyOf": [result, REFUSAL]}
    return tool
