"""The commands of the Memory entity (`agora.toolsets.router.memory`): what each asks of an
owner's Memory, as the router's tools send them. Plain values; no behaviour.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Summary(msgspec.Struct, frozen=True, tag=True):
    """Read: whether the store exists, its summary digest, and one workspace's count."""

    workspace_identity: str


class StoredAt(msgspec.Struct, frozen=True, tag=True):
    """Read: when the observation ``observation_id`` was stored (None if it is not)."""

    observation_id: str


class Receipted(msgspec.Struct, frozen=True, kw_only=True):
    """What every Memory mutation carries."""

    session_id: str
    idempotency_key: str
    request_digest: str
    legacy_digest: str = ""  # without the correlation_id, as older receipts hold it: they replay
    tool: str = ""  # the tool that sends it (none for automatic promotion), for refusals


class Remember(Receipted, frozen=True, tag=True):
    """Record one observation (``row``) and answer ``result``."""

    row: dict[str, Any]
    result: dict[str, Any]


class Feedback(Receipted, frozen=True, tag=True):
    """Record typed feedback bound to an observation of the caller's session and run."""

    observation_id: str
    workflow_run_id: str
    original_route_digest: str | None
    #: the workspace identity the call names (``personal`` when workspace_root is null)
    workspace_identity: str
    row: dict[str, Any]
    result: dict[str, Any]


class Purge(Receipted, frozen=True, tag=True):
    """Delete one scope, bound to the current summary digest."""

    scope: str
    expected_summary_digest: str
    include_managed_profiles: bool


class Sweep(msgspec.Struct, frozen=True, tag=True):
    """Retention: drop observations older than ``cutoff``, then per workspace all but the newest
    ``keep``, and suppressions older than ``suppressed_before``; replies the two counts."""

    cutoff: str
    keep: int
    suppressed_before: str


class CheckReceipt(Receipted, frozen=True, tag=True):
    """Read: this key's stored result (``replayed: true``), None if new, or the reuse refusal."""


class Managed(msgspec.Struct, frozen=True, tag=True):
    """Read: the newest revision of each managed Profile named (target, profile key)."""

    keys: tuple[tuple[str, str], ...]


class Promoted(msgspec.Struct, frozen=True, tag=True):
    """Read: the candidate ids whose automatic-managed promotion wrote a kept revision."""


class ApplyRevision(Receipted, frozen=True, tag=True):
    """Write revision ``revision_no`` of a managed Profile, only if it is the next one."""

    target: str
    profile_key: str
    revision_no: int
    revision_id: str
    profile_json: str
    profile_digest: str
    source: str
    result: dict[str, Any]
    blocked: dict[str, Any]


class RejectCandidate(Receipted, frozen=True, tag=True):
    """Record the user's rejection of a candidate (``candidate_id``; empty for a rollback)."""

    candidate_id: str
    profile_key: str
    result: dict[str, Any]


class History(msgspec.Struct, frozen=True, tag=True):
    """Read: the named managed Profiles' kept revisions, persisted and decided proposals."""

    keys: tuple[tuple[str, str], ...]


class StoreProposal(Receipted, frozen=True, tag=True):
    """Persist a reviewable proposal (a rollback) and answer ``result``."""

    target: str
    profile_key: str
    proposal: dict[str, Any]
    result: dict[str, Any]


#: Revisions kept per managed Profile.
