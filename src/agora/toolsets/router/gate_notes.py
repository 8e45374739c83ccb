"""The notes about a phase's evidence and exit gate that the router adds beside a result.

No outputSchema names an event of a phase but ``record_work_event``'s, nor says whether a
gate can pass, nor which phase comes after a passed gate. So the answers about a run say it
in their text block (`agora.toolsets.router.guidance` assembles the notes): the events
already `recorded` for the current work item, and once every check's latest event says
passed, the evaluate_gate arguments that pass it (`ready`), which the answer of the
``record_work_event`` that completes them gives at once (`after_event`), so that no agent
need compute the evidence digest itself; what failed a gate, or a newer failure its refs
leave out, and for a passed gate the phase to work on next or that the run is completed
(`gate_note`). Pure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.wording import closest
from agora.toolsets.router.digests import digest

if TYPE_CHECKING:
    from agora.toolsets.router.state import Item, RunState

#: At most this many events reporting a check are named in `recorded`'s line, the newest.
_MOST_EVENTS: Final = 10


def gate_line(phase: str, gate: str, checks: tuple[str, ...]) -> str:
    """A phase as the notes name it: its exit gate, its check ids and an observation."""
    names = ", ".join(checks)
    example = f'{{"check_id": "{checks[0]}", "outcome": "passed"}}' if checks else "{}"
    return f"phase {phase} (exit gate {gate}): checks {names}; e.g. {example}"


def _latest(run: RunState, item: Item) -> dict[str, str]:
    """Each check of ``item``'s gate with the id of the latest event of its phase about it."""
    phase, checks, latest = item.item.phase_id, item.item.check_ids, {}
    for ref, (at, obs) in run.events.items():  # in recorded order
        if at == phase and (check := obs.get("check_id")) in checks:
            latest[check] = ref
    return latest


def ready(run: RunState, item: Item) -> str | None:
    """When the latest event of every check of ``item``'s gate says passed (and the item is
    not completed), the evaluate_gate call that passes the gate now, refs and digest; else
    None."""
    latest = _latest(run, item)
    checks = item.item.check_ids
    if item.status == "completed" or not checks or len(latest) < len(checks):
        return None
    if any(run.events[ref][1].get("outcome") != "passed" for ref in latest.values()):
        return None
    refs = sorted(latest.values())
    return (
        f"evaluate_gate can be called now with evidence_refs {json.dumps(refs)} and"
        f" expected_evidence_digest {digest(refs)}."
    )


def failed_checks(run: RunState, item: Item) -> list[str]:
    """The checks of ``item``'s gate whose latest event of its phase does not say passed."""
    latest = _latest(run, item)
    return [c for c in item.item.check_ids
            if c in latest and run.events[latest[c]][1].get("outcome") != "passed"]  # fmt: skip


def _waiting(run: RunState, item: Item) -> str:
    """What keeps ``item``'s gate from passing: each check whose latest event says failed,
    named, then the checks not yet reported."""
    latest, failed = _latest(run, item), failed_checks(run, item)
    said = []
    if len(failed) == 1:
        said.append(f"The latest event of {failed[0]} says failed: report it again once it"
                    " passes.")  # fmt: skip
    elif failed:
        said.append(f"The latest events of {', '.join(failed)} say failed: report each again"
                    " once it passes.")  # fmt: skip
    if waiting := [c for c in item.item.check_ids if c not in latest]:
        said.append(f"Not yet reported: {', '.join(waiting)}.")
    return " ".join(said)


def recorded(run: RunState, item: Item) -> str | None:
    """The line naming the events recorded for ``item``'s phase (id, check and outcome, the
    `_MOST_EVENTS` newest; notes without a check counted only) and, when the latest event of
    every check of its gate says passed, the evidence_refs and expected_evidence_digest that
    pass the gate now (`ready`); None if the phase has no event."""
    phase, checks = item.item.phase_id, item.item.check_ids
    shown, notes = [], 0
    for ref, (at, obs) in run.events.items():  # in recorded order
        if at != phase:
            continue
        if (check := obs.get("check_id")) not in checks:
            notes += 1
            continue
        shown.append(f"{ref} ({check} {obs.get('outcome')})")
    if not shown and not notes:
        return None
    if len(shown) > _MOST_EVENTS:  # the newest: the refs to send are named below anyway
        shown = [f"{len(shown) - _MOST_EVENTS} earlier events", *shown[-_MOST_EVENTS:]]
    if notes:
        shown.append(f"{notes} note{'s' if notes > 1 else ''} without a check_id (not counted)")
    now = ready(run, item)
    then = f"Every check's latest event says passed: {now}" if now else _waiting(run, item)
    return f"Recorded for phase {phase}: {'; '.join(shown)}. {then}"


