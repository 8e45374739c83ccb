"""The notes the router adds for the model beside a result whose outputSchema has no room.

`plan_work` and `get_next_work` answer closed objects (the contract's outputSchemas allow no
other property), and none of their fields holds a phase's exit-gate check ids: the tree of
planned skills lists only phases with a skill and names the gate (``exit_gate``), not its
checks. An agent needs those ids to report progress, so each answer is sent as a
`agora.mcp.results.Guided` value: its structured content unchanged, and a second text block
naming the checks and how to report them. A replayed ``plan_work`` (whose outputSchema has
no ``replayed`` field either) says so there too.

No read result holds the run's state version or plan revision either, yet every write must
send them (``expected_state_version``, ``expected_plan_revision``): an agent would learn them
only from a refused write. So every answer about a run (a plan, its next work, each applied or
replayed write) ends with the values to send next, the run's current ones; a replayed write's
stored ``resulting_state_version`` may be older. A completed run takes no write at all: its
answers say that instead. ``get_router_status`` of a run (counts and a goal status candidate
only) says where the run stands: its status, versions and current phase. No result names a
support proposal awaiting the user's decision but the proposing call's, so the run's status
and next work name each (another session, or an agent after a crash, could not decide it).
Nor does any result but ``record_work_event``'s name an event, so the run's status and next
work name the events already recorded for the current work item (`recorded`) and, once each
check's latest says passed, the evaluate_gate arguments that would pass it: an agent resumed
after a crash would otherwise record every check again. Pure; the texts are cached per layout.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.results import Guided
from agora.mcp.wording import closest
from agora.toolsets.router.digests import digest

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.router.state import Item, Proposal, RunState

#: One phase as the notes see it: (phase_id, gate_id, check_ids).
Gate = tuple[str, str, tuple[str, ...]]

REPORT: Final = (
    'Report each check with record_work_event (phase_id, observation {"check_id": ID, '
    '"outcome": "passed"} or "failed"), then call evaluate_gate with evidence_refs = the '
    'event_ids it returned and expected_evidence_digest = "sha256:" + hex SHA-256 of the '
    "RFC 8785 JSON of those refs sorted and de-duplicated. The gate passes when the latest "
    "referenced event of every check says passed."
)
REPLAYED: Final = (
    "replayed: this idempotency key already made this plan; this is its stored result and "
    "nothing was written."
)


def next_write(state_version: int, plan_revision: int) -> str:
    """The note's line naming the values of the run's next write (quoted in the docs)."""
    return (
        f"Next write to this run: send expected_state_version {state_version}; evaluate_gate "
        f"also expected_plan_revision {plan_revision} (the consent tools: plan_revision)."
    )


#: The last line of a note about a completed run, instead of the values of a next write.
COMPLETED: Final = (
    "This run is completed (every phase's exit gate passed): no write to it can succeed"
    " (record_work_event, evaluate_gate and propose_support_consent answer phase-completed,"
    " transition_support_consent consent-stale). Plan further work as a new run: plan_work"
    " with a new idempotency_key."
)


def closing(state_version: int, plan_revision: int, completed: bool) -> str:
    """The note's last line: the values of the next write, or for a completed run, where no
    write can succeed, that it is completed."""
    return COMPLETED if completed else next_write(state_version, plan_revision)


def goal_bound(goal: str, state_version: int, plan_revision: int) -> str:
    """The note's last line for a plan bound to a native Goal, which has no local work graph."""
    return (
        f"This run is bound to the native Goal {goal}: the Goal's host drives its work, so it"
        " cannot be progressed here (get_next_work, record_work_event and evaluate_gate answer"
        " capability-unavailable, native-goal-authority); get_router_status gives its goal"
        " status candidate. Only the consent tools write to it here: send"
        f" expected_state_version {state_version}, plan_revision {plan_revision} and"
        " goal_revision non-null: the Goal's current revision as its host reports it (an"
        " integer from 0), which a proposal binds and transition_support_consent must send"
        " again as current_goal_revision."
    )


#: The last line of a Goal-bound plan: the way to a run this server can progress.
UNBOUND: Final = (
    "Unless a host that drives native Goals (Codex) drives this one, nothing will progress"
    " this run: to plan work this server can progress, send plan_work again with"
    " goal_binding_id null, a new idempotency_key and expected_state_version 0 (a"
    " Router-owned work graph that get_next_work, record_work_event and evaluate_gate drive)."
)


