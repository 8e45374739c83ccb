"""The structural classifier: single, phased or managed-goal, from the shape of an objective.

No model and no network: the same objective and hints always give the same answer, with
the reasons that decided it. The rules (revision ``agora-structural-v3``), in order:

1. A ``goal_binding_id`` makes the plan ``managed-goal`` (source ``native-goal-binding``):
   a native Goal owns the outer envelope.
2. A ``requested_work_mode`` is taken as given (source ``caller-work-mode-hint``).
3. Otherwise the objective is read for structural signals (source ``deterministic-analyzer``):
   ``enumerated-steps`` (two or more numbered or bulleted items, "1." "2)" "-" "*" or the
   ideographic "1、", at the start of the objective or a line, or labelled steps: phase,
   step, stage, milestone or part, with a number, 1-99, one-ten or i-x, or after an ordinal,
   first-tenth, then a colon, period, parenthesis or dash: "Phase 1:", "Step two -",
   "Second stage:"), ``sequencing-words`` (then, next, finally, after that, followed by,
   afterwards, once done, or a stepwise phrase: "phase by phase", "step by step", "stage by
   stage", "milestone by milestone", "part by part"), ``multiple-action-families``
   (two or more of the families of `_FAMILIES`: plan, implement, test, document, release,
   review, each counted once; a family preceded by a negation such as "do not" or "skip"
   is ignored and reported as ``negated-action-ignored``), ``multi-domain`` (two or more
   routing domains), and managed-goal signals (milestones, cross-repository work,
   long-running or resumable work, including "over the next quarter", "over several months",
   "multi-month", a dependency graph, a roadmap).
   Two or more managed-goal signals give ``managed-goal``; enumerated steps, a stepwise
   phrase, sequencing words joining two action families, three or more action families, or
   several domains give ``phased``; anything else is ``single``.
4. An objective with no signal at all is ``single`` by the builtin fallback (source
   ``builtin-fallback``, reason ``no-structural-signal``, confidence ``low``).

A matched Profile rule may later set the envelope (source ``profile-route``) when neither a
goal binding nor a hint fixed it. This module is pure, so `classify` is memoised for
objectives up to `CACHED_CHARS` long: agents send the same objectives again and again, and
the regular expressions cost more than the rest of a plan.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

Envelope = Literal["single", "phased", "managed-goal"]
Source = Literal[
    "native-goal-binding",
    "caller-work-mode-hint",
    "deterministic-analyzer",
    "profile-route",
    "builtin-fallback",
    "legacy-replay",
]
Confidence = Literal["high", "medium", "low"]

REVISION: Final = "agora-structural-v3"
#: Longest objective whose classification is cached (the latest 1024 are: a few MiB at most).
CACHED_CHARS: Final = 2048

_FAMILIES: Final = {
    "plan": r"plan|design|analy[sz]e|investigate|scope",
    "implement": r"implement|build|develop|code|write\s+code|add|refactor|migrate|fix",
    "test": r"test|verify|validate|benchmark",
    "document": r"document|write\s+(?:the\s+)?docs?|update\s+(?:the\s+)?docs?",
    "release": r"release|deploy|ship|publish",
    "review": r"review|audit",
}
_FAMILY_RES: Final = {
    name: re.compile(rf"\b(?:{words})(?:s|es|ed|ing)?\b") for name, words in _FAMILIES.items()
}
_NEGATION: Final = re.compile(r"\b(?:not|don't|dont|no|never|without|skip|skipping)\s+(?:\w+\s+)?$")
_SEQUENCE: Final = re.compile(
    r"\b(?:then|next|finally|afterwards|after\s+that|followed\s+by|once\s+done)\b"
)
#: A numbered or bulleted item: "1. ", "2) ", "- ", "* ", or "1、" (the ideographic comma
#: numbering of Chinese and Japanese lists, with no space after it).
_ENUMERATED: Final = re.compile(
    r"(?:^|[\n;:])\s*(?:(?:\d{1,2}[.)]|[-*\u2022])\s+|\d{1,2}\u3001\s*)\S"
)
_UNITS: Final = r"phase|step|stage|milestone|part"
_NUMBERS: Final = r"\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|i{1,3}|iv|vi{0,3}|ix|x"
_ORDINALS: Final = r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
#: A labelled step: "Phase 1:", "Step two -", "Stage III)", "Milestone 2.", "Second phase:".
_LABELLED: Final = re.compile(
    rf"\b(?:(?:{_UNITS})\s+(?:{_NUMBERS})|(?:{_ORDINALS})\s+(?:{_UNITS}))"
    r"\s*(?::|\)|\.(?!\d)|[\u2013\u2014]|-(?=\s))"
)
#: A stepwise phrase: "phase by phase", "step by step", "milestone by milestone".
_STEPWISE: Final = re.compile(rf"\b({_UNITS})\s+by\s+\1\b")
_MANAGED: Final = {
    "milestones": re.compile(r"\bmilestones?\b"),
    "cross-repository": re.compile(r"\bcross[-\s]?repo(?:sitory|sitories|s)?\b|\bacross\s+repos"),
    "long-running": re.compile(
        r"\b(?:long[-\s]?running|resumable|multi[-\s]?(?:week|month|quarter)s?"
        r"|over\s+(?:the\s+)?(?:next\s+|coming\s+)?(?:few\s+|several\s+|\d+\s+)?"
        r"(?:weeks|months|quarters?|sprints))\b"
    ),
    "dependency-graph": re.compile(r"\bdependency\s+(?:graph|dag)\b"),
    "roadmap": re.compile(r"\broadmap\b"),
}


@dataclass(frozen=True, slots=True)
class Classification:
    """The envelope of a plan and why."""

    envelope: Envelope
    source: Source
    confidence: Confidence
    reason_codes: tuple[str, ...]
    classifier_revision: str = REVISION

    def as_json(self) -> dict[str, object]:
        """The ``classification`` object of a ``plan_work`` result."""
        return {
            "source": self.source,
            "confidence": self.confidence,
            "reason_codes": list(self.reason_codes),
            "classifier_revision": self.classifier_revision,
        }


def _normalise(objective: str) -> str:
    return unicodedata.normalize("NFKC", objective).casefold()


def _families(text: str) -> tuple[set[str], bool]:
    found: set[str] = set()
    negated = False
    for name, pattern in _FAMILY_RES.items():
        for match in pattern.finditer(text):
            if _NEGATION.search(text[max(0, match.start() - 24) : match.start()]):
                negated = True
                continue
            found.add(name)
            break
    return found, negated


def classify(
    objective: str,
    *,
    requested_work_mode: Envelope | None = None,
    goal_binding_id: str | None = None,
    domains: tuple[str, ...] = (),
) -> Classification:
    """Classify one objective by the rules in this module's docstring.

    Args:
        objective: The user-visible outcome (any text).
        requested_work_mode: The caller's explicit envelope hint, if any.
        goal_binding_id: The native Goal this plan progresses, if any.
        domains: The routing context's domain identifiers.

    Returns:
        The envelope, its source, a categorical confidence and the reason codes (immutable,
        and the same object for the same arguments while they are cached).
    """
    if goal_binding_id is not None or len(objective) > CACHED_CHARS:  # no regex, or no cache
        return _classify(objective, requested_work_mode, goal_binding_id, domains)
    return _cached(objective, requested_work_mode, None, domains)


def _classify(
    objective: str,
    requested_work_mode: Envelope | None,
    goal_binding_id: str | None,
    domains: tuple[str, ...],
) -> Classification:
    if goal_binding_id is not None:
        return Classification(
            "managed-goal", "native-goal-binding", "high", ("native-goal-binding",)
        )
    if requested_work_mode is not None:
        return Classification(
            requested_work_mode, "caller-work-mode-hint", "high", ("caller-work-mode-hint",)
        )
    text = _normalise(objective)
    reasons: list[str] = []
    families, negated = _families(text)
    if negated:
        reasons.append("negated-action-ignored")
    enumerated = len(_ENUMERATED.findall(text)) + len(_LABELLED.findall(text)) >= 2
    stepwise = bool(_STEPWISE.search(text))
    sequencing = stepwise or bool(_SEQUENCE.search(text))
    managed = [name for name, pattern in _MANAGED.items() if pattern.search(text)]
    multi_domain = len(set(domains)) >= 2
    if enumerated:
        reasons.append("enumerated-steps")
    if sequencing:
        reasons.append("sequencing-words")
    if len(families) >= 2:
        reasons.append("multiple-action-families")
    if multi_domain:
        reasons.append("multi-domain")
    reasons.extend(f"managed-signal:{name}" for name in managed)
    if len(managed) >= 2:
        reasons.append("managed-goal-signals")
        confidence: Confidence = "high" if len(managed) >= 3 else "medium"
        return Classification("managed-goal", "deterministic-analyzer", confidence, tuple(reasons))
    staged = enumerated or stepwise or (sequencing and len(families) >= 2)
    if staged or len(families) >= 3 or multi_domain:
        confidence = "high" if staged else "medium"
        return Classification("phased", "deterministic-analyzer", confidence, tuple(reasons))
    if not families and not reasons and not managed:
        return Classification("single", "builtin-fallback", "low", ("no-structural-signal",))
    reasons.append("single-default")
    confidence = "high" if len(families) == 1 and not sequencing else "medium"
    return Classification("single", "deterministic-analyzer", confidence, tuple(reasons))


_cached: Final = functools.lru_cache(maxsize=1024)(_classify)


def with_profile_envelope(found: Classification, envelope: Envelope | None) -> Classification:
    """Apply a matched Profile rule's envelope when no goal binding or hint fixed it.

    Returns:
        ``found`` unchanged, or a ``profile-route`` classification when the rule names a
        different envelope.
    """
    if envelope is None or envelope == found.envelope:
        return found
    if found.source in ("native-goal-binding", "caller-work-mode-hint"):
        return found
    reasons = (*found.reason_codes, "profile-envelope")
    return Classification(envelope, "profile-route", "high", reasons)