def after_event(observation: dict[str, Any], run: RunState, item: Item) -> str | None:
    """The note of a recorded observation: that it reports no check (`unreported`), then,
    once every check of the phase's latest event says passed, the evaluate_gate call to make
    now (`ready`), else what is left to report (nothing for an item already completed: a
    replay after its gate passed); None if there is nothing to say."""
    phase = item.item.phase_id
    if item.status == "completed":
        return _completed(observation, phase)
    first = unreported(observation, phase, item.item.check_ids)
    if (now := ready(run, item)) is not None:
        last = f"Every check of phase {phase} has a latest event that says passed: {now}"
    else:  # the gate call comes once none fails: a failed latest event would fail the gate
        then = "" if failed_checks(run, item) else " Then call evaluate_gate."
        last = f"Phase {phase}: {_waiting(run, item)}{then}"
    return last if first is None else f"{first}\n{last}"


def _completed(observation: dict[str, Any], phase: str) -> str | None:
    """The note of an observation replayed after its phase's gate passed: for one that
    reports no check, that it is kept as a note and that the phase is completed (a check
    reported there now is refused, phase-completed); None for one that names a check."""
    if observation.get("check_id") is not None:
        return None
    return (
        f"This observation reports no check (it has no check_id): it is kept as a note of"
        f" phase {phase}. Phase {phase} is completed (its gate passed), so it takes no more"
        " reports: get_next_work gives the phase to work on now."
    )


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
    referenced event reported it failed (report it again once it passes) or no referenced
    event reported it at all (report it); then that the answer of that report gives the
    evaluate_gate call to copy, refs and digest, which no agent need build itself."""
    failed = [c for c in failures if c in latest]
    unsent = [c for c in failures if c not in latest]
    why = [f"{check}: the latest referenced event reports it {latest[check]}" for check in failed]
    why += [f"{check}: no referenced event reports it" for check in unsent]
    said = []
    if failed:
        each = "it passes" if len(failed) == 1 else "each passes"
        said.append(f"Report {', '.join(failed)} again (record_work_event) once {each}.")
    if unsent:
        example = f'{{"check_id": "{unsent[0]}", "outcome": "passed"}}'
        said.append(f"Report {', '.join(unsent)} (record_work_event, observation e.g. {example}).")
    return (
        f"The gate failed. {'; '.join(why)}. {' '.join(said)} The answer that completes the"
        " checks gives the evaluate_gate call: copy its evidence_refs and"
        " expected_evidence_digest (get_next_work gives them too)."
    )


def gate_note(result: dict[str, Any], latest: dict[str, str], newer: dict[str, str],
              phase: str, then: Item | None) -> str | None:  # fmt: skip
    """The note of an evaluated gate of ``phase``: what failed it (`gate_failed`), then
    whether a newer event its refs leave out reports a check failed (`newer_failed`), then
    for a passed gate the phase to work on next (``then``, the run's current work item; with
    none, the run is completed, which the note's last line says); None if none of these."""
    passed = result.get("status") != "failed"
    notes = [None if passed else gate_failed(list(result.get("failures", ())), latest),
             newer_failed(newer, passed), _passed(phase, then) if passed else None]  # fmt: skip
    return "\n".join(n for n in notes if n) or None


def _passed(phase: str, then: Item | None) -> str | None:
    """The line of a passed gate: the phase to work on next; None when none is left (the
    note's last line says the run is completed, `guidance.COMPLETED`)."""
    if then is None:
        return None
    w = then.item
    line = gate_line(w.phase_id, w.gate_id, w.check_ids)
    return (
        f"The gate passed: phase {phase} is completed. Next: {line}. Report each of its checks"
        " with record_work_event, then call evaluate_gate (get_next_work gives its work item)."
    )


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
