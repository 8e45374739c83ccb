"""The chamber's output envelope: success bodies and `ToolError` failures with recovery hints.

Every reply is the contract's envelope: ``ok: true`` plus the attempt fields, or ``ok: false``
with ``code`` (one of the contract's error codes), ``error``, ``retryable`` and a
``recovery_hint`` that says what to do next. Texts are cut to the envelope's maxLength.
This module only builds dicts; it must not decide anything about attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.errors import ToolError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.errors import Failure
    from agora.mcp.validation import ValidationIssue

#: Every error code this toolset can answer; `build_toolset` checks each is in the contract.
#: The contract's ``evidence_pending`` is not among them: the export bundle never controls
#: the canonical card, so a seal that asked for one still succeeds (the bundle says pending).
CODES: Final = frozenset(
    {
        "attempt_not_found",
        "attempt_expired",
        "attempt_already_sealed",
        "stale_action_index",
        "action_limit_reached",
        "op_not_allowed",
        "object_not_available",
        "value_format_invalid",
        "toolset_version_mismatch",
        "publication_notice_missing",
        "signature_unavailable",
        "claim_conflict",
        "host_is_not_a_product",
        "identity_incomplete",
        "identity_invalid",
        "product_id_invalid",
        "host_required",
        "suite_unknown",
    }
)

#: Codes worth retrying unchanged (after a pause or with the corrected field).
_RETRYABLE: Final = frozenset({"stale_action_index", "value_format_invalid"})

_MAX_TEXT = 240


def clip(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters (the envelope's maxLength), with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_body(code: str, error: str, recovery_hint: str, **extra: Any) -> dict[str, Any]:
    """The ``ok: false`` envelope for ``code``.

    Args:
        code: A contract error code.
        error: What was wrong.
        recovery_hint: What to do next.
        **extra: More envelope fields (e.g. ``current_action_index``, ``attempt_state``).

    Returns:
        The body.

    Raises:
        ValueError: if ``code`` is not one this toolset declares.
    """
    if code not in CODES:
        raise ValueError(f"undeclared chamber error code {code!r}")
    body: dict[str, Any] = {
        "ok": False,
        "code": code,
        "error": clip(error),
        "retryable": code in _RETRYABLE,
        "recovery_hint": clip(recovery_hint),
    }
    body.update(extra)
    return body


def failure(code: str, error: str, recovery_hint: str, **extra: Any) -> ToolError:
    """A `ToolError` carrying `failure_body` (raise it, or return it as an actor reply)."""
    return ToolError(failure_body(code, error, recovery_hint, **extra))


class NotYours(ToolError):
    """``attempt_not_found`` for an attempt that exists but belongs to another principal: the
    same body as `not_found` (the caller sees no difference), told apart for the service,
    which answers it as late as a lookup of a handle never issued (`Chamber.on_attempt`)."""


def not_yours(handle: str) -> NotYours:
    """`not_found` of ``handle``, as a `NotYours`."""
    return NotYours(not_found(handle).body)


def not_found(handle: str) -> ToolError:
    """``attempt_not_found`` for ``handle`` (also for retired ``sia_`` handles)."""
    if handle.startswith("sia_"):
        return failure(
            "attempt_not_found",
            "sia_ handles are not ScoreIA Chamber handles.",
            "Pass as challenge_handle the attempt_handle (chl-...) that enter_open_challenge "
            "returned, or enter again.",
        )
    return failure(
        "attempt_not_found",
        f"No attempt {clip(handle, 40)} exists (or its session has been retired).",
        "Pass as challenge_handle the attempt_handle that enter_open_challenge returned, or "
        "enter a new attempt.",
    )


def retired_alias(alias: str, canonical: str, until: str) -> ToolError:
    """``toolset_version_mismatch`` for an alias called after its cutoff."""
    return failure(
        "toolset_version_mismatch",
        f"{alias} belonged to the 0.2.0 toolset and was answered until {until}.",
        f"Call {canonical} instead, with the same arguments.",
    )


#: Argument -> (code when it is missing, code when it is malformed).
_ARGUMENT_CODES: Final = {
    "challenge_handle": ("attempt_not_found", "attempt_not_found"),
    "product": ("identity_incomplete", "product_id_invalid"),
    "ally": ("value_format_invalid", "product_id_invalid"),
    "host": ("host_required", "identity_invalid"),
    "host_claim": ("host_required", "identity_invalid"),
    "provider_claim": ("identity_incomplete", "identity_invalid"),
    "model_claim": ("identity_incomplete", "identity_invalid"),
    "suite": ("suite_unknown", "suite_unknown"),
    "op": ("op_not_allowed", "op_not_allowed"),
    "object": ("object_not_available", "object_not_available"),
}
_ARGUMENT_HINTS: Final = {
    "attempt_not_found": "Pass as challenge_handle the attempt_handle (chl- and 16 hex digits) "
    "that enter_open_challenge returned; sia_ handles are not ScoreIA.",
    "identity_incomplete": "Declare provider_claim, model_claim, product and host; unknown is "
    "accepted.",
    # The seed's schema says maxLength 80, but its pattern admits 79 characters at most: the
    # hint names the limit that holds (the contract is the seed's, verbatim, and hashed).
    "product_id_invalid": "Use a product id like gpt-5.6-sol: at most 79 characters, "
    "^[a-z0-9][a-z0-9._-]{0,78}$.",
    "host_required": "Declare host, e.g. host=cursor; unknown is accepted. host_claim is only "
    "an alias sent along with host, and must match it.",
    "identity_invalid": "Identity fields take short names only: no emails, URLs or secrets.",
    "suite_unknown": "Use chambre-chrono-v0 (the default) or chambre-atelier-v0.",
    "op_not_allowed": "Use one of the allowed_ops of your last reply (observe_chamber shows "
    "them and spends no action).",
    "object_not_available": "Use an object id returned at entry.",
    "value_format_invalid": "Fix the arguments as the error says and call again.",
}
#: Hints for a missing argument whose code's general hint would send the caller elsewhere.
_MISSING_HINTS: Final = {
    "challenge_handle": "challenge_handle is missing: pass the attempt_handle (chl- and 16 "
    "hex digits) that enter_open_challenge returned.",
    "ally": "ally is missing: name the product id of the model to invite (e.g. claude-5); "
    "the ally declares its own identity when it enters.",
}


def argument_rejection(problems: Sequence[ValidationIssue]) -> dict[str, Any]:
    """The chamber envelope for arguments that failed a tool's inputSchema or size limits.

    Args:
        problems: What the validator found: path, keyword and detail of each problem.

    Returns:
        An ``ok: false`` body whose code names the first offending argument in the
        contract's vocabulary (``value_format_invalid`` for anything else).
    """
    first = problems[0] if problems else None
    name = str(first.path[0]) if first is not None and first.path else ""
    missing, malformed = _ARGUMENT_CODES.get(name, ("", ""))
    if name in ("product_plan", "host_version", "origin", "origin_claim", "next_candidate") or (
        name == "preflight"
    ):
        malformed = "identity_invalid"
    required = first is not None and first.keyword == "required"
    code = (missing if required else malformed) or "value_format_invalid"
    text = "; ".join(p.describe() for p in problems) or "arguments: invalid"
    hint = _MISSING_HINTS.get(name, "") if required else ""
    if first is not None and first.keyword == "additionalProperties":
        # A field the tool does not take, whichever it is: the same code, retryable, and
        # the one fix (not a warning about personal data).
        code = "value_format_invalid"
        hint = f"Drop {first.field}: it is not an argument here; call again without it."
        if first.field == "next_candidate":
            hint += " next_candidate goes to seal_attempt."
    if name == "value" and first is not None and first.keyword == "type":
        # A number or time read as a JSON number: the lock's wording says "digits".
        hint = (
            'Send value as a JSON string (a number as its digits, "HH:MM" for a time), or '
            "as a JSON array of strings for an arrangement."
        )
    return failure_body(code, text, hint or _ARGUMENT_HINTS[code])


#: The code of a server fault. The contract lists no code for one and its envelope's ``code``
#: is a free string, so this is the one code the chamber answers outside the contract's list.
INTERNAL_CODE: Final = "internal_error"


def internal_failure(failure: Failure) -> dict[str, Any]:
    """The chamber envelope for a call that failed inside the server (nothing was changed).

    Args:
        failure: What the server knows that is safe to say, with the log's correlation id.

    Returns:
        An ``ok: false`` body with ``code: internal_error``, ``retryable``, a recovery hint
        and the ``correlation_id`` to quote when reporting it.
    """
    hint = (
        "Nothing was changed: call again with the same arguments"
        + (" once the server's disk takes writes again." if failure.cause else ".")
        if failure.retryable
        else f"Report correlation id {failure.correlation_id}; other attempts are unaffected."
    )
    if failure.outcome_unknown:
        hint = (
            "The change may or may not have been saved: read the attempt's current state "
            "before calling again."
        )
    return {
        "ok": False,
        "code": INTERNAL_CODE,
        "error": clip(failure.message),
        "retryable": failure.retryable,
        "recovery_hint": clip(hint),
        "correlation_id": failure.correlation_id,
    }
