"""The Memory policy: default off, a personal ceiling, a workspace request, never raised.

Policies come from files the user and operator own, never from model input:

- the personal policy, the file named by ``[options.router] memory_policy``:
  ``{"format": "agora-router-memory-policy/1", "ceiling": MODE, "profile_promotion":
  "disabled" | "review-required" | "automatic-managed", "allowed_targets": [TARGET, ...]}``;
- the workspace request, ``<root>/.codex/workflow-skill-router-memory.json`` under an
  authorized workspace root: ``{"format": "agora-router-memory-request/1",
  "requested_mode": MODE}``.

Modes are ordered disabled < observe < reviewed < automatic. Without a workspace root the
effective mode is the personal ceiling; with one it is min(ceiling, request), and a missing
request means disabled. A missing personal policy is disabled; an invalid file (not JSON,
wrong shape) yields ``invalid-memory-policy`` and an ambiguous one (a key given twice)
``ambiguous-memory-policy``, both disabled, and `Policy.problems` names the file, the field
and the value. ``workspace-file`` is never an allowed target
here (it needs verified host write authority). Pure: reading the files is the caller's job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from agora.toolsets import strict_json
from agora.toolsets.router.digests import digest

MODES: Final = ("disabled", "observe", "reviewed", "automatic")
TARGETS: Final = ("managed-personal", "managed-workspace-local", "user-personal", "workspace-file")
PROMOTIONS: Final = ("disabled", "review-required", "automatic-managed")
PERSONAL_FORMAT: Final = "agora-router-memory-policy/1"
WORKSPACE_FORMAT: Final = "agora-router-memory-request/1"
WORKSPACE_FILE: Final = (".codex", "workflow-skill-router-memory.json")


def _shown(value: Any) -> str:
    """A file's value as JSON, cut to 80 characters (it goes into replies and the log)."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_of(values: tuple[str, ...]) -> str:
    return "one of " + ", ".join(values)


def _load(text: str) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """The document, or its reason code and a sentence naming what is wrong."""
    try:
        doc = strict_json.loads(text)
    except strict_json.DuplicateKey as exc:
        return None, "ambiguous-memory-policy", f"the key {_shown(exc.args[0])} is given twice"
    except (ValueError, RecursionError) as exc:
        return None, "invalid-memory-policy", f"not JSON ({str(exc)[:80]})"
    if not isinstance(doc, dict):
        return None, "invalid-memory-policy", "not a JSON object"
    return doc, None, None


def _personal_problems(doc: dict[str, Any]) -> list[str]:
    """What is wrong in a personal policy document, one sentence a field (empty: valid)."""
    out = []
    if doc.get("format") != PERSONAL_FORMAT:
        out.append(f"format {_shown(doc.get('format'))} must be {_shown(PERSONAL_FORMAT)}")
    if doc.get("ceiling") not in MODES:
        out.append(f"ceiling {_shown(doc.get('ceiling'))} must be {_one_of(MODES)}")
    if (promotion := doc.get("profile_promotion", "disabled")) not in PROMOTIONS:
        out.append(f"profile_promotion {_shown(promotion)} must be {_one_of(PROMOTIONS)}")
    targets = doc.get("allowed_targets", [])
    if not isinstance(targets, list):
        out.append(f"allowed_targets {_shown(targets)} must be a list of {_one_of(TARGETS)}")
    else:
        out += [f"allowed_targets {_shown(t)} must be {_one_of(TARGETS)}"
                for t in targets if t not in TARGETS]  # fmt: skip
    known = ("format", "ceiling", "profile_promotion", "allowed_targets")
    out += [f"unknown key {_shown(k)} (known: {', '.join(known)})" for k in doc if k not in known]
    return out


@dataclass(frozen=True, slots=True)
class Policy:
    """The effective Memory policy of one request."""

    personal_ceiling: str = "disabled"
    workspace_requested_mode: str | None = None
    effective_mode: str = "disabled"
    profile_promotion: str = "disabled"
    allowed_targets: tuple[str, ...] = ()
    reason_codes: tuple[str, ...] = ()
    documents: dict[str, Any] = field(default_factory=dict)
    #: What is wrong in the policy files, each naming the file, the field and the value
    #: (``personal policy: profile_promotion "review" must be one of ...``); empty when
    #: nothing is. The reason codes only say ``invalid-memory-policy``.
    problems: tuple[str, ...] = ()

    @property
    def capture_enabled(self) -> bool:
        """Whether completed workflows may be recorded."""
        return MODES.index(self.effective_mode) >= MODES.index("observe")

    @property
    def candidate_generation_enabled(self) -> bool:
        """Whether candidates may be mined from observations."""
        return MODES.index(self.effective_mode) >= MODES.index("reviewed")

    @property
    def digest(self) -> str:
        """``sha256:`` over the policy documents and the effective decision."""
        return digest({
            "documents": self.documents, "effective_mode": self.effective_mode,
            "allowed_targets": list(self.allowed_targets),
            "profile_promotion": self.profile_promotion,
        })  # fmt: skip


