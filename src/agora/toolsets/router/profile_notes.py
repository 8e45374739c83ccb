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
                 result: dict[str, Any]) -> str | None:  # fmt: skip
    """The plan's line on its workspace Profile, or None (no root, or its rule planned and
    none of its rules has a problem); a rule skipped or that cannot work as written is named
    with why."""
    root = routing.get("workspace_root")
    if root is None:
        return None
    flawed = [w.split(": ", 1)[-1] for w in warnings if w.startswith("workspace-profile-rule-")]
    said = f" Rule problems in it: {'; '.join(flawed)}." if flawed else ""
    if result.get("route_source") == "workspace-profile":
        return f"Workspace Profile read.{said}" if said else None
    line = _unused(root, routing, layers, warnings, result)
    return line + said if "read: no rule matched" in line else line


def _unused(root: str, routing: dict[str, Any], layers: list[Profile], warnings: list[str],
            result: dict[str, Any]) -> str:  # fmt: skip
    """Why the workspace Profile at ``root`` did not plan: refused, skipped, absent, or no
    rule matched."""
    fell = _fell_back(result)
    refused = next((w for w in warnings if w in ROOT_REFUSALS), None)
    if refused is not None:
        return (f"Workspace Profile not read: routing_context.workspace_root {json.dumps(root)}"
                f" is refused ({refused}: {root_meaning(refused, root)}); {fell}")  # fmt: skip
    path = f"{root.rstrip('/')}/{WORKSPACE_PATH}"
    problems = [w.split(": ", 1)[-1] for w in warnings if w.startswith("workspace-profile-")
                and not w.startswith("workspace-profile-rule-")]  # fmt: skip
    if problems:
        return (f"Workspace Profile {path} skipped: {'; '.join(problems)}. Fix the file (then"
                f" plan again); {fell}")  # fmt: skip
    profile = next((p for p in layers if p.layer == "workspace"), None)
    if profile is None:
        return (f"No workspace Profile at {path} (a workspace_root names the directory that"
                f" holds .codex/); {fell}")  # fmt: skip
    sent = (f"domains {json.dumps(routing.get('domains', []))}, tags"
            f" {json.dumps(routing.get('tags', []))}")  # fmt: skip
    if routing.get("current_phase_id") is not None:
        sent += f", current phase {routing['current_phase_id']}"
    rules = "; ".join(_matchers(r) for r in profile.rules[:MAX_RULES]) or "none valid"
    more = " ..." if len(profile.rules) > MAX_RULES else ""
    return (
        f"Workspace Profile {profile.profile_id} ({path}) read: no rule matched {sent} (its"
        f" rules match: {rules}{more}); {fell} To plan by it, send routing_context domains"
        " and tags its rules name, and a new idempotency_key."
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
