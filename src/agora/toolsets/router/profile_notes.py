"""What a plan's text says of the workspace Profile when it did not shape the plan.

``profile_warnings`` carries codes; a model that reads only the prose never learnt that the
team's Profile was skipped (a JSON or schema error), read but matched by no rule (its
matchers are the only place the domains and tags it expects are written), or not there at all
(a subdirectory sent as the root): each case planned the builtin route in silence. Only a
plan under a ``workspace_root`` without an Explicit Skill Lock gets the line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router.layers import ROOT_REFUSALS
from agora.toolsets.router.memory_notes import root_meaning

if TYPE_CHECKING:
    from agora.toolsets.router.profiles import Profile, Rule

#: The file a workspace Profile is read from, under the root.
WORKSPACE_PATH: Final = ".codex/workflow-skill-router.json"
#: The most rules whose matchers one line lists.
MAX_RULES: Final = 10


def profile_line(routing: dict[str, Any], layers: list[Profile], warnings: list[str],
                 result: dict[str, Any], enclosing: str | None = None) -> str | None:  # fmt: skip
    """The plan's line on its workspace Profile, or None (no root, its rule planned and none
    of its rules has a problem, or the workspace has none: the usual case, said only when
    ``enclosing``, a directory above the root, holds one, or the context named domains or
    tags for the builtin route); a rule skipped or that cannot work as written is named
    with why."""
    root = routing.get("workspace_root")
    if root is None:
        return None
    flawed = [w.split(": ", 1)[-1] for w in warnings if w.startswith("workspace-profile-rule-")]
    said = f" Rule problems in it: {'; '.join(flawed)}." if flawed else ""
    if result.get("route_source") == "workspace-profile":
        return f"Workspace Profile read.{said}" if said else None
    line, read = _unused(root, routing, layers, warnings, result, enclosing)
    return line + said if line is not None and read else line


def _unused(root: str, routing: dict[str, Any], layers: list[Profile], warnings: list[str],
            result: dict[str, Any], enclosing: str | None) -> tuple[str | None, bool]:  # fmt: skip
    """Why the workspace Profile at ``root`` did not plan: refused, skipped, absent, or no
    rule matched; and whether it was read (its rules' problems then follow)."""
    fell = _fell_back(result)
    refused = next((w for w in warnings if w in ROOT_REFUSALS), None)
    if refused is not None:
        said = f"{refused}: {root_meaning(refused, root)}"
        return (f"Workspace Profile not read: routing_context.workspace_root {json.dumps(root)}"
                f" is refused ({said}); {fell}"), False  # fmt: skip
    path = f"{root.rstrip('/')}/{WORKSPACE_PATH}"
    problems = [w.split(": ", 1)[-1] for w in warnings if w.startswith("workspace-profile-")
                and not w.startswith("workspace-profile-rule-")]  # fmt: skip
    if problems:
        return (f"Workspace Profile {path} skipped: {'; '.join(problems)}. Fix the file (then"
                f" plan again); {fell}"), False  # fmt: skip
    profile = next((p for p in layers if p.layer == "workspace"), None)
    if profile is None:
        return _absent(path, routing, result, enclosing), False
    missed = _missed(profile, routing, result)
    return f"Workspace Profile {profile.profile_id} ({path}) read: {missed}", True


def _absent(path: str, routing: dict[str, Any], result: dict[str, Any], enclosing: str | None
            ) -> str | None:  # fmt: skip
    """A workspace without a Profile file is the usual case: no line, unless a directory
    above the root holds one (the root sent may be a subdirectory of the workspace meant),
    or the builtin default planned a context that named domains or tags (a neutral note)."""
    fell = _fell_back(result)
    if enclosing is not None:
        return (f"No workspace Profile at {path}, but {enclosing} above it holds one"
                f" ({enclosing.rstrip('/')}/{WORKSPACE_PATH}): a workspace_root names the"
                " directory that holds .codex/, so if this work belongs to that workspace,"
                f" plan again with workspace_root {json.dumps(enclosing)} and a new"
                f" idempotency_key; {fell}")  # fmt: skip
    named = routing.get("domains") or routing.get("tags")
    if named and result.get("route_source") == "builtin-default":
        return f"No workspace Profile at {path}: this workspace has no team Profile; {fell}"
    return None


def _missed(profile: Profile, routing: dict[str, Any], result: dict[str, Any]) -> str:
    """Why a workspace Profile that was read planned nothing, and what (if anything) to do:
    a broken file is fixed, never fitted by another routing_context; a plan that a lower
    Profile layer's rule made stands; only a builtin-default plan lists its rules' matchers,
    for a context that left out what describes the work."""
    fell = _fell_back(result)
    domains, tags = routing.get("domains", []), routing.get("tags", [])
    phase = routing.get("current_phase_id")
    sent = f"domains {json.dumps(domains)}, tags {json.dumps(tags)}"
    if phase is not None:
        sent += f", current phase {phase}"
    meant = [r for r in profile.skipped if r.matches(tuple(domains), tuple(tags), phase)]
    if meant:
        return (
            f"its rule {meant[0].rule_id} matches {sent} but is skipped (the file's rule is"
            f" broken: see its rule problems), so the Profile did not plan; {fell} Fix"
            " the file, then plan again with a new idempotency_key; do not change the"
            " routing_context to fit another rule."
        )
    if not profile.rules:
        if profile.skipped:
            return (f"none of its rules is valid (every one is skipped: see its rule"
                    f" problems), so it plans nothing; {fell} Fix the file for the work it is"
                    " meant for; none of its skipped rules matches this work, so this plan"
                    " stands.")  # fmt: skip
        return f"it has no rules; {fell}"
    if result.get("route_source") != "builtin-default":
        return f"none of its rules matches {sent}; {fell}"
    rules = "; ".join(_matchers(r) for r in profile.rules[:MAX_RULES])
    more = " ..." if len(profile.rules) > MAX_RULES else ""
    return (
        f"no rule matched {sent} (its rules match: {rules}{more}); {fell} If one of its rules"
        " is meant for this work and the routing_context left out a domain or tag that"
        " describes the work, plan again with it and a new idempotency_key; never send a"
        " domain or tag the work does not have just to match a rule."
    )


def _fell_back(result: dict[str, Any]) -> str:
    source, rule = result.get("route_source"), result.get("matched_profile_rule_id")
    by = f" (rule {rule})" if rule else ""
    return f"the plan is the {source} route{by}."


def _matchers(rule: Rule) -> str:
    said = []
    if rule.domains_any:
        said.append(f"domains any of {json.dumps(sorted(rule.domains_any))}")
    if rule.tags_all:
        said.append(f"tags all of {json.dumps(sorted(rule.tags_all))}")
    if rule.phase is not None:
        said.append(f"current phase {rule.phase}")
    return f"{rule.rule_id}: {', '.join(said) or 'every context'}"
