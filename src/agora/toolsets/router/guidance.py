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
work name the events already recorded for the current work item (`gate_notes.recorded`) and,
once each check's latest says passed, the evaluate_gate arguments that would pass it, as the
event that made it so says too (`gate_notes`): an agent resumed after a crash would otherwise
record every check again. Pure; the texts are cached per layout.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.results import Guided
from agora.toolsets.router.gate_notes import gate_line, ready, recorded

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.router.state import Item, Proposal, RunState

#: One phase as the notes see it: (phase_id, gate_id, check_ids).
Gate = tuple[str, str, tuple[str, ...]]

REPORT: Final = (
    'Report each check with record_work_event (phase_id, observation {"check_id": ID, '
    '"outcome": "passed"} or "failed"); once every check of the phase has a latest event that'
    " says passed, that answer (and get_next_work's) gives the evaluate_gate call, its"
    " evidence_refs and expected_evidence_digest: copy them, never compute the digest. The"
    " gate passes when the latest referenced event of every check says passed."
)
#: What a plan's note says of the phases after one whose checks all passed already.
REPORT_LATER: Final = (
    "For each later phase, report its checks with record_work_event the same way, then call"
    " evaluate_gate with the evidence_refs and expected_evidence_digest its answers give."
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
    " under a new context.session_id (one per task, named after the repository and the next"
    " task) and a new idempotency_key."
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


@functools.lru_cache(maxsize=256)
def _plan_note(gates: tuple[Gate, ...], replayed: bool, version: int, revision: int,
               completed: bool, gate_call: str | None) -> str:  # fmt: skip
    lines = [REPLAYED] if replayed else []
    if gates:
        lines.append("Exit-gate checks by phase (check_id values for record_work_event):")
        lines.extend(f"- {gate_line(*g)}" for g in gates)
        if gate_call is None:
            lines.append(REPORT)
        else:  # the current phase's checks are all reported passed: its gate is next
            lines.append(f"Every check of phase {gates[0][0]} has a latest event that says"
                         f" passed: {gate_call}")  # fmt: skip
            lines.extend([REPORT_LATER] if len(gates) > 1 else [])
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
    run: RunState | None = None,
) -> Guided:
    """A ``plan_work`` result with its note: the checks of the phases not completed yet (none,
    nor how to report them, once the run is; once every check of the current phase of ``run``
    is reported passed, its evaluate_gate call instead), whether it was replayed, and the
    run's current state ``version`` and plan ``revision``; for a plan bound to native Goal
    ``goal`` (no work items), that the Goal's host drives it instead, and the way to plan
    work this server progresses."""
    if goal is not None:
        lines = [REPLAYED] if replayed else []
        return Guided(result, "\n".join([*lines, goal_bound(goal, version, revision), UNBOUND]))
    left = [i for i in items if i.status != "completed"]
    gates = tuple((i.item.phase_id, i.item.gate_id, i.item.check_ids) for i in left)
    gate_call = ready(run, left[0]) if run is not None and left else None
    note = _plan_note(gates, replayed, version, revision, completed, gate_call)
    said = (_unsure(result), _builtin_phases(result, items), _awaiting_consent(result))
    first = [n for n in said if n]
    return Guided(result, "\n".join([*first, note]))


def _builtin_phases(result: dict[str, Any], items: list[Item]) -> str | None:
    """For a plan of more than one phase that no Profile rule shaped, the line saying its
    phases are the builtin default's, and, when the objective lists steps (the classifier's
    ``enumerated-steps``), that they are not work items of their own (the listed steps made
    it phased, and an agent would expect one work item each)."""
    if result.get("matched_profile_rule_id") is not None or len(items) < 2:
        return None
    phases = ", ".join(i.item.phase_id for i in items)
    listed = "enumerated-steps" in result.get("classification", {}).get("reason_codes", ())
    steps = (
        ": the steps the objective lists are not work items of their own (do them within these"
        " phases)." if listed else "."
    )  # fmt: skip
    return (
        f"Phases: {phases}, the builtin {result['routing_envelope']} plan's{steps} Only a"
        " Profile defines other phases (docs/router-profiles.md)."
    )


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
    return f"Next: {gate_line(phase, gate, checks)}.\n{REPORT}\n{next_write(version, revision)}"


def _gate_next(phase: str, gate: str, version: int, revision: int) -> str:
    """The lines of a work item every check of which is reported passed: its gate is next."""
    return (
        f"Next: evaluate_gate for phase {phase} (exit gate {gate}), with the evidence_refs and"
        f" expected_evidence_digest above.\n{next_write(version, revision)}"
    )


def next_item(result: dict[str, Any], run: RunState, item: Item | None) -> Guided:
    """A ``get_next_work`` result of ``run`` with the checks of its work item's gate, if it
    has one, the events already `recorded` for it, and the values of the run's next write (or,
    once the run is completed, that there is none)."""
    version, revision = run.state_version, run.plan_revision
    completed = run.status == "completed"
    if item is None:
        return Guided(result, closing(version, revision, completed))
    w = item.item
    if ready(run, item) is None:  # checks are left to report
        note = _next_note(w.phase_id, w.gate_id, w.check_ids, version, revision)
    else:
        note = _gate_next(w.phase_id, w.gate_id, version, revision)
    line = recorded(run, item)
    return Guided(result, note if line is None else f"{line}\n{note}")


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


def session_runs(
    session: str, total: int, recent: list[tuple[str, str, int, int, str, str | None]]
) -> str:
    """The note of a session-wide status: the session's newest runs by id (no field of the
    result names one, and an agent that lost a run's id has no other way to find it), each
    bound to a native Goal marked so (get_next_work refuses such a run here)."""
    if not recent:
        return f"Session {session} has no run (of this filter): plan_work creates one."
    shown = "; ".join(
        f"{run} (status {status}, state version {version}, {items} work items, created {at}"
        + (f", bound to the native Goal {json.dumps(goal)}" if goal is not None else "")
        + ")"
        for run, status, version, items, at, goal in recent
    )
    more = f", the {len(recent)} newest here" if total > len(recent) else ""
    bound = any(goal is not None for *_, goal in recent)
    return (
        f"Runs of session {session}, newest first ({total} in all{more}): {shown}. Send one as"
        " workflow_run_id (get_router_status, get_next_work) to work on it"
        + (
            "; a run bound to a native Goal is progressed only by the host that owns the Goal,"
            " not by get_next_work here."
            if bound
            else "."
        )
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
