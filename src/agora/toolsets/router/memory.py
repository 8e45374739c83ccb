"""The Memory entity: one actor per owner of the optional Memory store.

Each principal's Memory is its own entity (`ownership.memory_key`; the anonymous/local
caller's is keyed ``global``) loading and writing only the rows it owns. It keeps in memory
what its commands check (observation bindings, receipts, counts and the generation) and
writes through the actor like every entity. The first recorded observation creates the store
in the same commit; until then nothing exists and `Summary` answers the digest of an absent
store. Every write bumps the owner's generation, so its summary digest changes with any
change of its rows and never returns to an earlier value; a purge must name the current one.
Receipts replay a command's result (``replayed: true``), except one naming an observation or
a feedback purged since: that command runs anew. A key reused for another request is
refused. Pure.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from agora.errors import ToolError
from agora.runtime.entity import Effects
from agora.toolsets.router import memory_sql, replies, reused
from agora.toolsets.router.digests import digest
from agora.toolsets.router.memory_commands import (
    ApplyRevision,
    CheckReceipt,
    Feedback,
    History,
    Managed,
    Promoted,
    Purge,
    Receipted,
    RejectCandidate,
    Remember,
    StoredAt,
    StoreProposal,
    Summary,
    Sweep,
)
from agora.toolsets.router.ownership import memory_owner
from agora.toolsets.router.sql import stamp

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn


MAX_REVISIONS: Final = 20
_DECIDED: Final = ("applied", "rejected")


class MemoryStore:
    """The Memory entity's state (empty while the store does not exist)."""

    def __init__(self, rows: dict[str, Any] | None, owner: str = "") -> None:
        self.owner = owner
        self.exists = rows is not None
        rows = rows or {"generation": 0, "observations": [], "feedback": {}, "receipts": []}
        self.generation: int = rows["generation"]
        #: observation_id -> (workspace, run, session, route signature, recorded_at, observation
        #: digest, target profile class), oldest first
        self.observations = {o[0]: tuple(o[1:]) for o in rows["observations"]}
        #: workspace identity -> its observations (kept in step with `observations`)
        self.per_workspace = Counter(v[0] for v in self.observations.values())
        #: observation_id -> the feedback_ids of the entries bound to it
        self.feedback_by = {o: set(ids) for o, ids in rows["feedback"].items()}
        self.receipts = {(s, k): (d, json.loads(r)) for s, k, d, r in rows["receipts"]}
        #: (target, profile key) -> [(revision_no, revision_id, digest, profile_json)], oldest first
        self.revisions: dict[tuple[str, str], list[tuple[int, str, str, str]]] = {}
        for target, key, no, rid, pdigest, pjson in rows.get("revisions", []):
            self.revisions.setdefault((target, key), []).append((no, rid, pdigest, pjson))
        self.rejections: dict[str, str] = dict(rows.get("rejections", {}))
        #: revision_id -> candidate_id of the kept revisions an automatic promotion wrote
        self.auto_promoted: dict[str, str] = dict(rows.get("auto_promoted", {}))
        #: proposal_id -> (target, profile key, proposal) of persisted (rollback) proposals
        self.proposals = {p: (t, k, json.loads(doc)) for p, t, k, doc in rows.get("proposals", [])}

    @property
    def feedback(self) -> int:
        """Feedback entries in the store."""
        return sum(len(ids) for ids in self.feedback_by.values())

    def summary_digest(self) -> str:
        """The path-free digest of this owner's history."""
        if not self.exists:
            return digest({"memory_store": "absent"})
        return digest({"generation": self.generation, "observations": len(self.observations),
                       "feedback": self.feedback, "receipts": len(self.receipts)})  # fmt: skip

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply a `Summary`, `Remember`, `Feedback` or `Purge`."""
        if isinstance(command, Sweep):
            return self._sweep(command)
        if isinstance(command, Managed):
            latest = {k: self.revisions[k][-1] for k in command.keys if self.revisions.get(k)}
            return Effects(reply=(latest, dict(self.rejections)))
        if isinstance(command, StoredAt):
            stored = self.observations.get(command.observation_id)
            return Effects(reply=None if stored is None else stored[4])
        if isinstance(command, Promoted):
            return Effects(reply=frozenset(self.auto_promoted.values()))
        if isinstance(command, History):
            revisions = {k: list(v) for k, v in self.revisions.items() if k in command.keys}
            proposals = [p for t, k, p in self.proposals.values() if (t, k) in command.keys]
            decided = [r["proposal"] for _d, r in self.receipts.values()
                       if r.get("proposal") and r.get("status") in _DECIDED]  # fmt: skip
            return Effects(reply=(revisions, proposals, decided))
        if isinstance(command, CheckReceipt):
            return Effects(reply=self._receipt(command))
        if isinstance(command, Summary):
            count = self.per_workspace[command.workspace_identity]
            return Effects(reply=(self.exists, self.summary_digest(), count))
        key = (command.session_id, command.idempotency_key)
        if (replay := self._receipt(command)) is not None:
            return Effects(reply=replay)
        at = stamp(now.wall)
        try:
            result, writes = HANDLERS[type(command)](self, command, at)
        except ToolError as refused:
            return Effects(reply=refused)
        except _Answer as answer:  # blocked, or nothing to do: no write, no receipt
            return Effects(reply=answer.result)
        self.generation += 1
        self.receipts[key] = (command.request_digest, result)
        if isinstance(command, Purge):
            result["summary_digest_after"] = self.summary_digest()
        writes += [
            memory_sql.bump(self.owner, self.generation),
            memory_sql.insert_receipt(
                self.owner, *key, command.request_digest, json.dumps(result), at
            ),
        ]
        return Effects(reply=result, writes=writes, changed=True)

    def _receipt(self, cmd: Receipted) -> dict[str, Any] | ToolError | None:
        stored = self.receipts.get((cmd.session_id, cmd.idempotency_key))
        if stored is None:
            return None
        if stored[0] not in (cmd.request_digest, cmd.legacy_digest):
            return reused.memory_key_reused(cmd.idempotency_key, cmd.tool, stored[1])
        named = stored[1].get("observation_id")  # remember_workflow's, record_route_feedback's
        if named is not None and named not in self.observations:
            return None  # purged since: replaying "recorded" would claim what is not stored
        feedback_id = stored[1].get("feedback_id")
        if feedback_id is not None and feedback_id not in self.feedback_by.get(named, ()):
            return None  # its feedback alone was purged (analytics-only): record it again
        return {**stored[1], "replayed": True}

    def apply(self, cmd: ApplyRevision, at: str) -> tuple[dict[str, Any], list[Write]]:
        history = self.revisions.setdefault((cmd.target, cmd.profile_key), [])
        current = history[-1][0] if history else 0
        if cmd.revision_no != current + 1:
            raise _Answer(cmd.blocked)
        writes = self._create()
        history.append((cmd.revision_no, cmd.revision_id, cmd.profile_digest, cmd.profile_json))
        if cmd.source.startswith(memory_sql.AUTO_SOURCE):
            self.auto_promoted[cmd.revision_id] = cmd.source.removeprefix(memory_sql.AUTO_SOURCE)
        writes.append(memory_sql.insert_revision(self.owner, {
            "revision_id": cmd.revision_id, "target_profile_class": cmd.target,
            "profile_key": cmd.profile_key, "revision_no": cmd.revision_no,
            "profile_json": cmd.profile_json, "profile_digest": cmd.profile_digest,
            "source": cmd.source, "created_at": at,
        }))  # fmt: skip
        while len(history) > MAX_REVISIONS:
            dropped = history.pop(0)[1]
            self.auto_promoted.pop(dropped, None)
            writes.append(memory_sql.delete_revision(self.owner, dropped))
        return dict(cmd.result), writes

    def keep_proposal(self, cmd: StoreProposal, at: str) -> tuple[dict[str, Any], list[Write]]:
        writes = self._create()
        pid = cmd.proposal["proposal_id"]
        # The latest answered wins: a rollback asked again (new runs since) names the same
        # proposal with a new backtest and digest, the one its transition must be sent.
        self.proposals[pid] = (cmd.target, cmd.profile_key, cmd.proposal)
        writes.append(memory_sql.insert_proposal(self.owner, pid, cmd.target, cmd.profile_key,
                                                 json.dumps(cmd.proposal), at))  # fmt: skip
        return dict(cmd.result), writes

    def reject(self, cmd: RejectCandidate, at: str) -> tuple[dict[str, Any], list[Write]]:
        writes = self._create()
        if cmd.candidate_id:  # none for a rollback proposal: it suppresses no candidate
            self.rejections.setdefault(cmd.candidate_id, at)
            writes.append(memory_sql.insert_rejection(self.owner, cmd.candidate_id,
                                                      cmd.profile_key, at))  # fmt: skip
        return dict(cmd.result), writes

    def _sweep(self, cmd: Sweep) -> Effects:
        # Retention: observations older than the cutoff, then, per workspace identity, all
        # but the newest `keep` (observations are kept oldest first).
        doomed = [o for o, v in self.observations.items() if v[4] < cmd.cutoff]
        gone = set(doomed)
        per_workspace: dict[str, list[str]] = {}
        for o, v in self.observations.items():
            if o not in gone:
                per_workspace.setdefault(v[0], []).append(o)
        for kept in per_workspace.values():
            doomed += kept[: max(0, len(kept) - cmd.keep)]
        expired = sorted(c for c, at in self.rejections.items() if at < cmd.suppressed_before)
        if not doomed and not expired:
            return Effects(reply=(0, 0))
        writes: list[Write] = []
        for observation_id in doomed:
            self.per_workspace[self.observations.pop(observation_id)[0]] -= 1
            self.feedback_by.pop(observation_id, None)
            writes += memory_sql.delete_observation(self.owner, observation_id)
        for candidate_id in expired:
            del self.rejections[candidate_id]
            writes.append(memory_sql.delete_rejection(self.owner, candidate_id))
        self.generation += 1
        writes.append(memory_sql.bump(self.owner, self.generation))
        return Effects(reply=(len(doomed), len(expired)), writes=writes, changed=True)

    def _create(self) -> list[Write]:
        if self.exists:
            return []
        self.exists = True
        return memory_sql.create_store(self.owner)

    def remember(self, cmd: Remember, at: str) -> tuple[dict[str, Any], list[Write]]:
        row = cmd.row
        stored = self.observations.get(row["observation_id"])
        if stored is not None:  # an earlier call recorded it: answer that one, write nothing
            # (its signature too: one stored before signatures left out how a route was
            # chosen differs from the one computed now, and feedback must send the stored one)
            kept = {"observation_digest": stored[5], "route_signature_digest": stored[3],
                    "target_profile_class": stored[6]
                    or cmd.result["target_profile_class"]}  # fmt: skip
            raise _Answer({**cmd.result, **kept, "recorded_at": stored[4]})
        self.observations[row["observation_id"]] = (
            row["workspace_identity"], row["workflow_run_id"], row["session_id"],
            row["route_signature_digest"], at, row["observation_digest"],
            cmd.result["target_profile_class"],
        )  # fmt: skip
        self.per_workspace[row["workspace_identity"]] += 1
        obs = memory_sql.insert_observation(self.owner, {**row, "recorded_at": at})
        return dict(cmd.result), [*self._create(), obs]

    def feedback_on(self, cmd: Feedback, at: str) -> tuple[dict[str, Any], list[Write]]:
        bound = self.observations.get(cmd.observation_id)
        if bound is None or bound[2] != cmd.session_id:
            raise replies.refusal("observation-not-found", replies.NO_OBSERVATION)
        original = cmd.original_route_digest
        if bound[1] != cmd.workflow_run_id:
            other = replies.other_run(cmd.observation_id, bound[1])
            raise replies.refusal("workflow-context-mismatch", other)
        if original not in (None, bound[3]):
            other = replies.other_route(cmd.observation_id, bound[3])
            raise replies.refusal("workflow-context-mismatch", other)
        if bound[0] != cmd.workspace_identity:
            raise replies.refusal("workflow-context-mismatch", replies.OTHER_WORKSPACE)
        self.feedback_by.setdefault(cmd.observation_id, set()).add(cmd.result["feedback_id"])
        row = {**cmd.row, "workspace_identity": bound[0], "recorded_at": at}
        return dict(cmd.result), [memory_sql.insert_feedback(self.owner, row)]

    def purge(self, cmd: Purge, at: str) -> tuple[dict[str, Any], list[Write]]:
        before = self.summary_digest()
        tables = memory_sql.PURGES.get(cmd.scope)
        if tables is not None and cmd.scope == "all-memory-data" and cmd.include_managed_profiles:
            tables = (*tables, memory_sql.MANAGED_TABLE)
        result: dict[str, Any] = {
            "status": "purged", "scope": cmd.scope, "authority_mode": "router-local",
            "replayed": False, "deleted_observations": 0, "deleted_feedback": 0,
            "deleted_command_receipts": 0, "summary_digest_before": before,
            "summary_digest_after": before, "reason_codes": [],
            PURGED_MORE: dict.fromkeys(MORE_KINDS, 0),
        }  # fmt: skip
        if cmd.expected_summary_digest != before:
            raise _Answer({**result, "status": "blocked", "reason_codes": ["stale-summary-digest"]})
        if tables is None:
            codes = [*result["reason_codes"], "scope-not-available"]
            raise _Answer({**result, "status": "scope-not-available", "reason_codes": codes})
        if not self.exists:
            raise _Answer(result)  # nothing to delete, and nothing is created to say so
        writes = self._forget(tables, result)
        if cmd.scope == "revisions-only":  # keep each managed Profile's current revision
            more = result[PURGED_MORE]
            for history in self.revisions.values():
                for old in history[:-1]:
                    more["promotions"] += self.auto_promoted.pop(old[1], None) is not None
                    more["revisions"] += 1
                    writes.append(memory_sql.delete_revision(self.owner, old[1]))
                del history[:-1]
        return result, writes

    def _forget(self, tables: tuple[str, ...], result: dict[str, Any]) -> list[Write]:
        # Drop what ``tables`` hold from memory, count it into ``result``, and delete it.
        more = result[PURGED_MORE]
        if "router_memory_observations" in tables:
            result["deleted_observations"], self.observations = len(self.observations), {}
            self.per_workspace = Counter()
        if "router_memory_feedback" in tables:
            result["deleted_feedback"], self.feedback_by = self.feedback, {}
        if "router_memory_receipts" in tables:
            result["deleted_command_receipts"], self.receipts = len(self.receipts), {}
        if "router_memory_rejections" in tables:
            more["rejections"], self.rejections = len(self.rejections), {}
        if "router_memory_proposals" in tables:
            more["rollback_proposals"], self.proposals = len(self.proposals), {}
        if memory_sql.MANAGED_TABLE in tables:
            more["revisions"] = sum(len(h) for h in self.revisions.values())
            more["managed_profiles"] = sum(bool(h) for h in self.revisions.values())
            more["promotions"] = len(self.auto_promoted)
            self.revisions, self.auto_promoted = {}, {}
        return [memory_sql.delete_all(self.owner, t) for t in tables]


#: The key of a purge's result that counts what no outputSchema field does, by kind (the
#: tool turns it into a text block): rejections (suppressed candidates), pending rollback
#: proposals, managed Profile revisions, managed Profiles, automatic promotions.
PURGED_MORE: Final = "deleted_more"
MORE_KINDS: Final = ("rejections", "rollback_proposals", "revisions", "managed_profiles",
                     "promotions")  # fmt: skip


class _Answer(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


HANDLERS: Final[dict[type, Any]] = {
    Remember: MemoryStore.remember,
    Feedback: MemoryStore.feedback_on,
    Purge: MemoryStore.purge,
    ApplyRevision: MemoryStore.apply,
    RejectCandidate: MemoryStore.reject,
    StoreProposal: MemoryStore.keep_proposal,
}


class MemoryKind:
    """Loads a Memory entity (one per owner, keyed by `ownership.memory_key`)."""

    kind = "router-memory"

    def load(self, conn: ReadConn, key: str, now: Now) -> MemoryStore:
        """The owner's Memory state, empty if it has none."""
        owner = memory_owner(key)
        return MemoryStore(memory_sql.read_store(conn, owner), owner)


MEMORY: Final = MemoryKind()
