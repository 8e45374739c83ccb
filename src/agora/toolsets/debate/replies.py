"""How debate results look: message rows rendered for replies, and error conversion.

Every failure leaves as a `ToolError` whose body is ``{"ok": false, "error": <code>,
"message": ..., ...}``; the uniform not-found body comes from `access.denied`. Argument
rejections (schema failures) use the same envelope with code ``invalid_arguments``.
`with_refusal` widens a tool's outputSchema to ``anyOf`` its reply and the contract's one
``refusal`` schema, so refusals validate too. This module renders; it decides nothing.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from agora.errors import ToolError
from agora.toolsets.debate.rules import UUID_RE

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

    from agora.errors import Failure
    from agora.mcp.validation import ValidationIssue
    from agora.toolsets.debate.model import MsgMeta
    from agora.toolsets.debate.rules import DebateError


def tool_error(err: DebateError) -> ToolError:
    """The tool error carrying a debate rejection's body."""
    return ToolError(dict(err.body), text=json.dumps(err.body, separators=(",", ":")))


def argument_rejection(issues: Sequence[ValidationIssue]) -> dict[str, Any]:
    """The structured body of an invalid-arguments error (shape checks, before ownership):
    one ``{field, rule, message}`` per problem."""
    return {
        "ok": False,
        "error": "invalid_arguments",
        "message": "the arguments do not match the tool's inputSchema; fix them and call again",
        "problems": [issue.to_dict() for issue in issues],
    }


def internal_failure(failure: Failure) -> dict[str, Any]:
    """The refusal body of a call that failed inside the server (`Toolset.shape_failure`):
    code ``internal_error``, what to do next, ``retryable`` and the ``correlation_id`` to
    quote, as the other toolsets' refusals carry them (the text alone said it before)."""
    if failure.outcome_unknown:  # (its message says it may or may not have been saved)
        then = "read the topic before posting again"
    elif failure.retryable:  # (its message says nothing was changed)
        disk = " once the server's disk takes writes again" if failure.cause else ""
        then = f"call again{disk}"
    else:
        then = f"report correlation id {failure.correlation_id}"
    return {
        "ok": False,
        "error": "internal_error",
        "message": f"{failure.message}; {then}",
        "retryable": failure.retryable,
        "correlation_id": failure.correlation_id,
    }


def with_refusal(listing: dict[str, Any], refusal: Mapping[str, Any]) -> dict[str, Any]:
    """A tools/list entry whose outputSchema also accepts ``refusal`` (an ``isError`` body).

    Args:
        listing: The entry from the contract (`ToolSpec.to_mcp`); changed in place.
        refusal: The contract's shared ``refusal`` schema.

    Returns:
        ``listing``, its ``outputSchema`` now ``anyOf`` the reply and the refusal.
    """
    reply = listing.get("outputSchema")
    if reply is not None:
        listing["outputSchema"] = {"type": "object", "anyOf": [reply, copy.deepcopy(dict(refusal))]}
    return listing


def message(r: Any | tuple[Any, ...]) -> dict[str, Any]:
    """A message row (`sql.MESSAGE_COLUMNS`) as the shared message shape; one posted by the
    conductor under an override (as the role it named, or through a binding an override
    installed) also carries ``conductor_override_msg_id``: its author is not the role's
    participant, and the role string alone would not say so."""
    standing = None if r[10] is None else bool(r[10])
    payload = None if r[12] is None else json.loads(r[12])
    shown = {
        "msg_id": r[0],
        "topic_id": r[1],
        "ts": r[2],
        "role": r[3],
        "author_session_id": r[4],
        "priority": r[5],
        "kind": r[6],
        "body": r[7],
        "reply_to": r[8],
        "vehicle": r[9],
        "standing": standing,
        "recipients": [_recipient(k) for k in json.loads(r[11])],
        "payload": payload,
        "body_mode": r[13],
    }
    if r[14] is not None:
        shown["conductor_override_msg_id"] = r[14]
    return shown


def rendered(
    topic_id: str,
    meta: MsgMeta,
    body: str,
    author_session_id: str | None,
    vehicle: str,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """A message being appended, in the shape `message` gives its stored row."""
    payload = extra.get("payload")
    shown = {
        "msg_id": meta.msg_id,
        "topic_id": topic_id,
        "ts": meta.ts,
        "role": meta.role,
        "author_session_id": author_session_id,
        "priority": meta.priority,
        "kind": meta.kind,
        "body": body,
        "reply_to": meta.reply_to,
        "vehicle": vehicle,
        "standing": meta.standing,
        "recipients": [_recipient(k) for k in meta.recipients],
        "payload": None if payload is None else json.loads(payload),
        "body_mode": extra.get("body_mode"),
    }
    override = extra.get("override_msg_id")
    if override is not None:
        shown["conductor_override_msg_id"] = override
    return shown


def sessions_named(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The session ids shown messages name: their authors' and their session recipients'."""
    found: set[str] = set()
    for m in messages:
        if m["author_session_id"] is not None:
            found.add(m["author_session_id"])
        found.update(r for r in m["recipients"] if UUID_RE.fullmatch(r))
    return found


def redacted(messages: list[dict[str, Any]], hidden: Collection[str]) -> list[dict[str, Any]]:
    """``messages`` with the session ids in ``hidden`` (sessions the reader does not own)
    shown as null, as debate_list_bindings shows them: a reader learns that a message went to
    a session, never which one. Messages naming none are returned as they are."""
    if not hidden:
        return messages
    out = []
    for m in messages:
        author, recipients = m["author_session_id"], m["recipients"]
        if author in hidden or any(r in hidden for r in recipients):
            m = {
                **m,
                "author_session_id": None if author in hidden else author,
                "recipients": [None if r in hidden else r for r in recipients],
            }
        out.append(m)
    return out


def _recipient(key: str) -> str:
    """``role:R`` -> ``R``; ``session:S`` -> ``S`` (as the poster named them)."""
    return key.split(":", 1)[1]
