"""What a router call may ask the store to keep: the bounds the contract's core inputs leave out.

The twelve core tools serve the seed's schemas as they are, with no ``maxLength`` on an
identifier or a text, and a run keeps what it is given: the idempotency key (on the run and
again on its ledger row), the correlation id, the context, the objective. Before a handler
runs, every string of the arguments is checked by what its nearest key names:

- an identifier (a ``context`` field, or a key ending in ``_id``, ``_ids``, ``_key``, ``_ref``
  or ``_refs``): at most `MAX_IDENTIFIER` characters and no control character. A control
  character is never part of a real id, and ``\\x1f`` in a session id would let a caller
  without a token name another principal's scoped session (`ownership.SEPARATOR`).
- any other text (the objective, a workspace path, a reason): at most `MAX_TEXT` characters.

A breach is answered as the schema's own breaches are (``invalid-arguments``, naming the field
and the rule), before anything is read or written. The Memory tools' schemas already bound
their identifiers more tightly (a pattern of at most 128 characters); this adds nothing there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from agora.errors import ToolError
from agora.mcp.validation import ValidationIssue
from agora.toolsets.router.replies import argument_rejection

if TYPE_CHECKING:
    from agora.toolsets.base import Handler, ToolCall

#: Longest identifier (session id, idempotency key, correlation id, run id, ref), in characters.
MAX_IDENTIFIER: Final = 256
#: Longest other text (an objective, a path), in characters: the debate's bound on a body.
MAX_TEXT: Final = 32_768
_ID_SUFFIXES: Final = ("_id", "_ids", "_key", "_ref", "_refs")
_LONGEST_ID: Final = f"must be at most {MAX_IDENTIFIER} characters"
_LONGEST_TEXT: Final = f"must be at most {MAX_TEXT} characters"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def bounded(handler: Handler) -> Handler:
    """``handler`` behind the bounds: a breach is refused before it runs."""

    async def checked(call: ToolCall) -> dict[str, Any]:
        issue = breach(call.args, ())
        if issue is not None:
            raise ToolError(argument_rejection([issue]))
        result: dict[str, Any] = await handler(call)
        return result

    return checked


def breach(
    value: Any, path: tuple[str | int, ...], identifier: bool = False
) -> ValidationIssue | None:
    """The first string under ``value`` (at ``path``) past its bound, or None."""
    if isinstance(value, str):
        if identifier:
            if len(value) > MAX_IDENTIFIER:
                return ValidationIssue(path, "maxLength", _LONGEST_ID)
            if _CONTROL.search(value):
                return ValidationIssue(path, "pattern", "must not contain a control character")
        elif len(value) > MAX_TEXT:
            return ValidationIssue(path, "maxLength", _LONGEST_TEXT)
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = identifier or (path == ("context",)) or key.endswith(_ID_SUFFIXES)
            found = breach(item, (*path, key), inner and not isinstance(item, dict))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = breach(item, (*path, index), identifier)
            if found is not None:
                return found
    return None