def _gate(phase: str, gate: str, checks: tuple[str, ...]) -> str:
    names = ", ".join(checks)
    example = f'{{"check_id": "{checks[0]}", "outcome": "passed"}}' if checks else "{}"
    return f"phase {phase} (exit gate {gate}): checks {names}; e.g. {example}"


@functools.lru_cache(maxsize=256)
def _plan_note(
    gates: tuple[Gate, ...], replayed: bool, version: int, revision: int, completed: bool
) -> str:
    lines = [REPLAYED] if replayed else []
    if gates:
        lines.append("Exit-gate checks by phase (check_id values for record_work_event):")
        lines.extend(f"- {_gate(*g)}" for g in gates)
        lines.append(REPORT)
    lines.append(closing(version, revision, completed))
    return "\n".join(lines)


def planned(
    result: dict[str, Any],
    items: list[Item],
    replayed: bool,
    version: int,
    revision: int,
    goal: str | None = None,
    completed: bool = False,
) -> Guided:
    """A ``plan_work`` result with its note: the checks, whether it was replayed, and the
    run's current state ``version`` and plan ``revision``; for a plan bound to native Goal
    ``goal`` (no work items), that the Goal's host drives it instead."""
    if goal is not None:
        lines = [REPLAYED] if replayed else []
        return Guided(result, "\n".join([*lines, goal_bound(goal, version, revision), UNBOUND]))
    gates = tuple((i.item.phase_id, i.item.gate_id, i.item.check_ids) for i in items)
    note = _plan_note(gates, replayed, version, revision, completed)
    first = [n for n in (_unsure(result), _awaiting_consent(result)) if n]
    return Guided(result, "\n".join([*first, note]))


#: The line of a plan whose objective had no structural signal the classifier reads.
UNSURE: Final = (
    "Classified single with low confidence: no structural signal found. The classifier reads"
    " English action and sequencing words (design, implement, test, then, finally, ...) and"
    " list markers at the start of a line (1. 2) 1\u3001 - *) only (docs/router.md). If the"
    ' work has stages, plan again with requested_work_mode "phased" (or "managed-goal") and a'
    " new idempotency_key."
)


def _unsure(result: dict[str, Any]) -> str | None:
    """`UNSURE` for a plan the builtin fallback classified (``no-structural-signal``)."""
    found = result.get("classification") or {}
    return UNSURE if found.get("source") == "builtin-fallback" else None


def _awaiting_consent(result: dict[str, Any]) -> str | None:
    """The line naming the locked skills a ``use``/``only`` plan placed in no phase, which
    only support consent can add (``support_consent_required`` alone does not say which)."""
    if not result.get("support_consent_required"):
        return None
    tree = result.get("planned_skill_tree") or []
    placed = {s for t in tree for s in (t["primary_skill_id"], *t["support_skill_ids"])}
    waiting = [s for s in result.get("planned_skill_ids") or [] if s not in placed]
    if not waiting:
        return None
    return (
        f"Planned but in no phase yet: {', '.join(waiting)}. Under this Explicit Skill Lock a"
        " support skill joins a phase only with the user's consent: propose_support_consent"
        " (phase, its primary skill, 1-3 supports), then transition_support_consent."
    )


@functools.lru_cache(maxsize=256)
def _next_note(phase: str, gate: str, checks: tuple[str, ...], version: int, revision: int) -> str:
    return f"Next: {_gate(phase, gate, checks)}.\n{REPORT}\n{next_write(version, revision)}"


def next_item(result: dict[str, Any], run: RunState, item: Item | None) -> Guided:
    """A ``get_next_work`` result of ``run`` with the checks of its work item's gate, if it
    has one, the events already `recorded` for it, and the values of the run's next write (or,
    once the run is completed, that there is none)."""
    version, revision = run.state_version, run.plan_revision
    completed = run.status == "completed"
    if item is None:
        return Guided(result, closing(version, revision, completed))
    w = item.item
    note = _next_note(w.phase_id, w.gate_id, w.check_ids, version, revision)
    line = recorded(run, item)
    return Guided(result, note if line is None else f"{line}\n{note}")


