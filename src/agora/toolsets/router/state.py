"""A workflow run's state in memory, and its reconstruction (with integrity checks) from rows.

`RunState` is what the run entity mutates: the plan, the work graph with each item's status,
the content-addressed events, proposals and the idempotency ledger. `from_rows` rebuilds it
from `sql.read_run` and refuses rows that do not make a valid Router-owned graph (bad JSON,
an unknown status, a dependency on no item, a cycle, a count that does not match): it
raises `CorruptRun`, and the entity answers a sanitized internal error. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router.planning import WorkItem

if TYPE_CHECKING:
    from agora.runtime.entity import Write

ITEM_STATUSES: Final = frozenset(
    {"pending", "ready", "active", "verifying", "paused", "completed", "failed"}
)
PROPOSAL_STATUSES: Final = frozenset({"proposal-required", "approved", "rejected"})


#: What a mutation handler returns: the result body and the writes that make it durable.
Applied = tuple[dict[str, Any], "list[Write]"]


class CorruptRun(ValueError):
    """The stored rows of a run do not form a valid Router-owned work graph."""


@dataclass(slots=True)
class Item:
    """A work item and its current status."""

    seq: int
    item: WorkItem
    status: str


@dataclass(slots=True)
class Proposal:
    """A Phase-scoped support proposal and its decision, if any."""

    proposal_id: str
    phase_id: str
    primary_skill_id: str
    support_skill_ids: tuple[str, ...]
    scope_anchor_id: str
    goal_revision: int | None
    plan_revision: int
    context_fingerprint: str
    status: str
    decision_ref: str | None


@dataclass(slots=True)
class RunState:
    """One workflow run as the entity sees it."""

    run_id: str
    session_id: str
    state_version: int
    plan_revision: int
    status: str
    envelope: str
    goal_binding_id: str | None
    work_graph_id: str | None
    explicit_locked: bool
    plan: dict[str, Any]
    items: list[Item]
    #: event_id -> (phase_id, observation)
    events: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    event_count: int = 0
    gate_count: int = 0
    audit_count: int = 0
    proposals: dict[str, Proposal] = field(default_factory=dict)
    #: Sorted routing ``domains`` and ``tags`` of the plan (empty for runs made before v4),
    #: and the ``workspace_root`` it was planned in as sent (none for runs planned without
    #: one, or before runs kept it).
    routing: dict[str, Any] = field(default_factory=dict)
    #: idempotency_key -> (request_digest, result)
    ledger: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def item_for(self, phase_id: str) -> Item | None:
        """The work item of ``phase_id``, if the graph has one."""
        return next((i for i in self.items if i.item.phase_id == phase_id), None)

    def completed_ids(self) -> set[str]:
        """Ids of finished work items."""
        return {i.item.work_item_id for i in self.items if i.status == "completed"}


def _json(text: Any, kind: type) -> Any:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise CorruptRun(f"unreadable JSON: {exc}") from None
    if not isinstance(value, kind):
        raise CorruptRun(f"JSON of the wrong kind: {type(value).__name__}")
    return value


def _strings(text: Any) -> tuple[str, ...]:
    values = _json(text, list)
    if not all(isinstance(v, str) for v in values):
        raise CorruptRun("a list of identifiers holds a non-string")
    return tuple(values)


def _item(row: tuple[Any, ...]) -> Item:
    seq, item_id, phase, primary, support, deps, gate, checks, status = row
    if status not in ITEM_STATUSES:
        raise CorruptRun(f"work item {item_id}: unknown status {status!r}")
    work = WorkItem(item_id, phase, primary, _strings(support), _strings(deps), gate,
                    _strings(checks))  # fmt: skip
    return Item(seq, work, status)


def _check_graph(items: list[Item], expected: int) -> None:
    if len(items) != expected:
        raise CorruptRun(f"{len(items)} work items, the run records {expected}")
    ids = [i.item.work_item_id for i in items]
    if len(set(ids)) != len(ids) or len({i.item.phase_id for i in items}) != len(items):
        raise CorruptRun("duplicate work item or phase")
    position = {item_id: n for n, item_id in enumerate(ids)}
    for n, i in enumerate(items):
        for dep in i.item.dependency_ids:
            if dep not in position:
                raise CorruptRun(f"work item {i.item.work_item_id} depends on no item")
            if position[dep] >= n:  # dependencies point backwards: no cycle is possible
                raise CorruptRun(f"work item {i.item.work_item_id}: dependency cycle")


def from_rows(rows: dict[str, Any]) -> RunState:
    """Rebuild a run from `sql.read_run` rows.

    Raises:
        CorruptRun: if the rows do not form a valid run and work graph.
    """
    (run_id, session, _key, version, revision, status, envelope, goal, graph, locked, count,
     plan_json, routing_json) = rows["run"]  # fmt: skip
    items = [_item(r) for r in rows["items"]]
    _check_graph(items, count)
    if graph is None and items:
        raise CorruptRun("work items without a work graph")
    run = RunState(run_id, session, version, revision, status, envelope, goal, graph,
                   bool(locked), _json(plan_json, dict), items)  # fmt: skip
    if routing_json is not None:
        run.routing = _json(routing_json, dict)
    phases = {i.item.phase_id for i in items}
    for seq, event_id, phase, obs in rows["events"]:
        if phase not in phases:
            raise CorruptRun(f"event {event_id} on unknown phase")
        run.events[event_id] = (phase, _json(obs, dict))
        run.event_count = max(run.event_count, seq)
    run.gate_count, run.audit_count = rows["gates"], rows["audit"]
    for pid, phase, primary, support, anchor, goal_rev, plan_rev, fp, st, ref in rows["proposals"]:
        if st not in PROPOSAL_STATUSES:
            raise CorruptRun(f"proposal {pid}: unknown status {st!r}")
        run.proposals[pid] = Proposal(pid, phase, primary, _strings(support), anchor, goal_rev,
                                      plan_rev, fp, st, ref)  # fmt: skip
    for key, request_digest, result in rows["ledger"]:
        run.ledger[key] = (request_digest, _json(result, dict))
    return run
