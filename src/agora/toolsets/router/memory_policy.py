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
``ambiguous-memory-policy``, both disabled. ``workspace-file`` is never an allowed target
here (it needs verified host write authority). Pure: reading the files is the caller's job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from agora.toolsets.router.digests import digest

MODES: Final = ("disabled", "observe", "reviewed", "automatic")
TARGETS: Final = ("managed-personal", "managed-workspace-local", "user-personal", "workspace-file")
PROMOTIONS: Final = ("disabled", "review-required", "automatic-managed")
PERSONAL_FORMAT: Final = "agora-router-memory-policy/1"
WORKSPACE_FORMAT: Final = "agora-router-memory-request/1"
WORKSPACE_FILE: Final = (".codex", "workflow-skill-router-memory.json")


class _Ambiguous(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Ambiguous
    return dict(pairs)


def _load(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except _Ambiguous:
        return None, "ambiguous-memory-policy"
    except (ValueError, RecursionError):
        return None, "invalid-memory-policy"
    return (doc, None) if isinstance(doc, dict) else (None, "invalid-memory-policy")


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


def _personal(text: str | None, reasons: list[str]) -> tuple[str, str, tuple[str, ...], Any]:
    if text is None:
        reasons.append("personal-policy-missing")
        return "disabled", "disabled", (), None
    doc, problem = _load(text)
    ok = (
        doc is not None and doc.get("format") == PERSONAL_FORMAT
        and doc.get("ceiling") in MODES
        and doc.get("profile_promotion", "disabled") in PROMOTIONS
        and isinstance(doc.get("allowed_targets", []), list)
        and all(t in TARGETS for t in doc.get("allowed_targets", []))
        and set(doc) <= {"format", "ceiling", "profile_promotion", "allowed_targets"}
    )  # fmt: skip
    if doc is None or not ok:
        reasons.append(problem or "invalid-memory-policy")
        return "disabled", "disabled", (), None
    targets = tuple(
        t for t in TARGETS if t in doc.get("allowed_targets", []) and t != "workspace-file"
    )
    return doc["ceiling"], doc.get("profile_promotion", "disabled"), targets, doc


def _workspace(text: str | None, reasons: list[str]) -> tuple[str | None, Any]:
    if text is None:
        reasons.append("workspace-policy-missing")
        return None, None
    doc, problem = _load(text)
    shape = {"format": WORKSPACE_FORMAT, "requested_mode": doc.get("requested_mode")} if doc else {}
    if doc is None or doc != shape or doc["requested_mode"] not in MODES:
        reasons.append(problem or "invalid-memory-policy")
        return None, None
    return doc["requested_mode"], doc


def resolve(
    personal: str | None, workspace: str | None, *, workspace_scoped: bool, root_verified: bool
) -> Policy:
    """The effective policy from the two files' texts (None: no such file).

    Args:
        personal: The personal policy file's text.
        workspace: The workspace request file's text (read only under an authorized root).
        workspace_scoped: The call named a workspace root.
        root_verified: That root was authorized (else ``workspace-root-unverified``).
    """
    reasons: list[str] = []
    ceiling, promotion, targets, personal_doc = _personal(personal, reasons)
    requested, workspace_doc = None, None
    effective = ceiling
    if workspace_scoped:
        if not root_verified:
            reasons.append("workspace-root-unverified")
        requested, workspace_doc = _workspace(workspace if root_verified else None, reasons)
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
    return Policy(ceiling, requested, effective, promotion, targets, tuple(reasons), documents)