#: At most this many events reporting a check are named in `recorded`'s line, the newest.
_MOST_EVENTS: Final = 10


def recorded(run: RunState, item: Item) -> str | None:
    """The line naming the events recorded for ``item``'s phase (id, check and outcome, the
    `_MOST_EVENTS` newest; notes without a check counted only) and, when the latest event of
    every check of its gate says passed, the evidence_refs and expected_evidence_digest that
    pass the gate now; None if the phase has no event."""
    phase, checks = item.item.phase_id, item.item.check_ids
    latest: dict[str, str] = {}
    shown, notes = [], 0
    for ref, (at, obs) in run.events.items():  # in recorded order
        check = obs.get("check_id")
        if at != phase:
            continue
        if check not in checks:
            notes += 1
            continue
        latest[check] = ref
        shown.append(f"{ref} ({check} {obs.get('outcome')})")
    if not shown and not notes:
        return None
    if len(shown) > _MOST_EVENTS:  # the newest: the refs to send are named below anyway
        shown = [f"{len(shown) - _MOST_EVENTS} earlier events", *shown[-_MOST_EVENTS:]]
    if notes:
        shown.append(f"{notes} note{'s' if notes > 1 else ''} without a check_id (not counted)")
    parts = [f"Recorded for phase {phase}: {'; '.join(shown)}"]
    refs = sorted(latest.values())
    passing = [c for c in checks if c in latest and run.events[latest[c]][1]["outcome"] == "passed"]
    if len(passing) == len(checks):
        parts.append(
            f". Every check's latest event says passed: evaluate_gate can be called now with"
            f" evidence_refs {json.dumps(refs)} and expected_evidence_digest {digest(refs)}."
        )
    else:
        waiting = [c for c in checks if c not in latest]
        parts.append(
            f". Not yet reported: {', '.join(waiting)}."
            if waiting
            else ". A check's latest event says failed: report it again once it passes."
        )
    return "".join(parts)


def written(
    result: dict[str, Any],
    version: int,
    revision: int,
    completed: bool,
    note: str | None = None,
    goal: str | None = None,
) -> Guided:
    """An applied or replayed write's result with the values of the run's next write (or,
    once the run is ``completed``, that there is none; for a run bound to native Goal
    ``goal``, the consent tools' values only), after ``note`` if there is one."""
    last = goal_bound(goal, version, revision) if goal else closing(version, revision, completed)
    return Guided(result, last if note is None else f"{note}\n{last}")


def unreported(observation: dict[str, Any], phase: str, checks: tuple[str, ...]) -> str | None:
    """The note of a recorded observation that reports none of its phase's checks (no
    ``check_id``): kept, but no gate counts it, which nothing else would tell the agent
    (``{"check": ...}``, ``{"plan-ready": "passed"}`` are such notes). None if it names a
    check, or the phase's gate has none."""
    if observation.get("check_id") is not None or not checks:
        return None
    return (
        f"This observation reports no check (it has no check_id): it is kept as a note of"
        f" phase {phase}, and evaluate_gate does not count it.{_meant_check(observation, checks)}"
        f' To report a check, send {{"check_id": ID, "outcome": "passed"}} (or "failed"), ID'
        f" one of: {', '.join(checks)}."
    )


def _meant_check(observation: dict[str, Any], checks: tuple[str, ...]) -> str:
    """The words for an observation that plainly meant to report a check: a key close to
    ``check_id`` (``check``, ``checkId``) or one of the phase's check ids used as a key;
    empty when none is."""
    for key in observation:
        if key in checks:
            return f' You sent the check {key!r} as a key: did you mean {{"check_id": "{key}"}}?'
        if key != "check_id" and closest(key, ["check_id"]) == "check_id":
            return f" You sent '{key}': did you mean 'check_id'?"
    return ""


def gate_failed(failures: list[str], latest: dict[str, str]) -> str:
    """The note of a failed gate: for each check that failed it, whether the latest
    referenced event reported it failed or no referenced event reported it at all (the
    result's ``failures`` lists both alike)."""
    why = [
        f"{check}: no referenced event reports it" if check not in latest
        else f"{check}: the latest referenced event reports it {latest[check]}"
        for check in failures
    ]  # fmt: skip
    return (
        f"The gate failed. {'; '.join(why)}. An event reports a check by its observation's"
        ' check_id ({"check_id": ID, "outcome": "passed"}); record the checks'
        " (record_work_event), then call evaluate_gate again with their event_ids among the"
        " evidence_refs."
    )


