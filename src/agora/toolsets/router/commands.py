"""The commands a workflow run accepts, as tagged msgspec Structs.

Every command carries the caller's ``session_id`` (runs are isolated per session: another
session's run is as good as missing). Mutations also carry the CAS ``expected_state_version``,
the ``idempotency_key``, the digest of the semantic request (`digests.request_digest`) and
the ``correlation_id`` for logs. Reads carry neither. This module only declares data.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agora.toolsets.router.planning import Plan


class Mutation(msgspec.Struct, frozen=True, kw_only=True):
    """What every mutation carries besides its own fields."""

    session_id: str
    expected_state_version: int
    idempotency_key: str
    request_digest: str
    correlation_id: str
    #: The digest as runs recorded it before `digests.routing_read` (the arguments as sent),
    #: when that differs: a key kept under it still replays.
    legacy_digest: str | None = None


class CreatePlan(Mutation, frozen=True, tag=True):
    """Persist a plan and its work graph as the run's first state (version 0 -> 1)."""

    plan: Plan


class RecordEvent(Mutation, frozen=True, tag=True):
    """Append one reported observation to a phase's work item."""

    phase_id: str
    observation: dict[str, Any]
    activation_receipt_ref: str | None


class EvaluateGate(Mutation, frozen=True, tag=True):
    """Evaluate a phase's exit gate against recorded evidence."""

    phase_id: str
    evidence_refs: tuple[str, ...]
    expected_evidence_digest: str
    expected_plan_revision: int


class ProposeSupport(Mutation, frozen=True, tag=True):
    """Persist a Phase-scoped support-skill proposal awaiting the user's consent."""

    phase_id: str
    primary_skill_id: str
    support_skill_ids: tuple[str, ...]
    scope_anchor_id: str
    goal_revision: int | None
    plan_revision: int
    context_fingerprint: str


class TransitionSupport(Mutation, frozen=True, tag=True):
    """Approve or reject a persisted proposal, bound to the caller's current view."""

    proposal_id: str
    action: str
    current_phase_id: str
    current_scope_anchor_id: str
    current_goal_revision: int | None
    current_plan_revision: int
    current_context_fingerprint: str


class NextWork(msgspec.Struct, frozen=True, tag=True):
    """Read the next work item that may start (dependencies done, not finished)."""

    session_id: str


class Status(msgspec.Struct, frozen=True, tag=True):
    """Read the run's counts and goal status candidate."""

    session_id: str


class Snapshot(msgspec.Struct, frozen=True, tag=True):
    """Read what Memory may retain of a run: status, envelope, route and gate outcomes."""

    session_id: str


Command = CreatePlan | RecordEvent | EvaluateGate | ProposeSupport | TransitionSupport
Read = NextWork | Status | Snapshot
