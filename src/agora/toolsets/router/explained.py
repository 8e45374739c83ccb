"""What a refused argument should have been, said beyond the schema's bare rule.

An inputSchema refusal names the rule an argument broke: ``must be >= 1``, ``must match at
least one of the allowed forms``, a regex. An agent then knows what was wrong but not what to
send: which forms are allowed, which earlier answer holds the value, how to compute a digest
it makes itself. `explained` rewords a top-level argument's refusal: an ``anyOf`` lists its
forms in words, a ``sha256:`` pattern is said in words, and the argument's purpose follows
(the served description of a Memory argument, `described.ARGUMENTS`, or `HINTS`). Pure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.validation import ValidationIssue
from agora.toolsets.router.described import ARGUMENTS

if TYPE_CHECKING:
    from collections.abc import Mapping

SHA256: Final = "^sha256:[0-9a-f]{64}$"
_DIGEST_WORDS: Final = '"sha256:" followed by 64 lowercase hex digits'

_FINGERPRINT: Final = (
    "a digest you compute yourself over whatever material context should void the consent"
    ' when it changes: "sha256:" + the SHA-256 hex digest of, e.g., the canonical JSON of the'
    ' objective, phase_id, support_skill_ids and git HEAD (in Python: "sha256:" +'
    " hashlib.sha256(json.dumps(context, sort_keys=True, separators=(',', ':')).encode())"
    ".hexdigest()); the router compares it byte for byte and never interprets it"
)

#: Tool -> argument -> what to send, for arguments whose contract description does not say.
HINTS: Final[dict[str, dict[str, str]]] = {
    "propose_support_consent": {"context_fingerprint": _FINGERPRINT},
    "transition_support_consent": {
        "current_context_fingerprint": "the proposal's context_fingerprint recomputed now the"
        " same way (a different value is consent-stale): " + _FINGERPRINT,
    },
}


def _form(branch: Mapping[str, Any]) -> str:
    if "const" in branch:
        return json.dumps(branch["const"])
    if branch.get("pattern") == SHA256:
        return _DIGEST_WORDS
    if branch.get("type") == "null":
        return "null"
    if "enum" in branch:
        return "one of " + ", ".join(json.dumps(v) for v in branch["enum"])
    return f"a {branch.get('type', 'value')}"


def explained(tool: str, schema: Mapping[str, Any], issue: ValidationIssue) -> ValidationIssue:
    """``issue`` (of ``tool``'s arguments against its inputSchema ``schema``), a top-level
    argument's said with its allowed forms and what to send; any other as it is."""
    if len(issue.path) != 1 or issue.rule in ("required", "additionalProperties"):
        return issue
    name = issue.path[0]
    prop = schema.get("properties", {}).get(name)
    if not isinstance(name, str) or not isinstance(prop, dict):
        return issue
    message = issue.message
    if issue.rule == "anyOf" and prop.get("anyOf"):
        message = "must be " + " or ".join(_form(b) for b in prop["anyOf"])
    elif issue.rule == "pattern" and prop.get("pattern") == SHA256:
        message = f"must be {_DIGEST_WORDS}"
    hint = HINTS.get(tool, {}).get(name) or ARGUMENTS.get(tool, {}).get(name)
    if hint:
        message += f". {hint[0].upper()}{hint[1:]}"
    return ValidationIssue(issue.path, issue.rule, message)
