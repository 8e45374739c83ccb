"""Routing Profiles: the versioned JSON format, its validation, rule matching and precedence.

A Profile (format ``agora-router-profile/1``, JSON Schema `PROFILE_SCHEMA`, documented in
docs/router-profiles.md) is an ordered list of rules. A rule matches a routing context by
domains (any of), tags (all of) and the current phase; the first matching rule of the
highest layer wins. Layers, highest first: the workspace file
``<root>/.codex/workflow-skill-router.json``, the operator's personal profile, then the
builtin default, which always matches. An invalid Profile never fails a plan: it is skipped
with a warning. Reading files is not this module's job (see `workspace`); it is pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from agora.mcp.validation import compile_validator
from agora.toolsets import strict_json
from agora.toolsets.router.digests import digest

if TYPE_CHECKING:
    from agora.toolsets.router.classifier import Envelope

FORMAT: Final = "agora-router-profile/1"
_ID: Final = "^[a-z0-9][a-z0-9._:-]{0,127}$"
_ROUTING_ID: Final = "^[a-z0-9][a-z0-9._-]{0,63}$"
_ID_LIST: Final = {
    "type": "array",
    "maxItems": 32,
    "uniqueItems": True,
    "items": {"type": "string", "pattern": _ROUTING_ID},
}

PROFILE_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$id": "https://agora.invalid/schemas/agora-router-profile-1.json",
    "title": "agora router Profile, format 1",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "profile_id", "rules"],
    "properties": {
        "format": {"const": FORMAT},
        "profile_id": {"type": "string", "pattern": _ID},
        "description": {"type": "string", "maxLength": 2000},
        "rules": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["rule_id", "phases"],
                "properties": {
                    "rule_id": {"type": "string", "pattern": _ID},
                    "match": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "domains_any": _ID_LIST,
                            "tags_all": _ID_LIST,
                            "phase": {"type": "string", "pattern": _ROUTING_ID},
                        },
                    },
                    "envelope": {"enum": ["single", "phased", "managed-goal"]},
                    "phases": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 16,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["phase_id", "primary_skill_id", "exit_gate"],
                            "properties": {
                                "phase_id": {"type": "string", "pattern": _ROUTING_ID},
                                "primary_skill_id": {"type": "string", "pattern": _ID},
                                "support_skill_ids": {
                                    "type": "array",
                                    "maxItems": 3,
                                    "uniqueItems": True,
                                    "items": {"type": "string", "pattern": _ID},
                                },
                                "exit_gate": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["gate_id", "check_ids"],
                                    "properties": {
                                        "gate_id": {"type": "string", "pattern": _ID},
                                        "check_ids": {
                                            "type": "array",
                                            "minItems": 1,
                                            "maxItems": 16,
                                            "uniqueItems": True,
                                            "items": {"type": "string", "pattern": _ID},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
_VALIDATOR: Final = compile_validator(PROFILE_SCHEMA)

Layer = Literal["workspace", "managed-workspace", "personal", "managed-personal", "builtin"]
ROUTE_SOURCES: Final[dict[Layer, str]] = {
    "workspace": "workspace-profile",
    "managed-workspace": "managed-workspace-profile",
    "personal": "personal-profile",
    "managed-personal": "managed-personal-profile",
    "builtin": "builtin-default",
}


@dataclass(frozen=True, slots=True)
class Phase:
    """One planned phase: its primary skill, up to 3 supports, and its exit gate's checks."""

    phase_id: str
    primary_skill_id: str | None
    support_skill_ids: tuple[str, ...]
    gate_id: str
    check_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One Profile rule."""

    rule_id: str
    domains_any: frozenset[str]
    tags_all: frozenset[str]
    phase: str | None
    envelope: Envelope | None
    phases: tuple[Phase, ...]

    def matches(self, domains: tuple[str, ...], tags: tuple[str, ...], phase: str | None) -> bool:
        """Whether this rule applies to a routing context."""
        if self.domains_any and not self.domains_any & set(domains):
            return False
        if not self.tags_all <= set(tags):
            return False
        return self.phase is None or self.phase == phase


@dataclass(frozen=True, slots=True)
class Profile:
    """A validated Profile and where it came from."""

    layer: Layer
    profile_id: str
    digest: str
    rules: tuple[Rule, ...]
    #: the rules skipped (`parse_profile`'s ``-rule-skipped`` warnings): they never match, but
    #: a plan's text says when one of them would have (the file is at fault, not the context)
    skipped: tuple[Rule, ...] = ()


def _phase(raw: dict[str, Any]) -> Phase:
    gate = raw["exit_gate"]
    return Phase(
        raw["phase_id"],
        raw["primary_skill_id"],
        tuple(raw.get("support_skill_ids", ())),
        gate["gate_id"],
        tuple(gate["check_ids"]),
    )


def parse_profile(layer: Layer, text: str) -> tuple[Profile | None, list[str]]:
    """Validate a Profile document; never raises.

    Args:
        layer: Which layer the text came from (names the warnings).
        text: The file's content.

    Returns:
        The Profile, or None with warnings such as ``workspace-profile-invalid: ...``.
    """
    try:
        raw = strict_json.loads(text)
    except strict_json.DuplicateKey as twice:  # which one the author meant is not ours to guess
        key = json.dumps(twice.args[0][:64])
        return None, [f"{layer}-profile-invalid: the key {key} is given twice"]
    except json.JSONDecodeError as bad:
        return None, [f"{layer}-profile-invalid: {_not_json(text, bad)}"]
    except (ValueError, RecursionError):
        return None, [f"{layer}-profile-invalid: not valid JSON"]
    problems = _VALIDATOR.errors(raw)
    if problems:  # a file's field, not a tool's argument; every one, so one edit fixes all
        said = [p.describe("field", "the Profile") for p in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            said[-1] += f" (and {len(problems) - MAX_PROBLEMS} more problems)"
        return None, [f"{layer}-profile-invalid: {problem}" for problem in said]
    rules: list[Rule] = []
    skipped: list[Rule] = []
    warnings: list[str] = []
    seen: dict[str, int] = {}
    count = len(raw["rules"])
    for n, r in enumerate(raw["rules"], start=1):
        phases = tuple(_phase(p) for p in r["phases"])
        match = r.get("match", {})
        rule = Rule(
            r["rule_id"],
            frozenset(match.get("domains_any", ())),
            frozenset(match.get("tags_all", ())),
            match.get("phase"),
            r.get("envelope"),
            phases,
        )
        why = _skipped(r["rule_id"], phases, seen)
        if why is not None:
            warnings.append(f"{layer}-profile-rule-skipped: {r['rule_id']}: rule {n} of {count}"
                            f" is skipped: {why}")  # fmt: skip
            skipped.append(rule)
            continue
        seen[r["rule_id"]] = n
        rules.append(rule)
    profile = Profile(layer, raw["profile_id"], digest(raw), tuple(rules), tuple(skipped))
    return profile, warnings


#: The most schema problems of one Profile file named (one warning each).
MAX_PROBLEMS: Final = 10


def _not_json(text: str, bad: json.JSONDecodeError) -> str:
    """What is wrong with a Profile file that is not JSON, where."""
    if not text.strip():
        return "not valid JSON: the file is empty"
    if text.startswith("\ufeff"):
        return (
            "not valid JSON: the file starts with a UTF-8 byte order mark (BOM); save it as"
            " UTF-8 without one"
        )
    return f"not valid JSON: {bad.msg} at line {bad.lineno} column {bad.colno}"


def _skipped(rule_id: str, phases: tuple[Phase, ...], seen: dict[str, int]) -> str | None:
    """Why a rule is skipped (None: it is kept); ``seen``: the kept rules' numbers by id."""
    if rule_id in seen:
        return f"rule {seen[rule_id]} has the rule_id {rule_id!r} already (the first is kept)"
    ids = [p.phase_id for p in phases]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        return f"the phase_id {twice[0]!r} is given to more than one of its phases"
    for p in phases:
        if p.primary_skill_id in p.support_skill_ids:
            return f"{p.primary_skill_id} is phase {p.phase_id}'s primary skill and its support"
    return None