def gate_note(result: dict[str, Any], latest: dict[str, str], newer: dict[str, str]
              ) -> str | None:  # fmt: skip
    """The note of an evaluated gate: what failed it (`gate_failed`), then whether a newer
    event its refs leave out reports a check failed (`newer_failed`); None if neither."""
    passed = result.get("status") != "failed"
    notes = [None if passed else gate_failed(list(result.get("failures", ())), latest),
             newer_failed(newer, passed)]  # fmt: skip
    return "\n".join(n for n in notes if n) or None


def newer_failed(newer: dict[str, str], passed: bool) -> str | None:
    """The warning of a gate evaluated while a newer event that its evidence refs leave out
    reports one of its checks ``failed`` (`progress.newer_failures`), or None if none does:
    the gate counts only the referenced events, so it may pass on older ones."""
    if not newer:
        return None
    which = "; ".join(f"{check} (event {ref})" for check, ref in newer.items())
    then = (
        "it passed on the older referenced events, which is advisory only: check the failure"
        " before relying on it" if passed else "send it among the evidence_refs to count it"
    )  # fmt: skip
    return (
        f"Warning: a newer event of this phase that evidence_refs does not reference reports"
        f" a check failed: {which}. The gate counts only the referenced events; {then}."
    )


def session_runs(session: str, total: int, recent: list[tuple[str, str, int, int, str]]) -> str:
    """The note of a session-wide status: the session's newest runs by id (no field of the
    result names one, and an agent that lost a run's id has no other way to find it)."""
    if not recent:
        return f"Session {session} has no run (of this filter): plan_work creates one."
    shown = "; ".join(
        f"{run} (status {status}, state version {version}, {items} work items, created {at})"
        for run, status, version, items, at in recent
    )
    more = f", the {len(recent)} newest here" if total > len(recent) else ""
    return (
        f"Runs of session {session}, newest first ({total} in all{more}): {shown}. Send one as"
        " workflow_run_id (get_router_status, get_next_work) to work on it."
    )


def awaiting(reply: Guided, proposals: Iterable[Proposal]) -> Guided:
    """``reply`` whose note starts with the run's `proposals` awaiting the user's decision."""
    line = _undecided(proposals)
    return reply if line is None else Guided(reply, f"{line}\n{reply.guidance}")


def _undecided(proposals: Iterable[Proposal]) -> str | None:
    waiting = [p for p in proposals if p.status == "proposal-required"]
    if not waiting:
        return None
    shown = "; ".join(
        f"proposal_id {p.proposal_id} (phase {p.phase_id}, primary {p.primary_skill_id},"
        f" supports {', '.join(p.support_skill_ids)})"
        for p in waiting
    )
    return (
        f"Awaiting the user's decision: {shown}. transition_support_consent approves or"
        " rejects it (action approve or reject) with the current phase, scope anchor, goal"
        " revision, plan revision and context fingerprint: one that changed since the proposal"
        " refuses it as stale."
    )


def run_status(result: dict[str, Any], run: RunState, item: Item | None) -> Guided:
    """A run's ``get_router_status`` result with where the run stands: its status, versions,
    completed work items and current phase (``item``'s), any proposal awaiting a decision,
    and the values of its next write (as every answer about a run ends)."""
    done = len(run.completed_ids())
    lines = [
        f"Run {run.run_id}: status {run.status}, state version {run.state_version}, plan"
        f" revision {run.plan_revision}, {done} of {len(run.items)} work items completed."
    ]
    completed = run.status == "completed"
    if run.goal_binding_id is None and item is not None:
        lines.append(
            f"Current phase: {item.item.phase_id} (work item {item.item.work_item_id},"
            f" {item.status}); get_next_work names its exit gate's checks."
        )
        line = recorded(run, item)
        lines += [line] if line else []
    waiting = _undecided(run.proposals.values())
    lines += [waiting] if waiting else []
    if run.goal_binding_id is not None:
        lines.append(goal_bound(run.goal_binding_id, run.state_version, run.plan_revision))
    else:
        lines.append(closing(run.state_version, run.plan_revision, completed))
    return Guided(result, "\n".join(lines))
