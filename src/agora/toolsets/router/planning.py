"""Building a plan: classification, skill route, planned tree and work graph, from one request.

`build_plan` is pure: the caller has already read the Profile files (see `workspace`). The
skill route follows the precedence explicit lock > workspace Profile > personal Profile >
builtin default. An explicit lock (``explicit_skill_ids``) skips Profiles: phase *i*'s
primary is the *i*-th locked skill (the last one for later phases); with ``all`` semantics
the locked skills that are no phase's primary become supports, three to a phase from the
first, and a lock naming more than its phases hold is refused (`Unplaceable`: the lock says
every skill is planned, so none is dropped); under ``use`` and ``only`` any support skill
needs the user's consent (``support_consent_required``). Skills with null semantics, or
semantics with no skill, are refused (`lock_issue`). A Profile rule supplies phases,
skills and exit-gate checks; the builtin default supplies phases and checks but plans no
skill. With a ``current_phase_id`` among the plan's phases, only that phase's skills are the
current planned intent, under a lock too (`_intent`: a locked skill left only in an earlier
phase is warned about), and the work graph starts at that phase (the earlier ones get no work
item, so `get_next_work` hands out the phase the plan names); an id that is no phase of the
plan is reported in ``profile_warnings`` and changes nothing. A plan bound to a native Goal
gets no Router-owned work graph.

Everything but a plan's ids follows from its deterministic inputs (objective, hints, routing
context, explicit lock, the Profiles' layers and digests, the warnings), so that part, its
*shape*, is built once per set of inputs and kept (the latest `SHAPES`): a plan then costs
its two ids and its work items. Plans of one shape share the shape's nested values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

from agora.mcp.validation import ValidationIssue
from agora.toolsets.router import classifier, profiles
from agora.toolsets.router.digests import stable_id

RUNTIME_MODE: Final = "bundled-local-r0"


class WorkItem(msgspec.Struct, frozen=True, gc=False):
    """One node of a Router-owned work graph: a phase's work, its gate and dependencies.

    Never tracked by the cyclic collector (``gc=False``): it holds only strings and tuples
    of strings, so it cannot be part of a cycle, and every run keeps one per phase.
    """

    work_item_id: str
    phase_id: str
    primary_skill_id: str | None
    support_skill_ids: tuple[str, ...]
    dependency_ids: tuple[str, ...]
    gate_id: str
    check_ids: tuple[str, ...]


class Plan(msgspec.Struct, frozen=True):
    """A built plan: the ``plan_work`` result body and the graph it creates."""

    workflow_run_id: str
    work_graph_id: str | None
    envelope: str
    goal_binding_id: str | None
    explicit_locked: bool
    items: tuple[WorkItem, ...]
    result: dict[str, Any]
    #: The routing identifiers kept with the run (sorted domains and tags), for Memory, and
    #: the ``workspace_root`` it was planned in as the caller sent it (when it named one):
    #: Memory remembers the run in that workspace only; and its ``current_phase_id`` (when
    #: it named one), so a reused key can name it when it changed (`reused`).
    routing: dict[str, Any] = msgspec.field(default_factory=dict)


def plan_issue(args: dict[str, Any]) -> ValidationIssue | None:
    """What the schema lets through but no plan can mean (`lock_issue`, an objective with
    nothing but whitespace: the classifier has nothing to read, or a blank `goal_issue`),
    or None."""
    if not args["objective"].strip():
        return ValidationIssue(
            ("objective",), "minLength",
            "must say what the work is: it holds only whitespace; send the user-visible outcome",
        )  # fmt: skip
    return goal_issue(args["goal_binding_id"], "for a Router-owned plan") or lock_issue(args)


def goal_issue(goal: str | None, null_is: str) -> ValidationIssue | None:
    """A ``goal_binding_id`` that is empty or only whitespace, which names no native Goal
    (a plan bound to it could never be progressed anywhere, and a status filter by it
    matches nothing), or None; ``null_is`` says what null asks for instead."""
    if goal is None or goal.strip():
        return None
    return ValidationIssue(
        ("goal_binding_id",), "minLength",
        f"must name a native Goal: an empty or blank id names none; send null {null_is}",
    )  # fmt: skip


def lock_issue(args: dict[str, Any]) -> ValidationIssue | None:
    """A contradictory Explicit Skill Lock, or None: ``explicit_semantics`` is null exactly
    when there is no lock (its schema), and an empty ``explicit_skill_ids`` plans
    automatically (its schema), so skills with null semantics, or semantics with no skill,
    say two things at once, and a blank skill id names no skill. Refused rather than guessed."""
    skills, semantics = args["explicit_skill_ids"], args["explicit_semantics"]
    blank = next((i for i, skill in enumerate(skills) if not skill.strip()), None)
    if blank is not None:  # a lock on no skill: no proposal (minLength 1) could ever name it
        return ValidationIssue(
            ("explicit_skill_ids", blank), "minLength",
            "must name a skill: an empty or blank skill id can never be planned or consented"
            " to; send the skill ids, or [] to plan automatically",
        )  # fmt: skip
    if skills and semantics is None:
        return ValidationIssue(
            ("explicit_semantics",), "dependencies",
            'must be "use", "only" or "all" when explicit_skill_ids names skills'
            " (null means no Explicit Skill Lock: then send explicit_skill_ids [])",
        )  # fmt: skip
    if not skills and semantics is not None:
        return ValidationIssue(
            ("explicit_skill_ids",), "dependencies",
            f"must name at least one skill when explicit_semantics is {semantics!r}"
            " (an empty list plans automatically: then send explicit_semantics null)",
        )  # fmt: skip
    return None


#: Support skills a phase of the tree holds (the contract's ``support_skill_ids`` maxItems).
SUPPORTS: Final = 3


class Unplaceable(Exception):
    """An ``all`` lock naming more skills than its plan's phases hold: ``issue`` says so."""

    def __init__(self, issue: ValidationIssue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _explicit_phases(
    skills: list[str], semantics: str, layout: tuple[profiles.Phase, ...]
) -> tuple[profiles.Phase, ...]:
    primaries = [skills[min(i, len(skills) - 1)] for i in range(len(layout))]
    spare = [s for s in skills if s not in primaries] if semantics == "all" else []
    if len(spare) > SUPPORTS * len(layout):
        n = len(layout)
        raise Unplaceable(
            ValidationIssue(
                ("explicit_skill_ids",),
                "maxItems",
                f'names {len(skills)} skills, and explicit_semantics "all" plans every one: this'
                f" plan has {n} phase{'s' if n > 1 else ''}, each one primary skill and at most"
                f" {SUPPORTS} supports, so at most {n * (SUPPORTS + 1)} fit; send fewer, or"
                ' explicit_semantics "use" (the rest then wait for propose_support_consent)',
            )
        )
    return tuple(
        profiles.Phase(
            p.phase_id,
            primaries[i],
            tuple(spare[SUPPORTS * i : SUPPORTS * (i + 1)]),
            p.gate_id,
            p.check_ids,
        )
        for i, p in enumerate(layout)
    )


def _unknown_phase(current: str, ids: list[str], rule: tuple[str, str] | None) -> str:
    said = (f"unknown-current-phase: routing_context.current_phase_id {current!r} is no phase"
            f" of this plan ({', '.join(ids)}): ")  # fmt: skip
    start = f"every phase's skills are planned and the work starts at {ids[0]!r}"
    if rule is not None:  # the file is at fault, not the phase the caller is in
        name, layer = rule
        return (f"{said}the rule {name} matched it by its match.phase, which names none of its"
                f" own phases, so the {layer} Profile file is at fault, not the phase sent (its"
                f" {layer}-profile-rule-phase-unplanned warning says what to fix); "
                f"{start}")  # fmt: skip
    return f"{said}{start}; send one of the phases, or null"


def _by_phase(
    route: profiles.Route, layers: list[profiles.Profile], current: str
) -> tuple[str, str] | None:
    """The matched rule (``profile#rule``) and its layer if it matched by its ``match.phase``
    ``current``."""
    if route.rule_id is None:
        return None
    for p in layers:
        source = profiles.ROUTE_SOURCES[p.layer] == route.route_source
        if source and any(f"{p.profile_id}#{r.rule_id}" == route.rule_id and r.phase == current
                          for r in p.rules):  # fmt: skip
            return route.rule_id, p.layer
    return None


def _single_fit(
    found: classifier.Classification, phases: tuple[profiles.Phase, ...] | None, current: Any
) -> tuple[classifier.Classification, tuple[profiles.Phase, ...] | None, str | None]:
    """A ``single`` envelope and a matched rule of several phases made to agree, since a
    single plan has one work item: the caller's ``requested_work_mode`` wins, keeping one
    phase of the rule (the current one, else the first) with a warning; the classifier's
    guess does not, and the rule's phases make the plan ``phased``."""
    if found.envelope != "single" or phases is None or len(phases) < 2:
        return found, phases, None
    if found.source != "caller-work-mode-hint":
        return classifier.with_profile_envelope(found, "phased"), phases, None
    ids = [p.phase_id for p in phases]
    keep = phases[ids.index(current)] if current in ids else phases[0]
    left = ", ".join(i for i in ids if i != keep.phase_id)
    why = (
        f'single-work-mode: requested_work_mode "single" plans one phase, {keep.phase_id}, of'
        f" the matched rule's {len(ids)}; the others ({left}) are left out: send"
        ' requested_work_mode null or "phased" to plan them all'
    )
    return found, (keep,), why


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _skills(phases: tuple[profiles.Phase, ...]) -> list[str]:
    return _unique([s for p in phases for s in (p.primary_skill_id, *p.support_skill_ids) if s])


def _intent(
    explicit: list[str], phases: tuple[profiles.Phase, ...], current: Any
) -> tuple[list[str], str | None]:
    """The planned skill ids, and a warning naming the locked skills left behind, if any.

    With a current phase that has a primary skill, only its skills are the current intent
    (the contract's ``current_phase_id``), under a lock too; a locked skill no phase holds
    still is (under ``use`` and ``only`` it may become the current phase's support by
    consent), while one placed only in a phase before the current one is not planned at
    all, so the warning names it. Otherwise every phase's skills (under a lock, every
    locked skill) are planned."""
    ids = [p.phase_id for p in phases]
    at = ids.index(current) if current in ids else None
    if at is None or phases[at].primary_skill_id is None:
        return explicit or _skills(phases), None
    placed = _skills(phases)
    planned = _unique([*_skills(phases[at : at + 1]), *(s for s in explicit if s not in placed)])
    left = [s for s in _skills(phases[:at]) if s in explicit and s not in planned]
    if not left:
        return planned, None
    return planned, (
        f"explicit-skill-skipped: {', '.join(left)} locked in explicit_skill_ids"
        f" {'is' if len(left) == 1 else 'are'} placed only in phases before the current phase"
        f" {current!r} ({', '.join(ids[:at])}), which get no work item, so not planned; send"
        " routing_context.current_phase_id null, or an earlier phase, to plan them"
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """The part of a plan that its ids do not change: one per set of deterministic inputs."""

    phases: tuple[profiles.Phase, ...]
    envelope: str
    #: The result's fields after its ids, in order; shared by every plan of this shape
    #: (and so by their results, runs and ledgers): never mutated.
    fields: dict[str, Any]
    routing: dict[str, list[str]]


#: Shapes kept for reuse (`_SHAPES`, oldest dropped first): agents plan the same objectives
#: with the same context again and again.
SHAPES: Final = 1024
_SHAPES: dict[tuple[Any, ...], _Shape] = {}


def _shape(args: dict[str, Any], layers: list[profiles.Profile], warnings: list[str]) -> _Shape:
    """The shape of a request's plan, from `_SHAPES` when one is kept for its inputs."""
    ctx = args.get("routing_context") or {}
    objective = args["objective"]
    key = (
        objective, args.get("requested_work_mode"), args.get("goal_binding_id") is not None,
        tuple(ctx.get("domains", ())), tuple(ctx.get("tags", ())), ctx.get("current_phase_id"),
        tuple(args.get("explicit_skill_ids") or ()), args.get("explicit_semantics"),
        tuple((p.layer, p.profile_id, p.digest) for p in layers), tuple(warnings),
    )  # fmt: skip
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _build_shape(args, ctx, layers, warnings)
        if len(objective) <= classifier.CACHED_CHARS:
            if len(_SHAPES) >= SHAPES:
                del _SHAPES[next(iter(_SHAPES))]
            _SHAPES[key] = shape
    return shape


def _build_shape(
    args: dict[str, Any], ctx: dict[str, Any], layers: list[profiles.Profile], warnings: list[str]
) -> _Shape:
    domains = tuple(ctx.get("domains", ()))
    tags = tuple(ctx.get("tags", ()))
    current = ctx.get("current_phase_id")
    goal = args.get("goal_binding_id")
    found = classifier.classify(
        args["objective"],
        requested_work_mode=args.get("requested_work_mode"),
        goal_binding_id=goal,
        domains=domains,
    )
    named = list(args.get("explicit_skill_ids") or [])
    explicit = _unique(named)
    if len(explicit) < len(named):  # planned once each, as the lock means them
        twice = sorted({s for s in named if named.count(s) > 1})
        warnings = [*warnings, f"duplicate-explicit-skill: {', '.join(twice)} named more than"
                    " once in explicit_skill_ids; each is planned once"]  # fmt: skip
    semantics = args.get("explicit_semantics") or "use"
    route, rule_phases = profiles.Route("user-explicit", (), None, None, None, None), None
    if not explicit:
        route = profiles.resolve(layers, domains, tags, current)
        found = classifier.with_profile_envelope(found, route.envelope)
        found, rule_phases, why = _single_fit(found, route.phases, current)
        warnings = warnings if why is None else [*warnings, why]
    envelope = found.envelope
    layout = rule_phases or profiles.BUILTIN_PHASES[envelope]
    phases = _explicit_phases(explicit, semantics, layout) if explicit else layout
    tree = [
        {
            "phase_id": p.phase_id,
            "primary_skill_id": p.primary_skill_id,
            "support_skill_ids": list(p.support_skill_ids),
            "exit_gate": p.gate_id,
        }
        for p in phases
        if p.primary_skill_id is not None
    ]
    ids = [p.phase_id for p in phases]
    planned, behind = _intent(explicit, phases, current)
    if current in ids:  # the work stands at that phase: the graph starts there
        phases = phases[ids.index(current) :]
    elif current is not None:
        warnings = [*warnings, _unknown_phase(current, ids, _by_phase(route, layers, current))]
    warnings = warnings if behind is None else [*warnings, behind]
    selection = "explicit-locked" if explicit else ("profile-route" if tree else "automatic")
    fields = {
        "created_work_items": 0 if goal is not None else len(phases),
        "routing_envelope": envelope,
        "runtime_mode": RUNTIME_MODE,
        "selection_mode": selection,
        "classification": found.as_json(),
        "route_source": route.route_source,
        "routing_profile_ids": list(route.profile_ids),
        "routing_profile_digest": route.profile_digest,
        "matched_profile_rule_id": route.rule_id,
        "profile_warnings": list(warnings),
        "planned_skill_ids": planned,
        "planned_skill_tree": tree,
        "activation_status": "intended-unverified" if planned else "not-planned",
        "support_consent_required": bool(explicit) and semantics != "all",
    }
    routing = {"domains": sorted(set(domains)), "tags": sorted(set(tags))}
    return _Shape(phases, envelope, fields, routing)


def build_plan(args: dict[str, Any], layers: list[profiles.Profile], warnings: list[str]) -> Plan:
    """Build the plan of one ``plan_work`` request.

    Args:
        args: The validated ``plan_work`` arguments.
        layers: Valid Profiles read for this request, highest layer first.
        warnings: Profile warnings collected while reading them (reported as given).

    Raises:
        Unplaceable: an ``all`` lock names more skills than the plan's phases hold.

    Returns:
        The plan with its result body (``workflow_run_id`` and ``work_graph_id`` derived
        from the session and idempotency key). Its nested values are shared with every plan
        of the same inputs (`_shape`): never mutate them.
    """
    session = args["context"]["session_id"]
    key = args["idempotency_key"]
    goal = args.get("goal_binding_id")
    shape = _shape(args, layers, warnings)
    run_id = stable_id("run", session, key)
    graph_id = None if goal is not None else stable_id("graph", session, key)
    items: list[WorkItem] = []
    if graph_id is not None:
        for p in shape.phases:
            deps = (items[-1].work_item_id,) if items else ()
            item_id = f"{graph_id}:{len(items) + 1}:{p.phase_id}"
            items.append(
                WorkItem(item_id, p.phase_id, p.primary_skill_id, p.support_skill_ids, deps,
                         p.gate_id, p.check_ids)
            )  # fmt: skip
    result = {
        "status": "planned", "workflow_run_id": run_id, "work_graph_id": graph_id,
        **shape.fields,
    }  # fmt: skip
    ctx = args.get("routing_context") or {}
    kept = {
        "workspace_root": ctx.get("workspace_root"),
        "current_phase_id": ctx.get("current_phase_id"),
    }
    routing = {**shape.routing, **{k: v for k, v in kept.items() if v is not None}}
    return Plan(run_id, graph_id, shape.envelope, goal, bool(args.get("explicit_skill_ids")),
                tuple(items), result, routing)  # fmt: skip
