"""Arguments a planning tool's schema does not name: served, and said to be ignored.

The contract's twelve planning tools (``sync_runtime_context`` ... ``export_router_artifact``)
leave their argument objects open (no ``additionalProperties: false``, where the Memory tools
close theirs), so a call with an argument they do not name is valid and runs. Refusing it would
contradict the declared schema, and would break a client of a later contract revision that
sends an optional argument this one lacks (``routing_context`` is such an addition:
"Omission preserves the V2 beta.1 request contract"). But a misspelt argument
(``routing_contxt``) would otherwise be dropped unseen: the plan is made without it. So every
answer names each such argument, with the closest one the tool takes:

- a result: in a text block after the JSON copy (`agora.mcp.results.Guided`; the closed
  outputSchemas have no field for it), before any note the tool adds itself;
- a refusal (an ``isError`` body the tool's own, not its outputSchema): in ``warnings``, a
  refusal of the arguments by the inputSchema too (`agora.toolsets.router.bounds.rejection`,
  before any handler runs): an agent fixing a missing argument learns of the ignored one at
  the same time.

The argument named as the one meant is `agora.toolsets.router.meant.meant`'s: a misspelling's,
another word's (``goal`` for ``objective``) or a nested field's (``workspace_root``, which
``plan_work`` takes in ``routing_context``).

The argument is otherwise ignored by the tool, but it is still part of the request: it counts
in the idempotency digest (`agora.toolsets.router.digests.request_digest`), so resending the
call without it, or corrected, under the same key is an ``idempotency-conflict`` (use a new key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.errors import ToolError
from agora.logsafe import loggable
from agora.mcp.contracts import load_contract
from agora.mcp.results import Guided
from agora.toolsets.router.meant import meant

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from agora.toolsets.base import Handler, ToolCall

#: At most this many unknown arguments are named (and each name cut to `_LONGEST` characters):
#: a warning echoes only a little of what the caller sent.
_MOST: Final = 8
_LONGEST: Final = 64


def _open_tools() -> dict[str, Mapping[str, Any]]:
    contract = load_contract("router")
    names = {**{name: name for name in contract.tools}, **contract.aliases}
    known = {}
    for name, canonical in names.items():
        schema = contract.tools[canonical].input_schema
        if schema.get("additionalProperties", True) is not False:
            known[name] = schema.get("properties", {})
    return known


#: The arguments (their schemas by name) each tool with an open argument object takes, by
#: canonical name and alias.
KNOWN: Final = _open_tools()


def unknown_arguments(tool: str, arguments: Iterable[str]) -> list[str]:
    """The warnings for the top-level ``arguments`` that ``tool``'s schema does not name."""
    known = KNOWN.get(tool)
    if known is None:
        return []
    extra = [name for name in arguments if name not in known]
    warnings = [_warning(name, known) for name in extra[:_MOST]]
    if len(extra) > _MOST:
        warnings.append(f"and {len(extra) - _MOST} more unknown arguments, also ignored")
    return warnings


def _warning(name: str, known: Mapping[str, Any]) -> str:
    close = meant(name, known)
    hint = f"did you mean {close!r}?" if close else f"this tool takes {', '.join(sorted(known))}"
    return f"ignored unknown argument '{loggable(name, _LONGEST)}' ({hint})"


def noting(handler: Handler) -> Handler:
    """``handler`` whose answers name the arguments its tool's schema does not."""

    async def noted(call: ToolCall) -> dict[str, Any]:
        warnings = unknown_arguments(call.tool, call.args)
        if not warnings:
            result: dict[str, Any] = await handler(call)
            return result
        try:
            result = await handler(call)
        except ToolError as refused:
            refused.body = warned(refused.body, warnings)
            raise
        them = "it" if len(warnings) == 1 else "them"
        note = f"Warning: {'; '.join(warnings)}. The call was made without {them}."
        if isinstance(result, Guided):
            return Guided(result, f"{note}\n{result.guidance}")
        return Guided(result, note)

    return noted


def warned(body: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """A refusal's ``body`` with ``warnings`` added to its own, if any (an ``internal-error``
    body is left as it is: its schema is closed)."""
    if not warnings or body.get("code") == "internal-error":
        return body
    return {**body, "warnings": [*body.get("warnings", ()), *warnings]}