def advisories(profile: Profile) -> list[str]:
    """Warnings on a valid manual Profile's rules that are kept but cannot work as written:
    a rule after a catch-all (no matcher), which never matches, and a ``match.phase`` that
    names none of the rule's own phases (the plan it makes has no such phase)."""
    said: list[str] = []
    layer = profile.layer
    catch_all: Rule | None = None
    for rule in profile.rules:
        if catch_all is not None:
            said.append(
                f"{layer}-profile-rule-shadowed: {rule.rule_id}: it never matches: the earlier"
                f" rule {catch_all.rule_id} has no matcher, so it matches every context first"
            )
        own = [p.phase_id for p in rule.phases]
        if rule.phase is not None and rule.phase not in own:
            said.append(
                f"{layer}-profile-rule-phase-unplanned: {rule.rule_id}: its match.phase"
                f" {rule.phase!r} is none of its own phases ({', '.join(own)}), so a plan it"
                " matches has no such phase; fix the file (match.phase names the phase the"
                " work is in, routing_context.current_phase_id)"
            )
        if catch_all is None and _catches_all(rule):
            catch_all = rule
    return said


def _catches_all(rule: Rule) -> bool:
    return not rule.domains_any and not rule.tags_all and rule.phase is None


def _builtin_phase(phase_id: str, check: str) -> Phase:
    return Phase(phase_id, None, (), f"{phase_id}-exit", (check,))


#: The phases of each envelope when no Profile matches. No skills are planned.
BUILTIN_PHASES: Final[dict[str, tuple[Phase, ...]]] = {
    "single": (_builtin_phase("work", "work-done"),),
    "phased": (
        _builtin_phase("plan", "plan-ready"),
        _builtin_phase("implement", "implementation-done"),
        _builtin_phase("verify", "verification-passed"),
    ),
    "managed-goal": (
        _builtin_phase("scope", "scope-agreed"),
        _builtin_phase("milestone-1", "milestone-1-done"),
        _builtin_phase("milestone-2", "milestone-2-done"),
        _builtin_phase("integrate", "integration-verified"),
    ),
}


@dataclass(frozen=True, slots=True)
class Route:
    """What the Profile layers decided for one plan."""

    route_source: str
    profile_ids: tuple[str, ...]
    profile_digest: str | None
    rule_id: str | None
    envelope: Envelope | None
    phases: tuple[Phase, ...] | None


def resolve(
    profiles: list[Profile], domains: tuple[str, ...], tags: tuple[str, ...], phase: str | None
) -> Route:
    """The first matching rule of the highest layer; the builtin default if none matches.

    Args:
        profiles: Valid Profiles, highest layer first.
        domains: Routing domains.
        tags: Routing tags.
        phase: The current phase identifier, if any.
    """
    for profile in profiles:
        for rule in profile.rules:
            if rule.matches(domains, tags, phase):
                return Route(
                    ROUTE_SOURCES[profile.layer],
                    (profile.profile_id,),
                    profile.digest,
                    f"{profile.profile_id}#{rule.rule_id}",
                    rule.envelope,
                    rule.phases,
                )
    return Route("builtin-default", (), None, None, None, None)