def _personal(text: str | None, reasons: list[str], problems: list[str]
              ) -> tuple[str, str, tuple[str, ...], Any]:  # fmt: skip
    if text is None:
        reasons.append("personal-policy-missing")
        return "disabled", "disabled", (), None
    doc, code, problem = _load(text)
    wrong = [problem] if doc is None else _personal_problems(doc)
    if doc is None or wrong:
        reasons.append(code or "invalid-memory-policy")
        problems += [f"personal policy: {w}" for w in wrong if w]
        return "disabled", "disabled", (), None
    targets = tuple(
        t for t in TARGETS if t in doc.get("allowed_targets", []) and t != "workspace-file"
    )
    return doc["ceiling"], doc.get("profile_promotion", "disabled"), targets, doc


def _workspace(text: str | None, reasons: list[str], problems: list[str]
               ) -> tuple[str | None, Any]:  # fmt: skip
    if text is None:
        reasons.append("workspace-policy-missing")
        return None, None
    doc, code, problem = _load(text)
    if doc is not None:
        shape = {"format": WORKSPACE_FORMAT, "requested_mode": doc.get("requested_mode")}
        if doc != shape or doc["requested_mode"] not in MODES:
            problem = (
                f'{_shown(doc)} must be {{"format": {_shown(WORKSPACE_FORMAT)},'
                f' "requested_mode": {_one_of(MODES)}}}'
            )
    if problem is not None:
        reasons.append(code or "invalid-memory-policy")
        problems.append(f"workspace request: {problem}")
        return None, None
    return doc["requested_mode"] if doc else None, doc


def resolve(
    personal: str | None,
    workspace: str | None,
    *,
    workspace_scoped: bool,
    root_verified: bool,
    missing: list[str] | None = None,
) -> Policy:
    """The effective policy from the two files' texts (None: no such file).

    Args:
        personal: The personal policy file's text.
        workspace: The workspace request file's text (read only under an authorized root).
        workspace_scoped: The call named a workspace root.
        root_verified: That root was authorized (else ``workspace-root-unverified``).
        missing: Why a configured personal policy file was not read (the warnings of
            `workspace.personal_profile`, naming its absolute path).
    """
    reasons: list[str] = []
    unread = [f"personal policy: {w.split(': ', 1)[-1]}" for w in missing or []]
    problems: list[str] = unread if personal is None else []
    ceiling, promotion, targets, personal_doc = _personal(personal, reasons, problems)
    requested, workspace_doc = None, None
    effective = ceiling
    if workspace_scoped:
        if not root_verified:
            reasons.append("workspace-root-unverified")
        text = workspace if root_verified else None
        requested, workspace_doc = _workspace(text, reasons, problems)
        if requested is not None and MODES.index(requested) > MODES.index(ceiling):
            reasons.append("workspace-policy-exceeds-ceiling")
        rank = MODES.index(requested) if requested is not None else 0
        effective = MODES[min(MODES.index(ceiling), rank)]
    if effective == "disabled":
        reasons.append("memory-disabled")
    if promotion == "automatic-managed" and effective != "automatic":
        promotion = "review-required"
    if effective == "disabled":
        promotion = "disabled"
    documents = {"personal": personal_doc, "workspace": workspace_doc}
    return Policy(
        ceiling, requested, effective, promotion, targets, tuple(reasons), documents,
        tuple(problems),
    )  # fmt: skip


def ceiling_note(policy: Policy) -> str | None:
    """What ``workspace-policy-exceeds-ceiling`` means for ``policy``, or None if it does not
    apply: the request, the ceiling, and when the ceiling is disabled only because no personal
    policy was read, that it is so."""
    if "workspace-policy-exceeds-ceiling" not in policy.reason_codes:
        return None
    note = (
        f"workspace-policy-exceeds-ceiling: the workspace requests"
        f" {policy.workspace_requested_mode}, above the personal ceiling"
        f" {policy.personal_ceiling}, so the lower applies"
    )
    if "personal-policy-missing" in policy.reason_codes:
        note += (
            ": the ceiling is disabled only because no personal policy file was read"
            " (personal-policy-missing); once the operator's file is there, its ceiling applies"
        )
    elif policy.problems and policy.personal_ceiling == "disabled":
        note += ": the ceiling is disabled because the personal policy file is not valid"
    return note
