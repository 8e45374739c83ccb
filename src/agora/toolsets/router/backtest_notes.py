"""What a candidate's failed backtest means, cause by cause, and what to do.

A preview whose backtest is not acceptable answers ``previewed`` with the reason code
``profile-backtest-failed`` and its approval is refused with the same code; the outputSchema
has no field for the cause, so the text block names the one that applies: coverage under the
minimum, planned route regressions, or a manual Profile (the user's own) that already plans
the candidate's runs, so a managed rule would never be used.
"""

from __future__ import annotations

import json
from typing import Any, Final

from agora.toolsets.router import profiles
from agora.toolsets.router.previews import MIN_COVERAGE

#: What a failed backtest leaves the reviewer to do when nothing can make it pass.
_REJECT: Final = (
    "reject it (transition_profile_update action reject), and it is not proposed for 180 days"
)


def causes(test: dict[str, Any], manual_rule: str | None = None, seed: str = "") -> str:
    """Why ``test`` (a proposal's backtest) is not acceptable, with what to do for each
    cause; ``manual_rule``: the manual Profile rule that takes precedence (``profile#rule``),
    if known; ``seed``: the runs' routing context, as "domains [...], tags [...]"."""
    said = []
    if test["manual_precedence"]:
        which = f"the user's rule {manual_rule}" if manual_rule else "a rule of the user's own"
        said.append(
            f"a manual Profile takes precedence: {which} (the workspace file"
            " .codex/workflow-skill-router.json or the personal Profile, which outrank every"
            f" managed Profile) already plans the routing context of its runs{seed}, so this"
            " rule would never be used and there is nothing to approve. To have such work"
            " routed by it, the user changes or removes that rule in their file; otherwise "
            + _REJECT
        )
    if test["positive_match_coverage"] < MIN_COVERAGE:
        said.append(
            f"its rule plans exactly {test['positive_match_count']} of its"
            f" {test['positive_observation_count']} runs' routes (coverage"
            f" {test['positive_match_coverage']:.2f}, under {MIN_COVERAGE}); remember more runs"
            " on this route, or " + _REJECT
        )
    if regressions := test["planned_route_regressions"]:
        said.append(
            f"{regressions} other remembered run{'s' if regressions != 1 else ''} that its rule"
            " matches took another route (planned route regressions), which it would change;"
            " review them, or " + _REJECT
        )
    return "; ".join(said) or "its backtest is not acceptable"


def seed_of(document: dict[str, Any]) -> str:
    """A run's routing context as `causes` quotes it."""
    domains, tags = document.get("domains", []), document.get("tags", [])
    return f" (domains {json.dumps(domains)}, tags {json.dumps(tags)})"


def previewed(test: dict[str, Any], manual: list[profiles.Profile], doc: dict[str, Any]) -> str:
    """The text block of a ``previewed`` answer whose backtest is not acceptable; ``manual``:
    the manual Profiles, ``doc``: one of the candidate's runs (its routing context)."""
    context = (tuple(doc.get("domains", [])), tuple(doc.get("tags", [])), None)
    rule = profiles.resolve(manual, *context).rule_id
    return (
        "Previewed, but it cannot be approved: profile-backtest-failed: "
        + causes(test, rule, seed_of(doc))
        + "."
    )
