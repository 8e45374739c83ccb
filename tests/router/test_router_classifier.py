"""The structural classifier: a table of objectives and the classification each must get."""

from __future__ import annotations

import pytest

from agora.toolsets.router.classifier import (
    CACHED_CHARS,
    REVISION,
    _cached,
    _classify,
    classify,
    with_profile_envelope,
)

TABLE = [
    pytest.param("Fix the typo in the README", {}, "single", "deterministic-analyzer", "high",
                 ("single-default",), id="one-action"),
    pytest.param("hello there", {}, "single", "builtin-fallback", "low",
                 ("no-structural-signal",), id="no-signal"),
    pytest.param("1. design the API\n2. implement it\n3. test it", {}, "phased",
                 "deterministic-analyzer", "high",
                 ("enumerated-steps", "multiple-action-families"), id="enumerated"),
    pytest.param("- add the parser\n- document the flags", {}, "phased", "deterministic-analyzer",
                 "high", ("enumerated-steps", "multiple-action-families"), id="bullets"),
    pytest.param("Design the cache, then implement it", {}, "phased", "deterministic-analyzer",
                 "high", ("sequencing-words", "multiple-action-families"), id="sequencing"),
    pytest.param("Implement the endpoint, test it and document it", {}, "phased",
                 "deterministic-analyzer", "medium", ("multiple-action-families",),
                 id="three-families"),
    pytest.param("Implement the endpoint but do not test it", {}, "single",
                 "deterministic-analyzer", "high", ("negated-action-ignored", "single-default"),
                 id="negated-family"),
    pytest.param("Refactor the module", {"domains": ("web", "db")}, "phased",
                 "deterministic-analyzer", "medium", ("multi-domain",), id="multi-domain"),
    pytest.param("Ship the roadmap milestones across repos", {}, "managed-goal",
                 "deterministic-analyzer", "high",
                 ("managed-signal:milestones", "managed-signal:cross-repository",
                  "managed-signal:roadmap", "managed-goal-signals"), id="managed"),
    pytest.param("Two milestones in a long-running effort", {}, "managed-goal",
                 "deterministic-analyzer", "medium",
                 ("managed-signal:milestones", "managed-signal:long-running",
                  "managed-goal-signals"), id="managed-medium"),
    pytest.param("Phase 1: add the users table. Phase 2: add the API endpoint. Phase 3: add "
                 "the UI.", {}, "phased", "deterministic-analyzer", "high",
                 ("enumerated-steps",), id="labelled-phases"),
    pytest.param("Step 1 - add the parser; step 2 - wire it in", {}, "phased",
                 "deterministic-analyzer", "high", ("enumerated-steps",), id="labelled-steps"),
    pytest.param("Stage 3 - rename the flags. Stage 4 - drop the old ones", {}, "phased",
                 "deterministic-analyzer", "high", ("enumerated-steps",), id="labelled-stages"),
    pytest.param("Step one: add the parser. Step two: add the flags.", {}, "phased",
                 "deterministic-analyzer", "high", ("enumerated-steps",), id="spelled-out"),
    pytest.param("First phase: add the parser. Second phase: add the flags.", {}, "phased",
                 "deterministic-analyzer", "high", ("enumerated-steps",), id="ordinal-phases"),
    pytest.param("Milestone 1: add the parser. Milestone 2: add the flags.", {}, "phased",
                 "deterministic-analyzer", "high",
                 ("enumerated-steps", "managed-signal:milestones"), id="labelled-milestones"),
    pytest.param("Add the parser in phase 2 of the project", {}, "single",
                 "deterministic-analyzer", "high", ("single-default",), id="one-phase-mention"),
    pytest.param("Migrate the billing service phase by phase", {}, "phased",
                 "deterministic-analyzer", "high", ("sequencing-words",), id="phase-by-phase"),
    pytest.param("Refactor the parser step by step", {}, "phased", "deterministic-analyzer",
                 "high", ("sequencing-words",), id="step-by-step"),
    pytest.param("Migrate the billing service milestone by milestone", {}, "phased",
                 "deterministic-analyzer", "high",
                 ("sequencing-words", "managed-signal:milestones"), id="milestone-by-milestone"),
    pytest.param("Migrate the billing service milestone by milestone over the next quarter", {},
                 "managed-goal", "deterministic-analyzer", "medium",
                 ("sequencing-words", "managed-signal:milestones", "managed-signal:long-running",
                  "managed-goal-signals"), id="milestones-over-a-quarter"),
    pytest.param("1、設計\n2、實作\n3、測試", {}, "phased", "deterministic-analyzer",
                 "high", ("enumerated-steps",), id="ideographic-numbering"),
    pytest.param("\uff11、設計\n\uff12、實作", {}, "phased", "deterministic-analyzer",
                 "high", ("enumerated-steps",), id="full-width-ideographic-numbering"),
    pytest.param("release 1、2、3", {}, "single", "deterministic-analyzer", "high",
                 ("single-default",), id="inline-ideographic-numbers-are-none"),
    # Words are read in English only: a Chinese sentence has no signal (documented).
    pytest.param("先設計快取層\uff0c然後實作\uff0c最後測試並撰寫文件", {}, "single",
                 "builtin-fallback", "low", ("no-structural-signal",),
                 id="chinese-words-read-as-none"),
    pytest.param("anything", {"requested_work_mode": "phased"}, "phased",
                 "caller-work-mode-hint", "high", ("caller-work-mode-hint",), id="hint"),
    pytest.param("1. a\n2. b", {"goal_binding_id": "goal-1", "requested_work_mode": "single"},
                 "managed-goal", "native-goal-binding", "high", ("native-goal-binding",),
                 id="goal-binding-wins"),
]  # fmt: skip


@pytest.mark.parametrize(("objective", "hints", "envelope", "source", "confidence", "reasons"),
                         TABLE)  # fmt: skip
def test_objectives_classify_as_the_table_says(
    objective, hints, envelope, source, confidence, reasons
):
    found = classify(objective, **hints)
    assert (found.envelope, found.source, found.confidence) == (envelope, source, confidence)
    assert found.reason_codes == reasons
    assert found.classifier_revision == REVISION
    assert classify(objective, **hints) == found  # the same input, the same answer


def test_a_profile_envelope_applies_only_without_binding_or_hint():
    auto = classify("Fix the typo")
    assert with_profile_envelope(auto, "phased").source == "profile-route"
    assert with_profile_envelope(auto, "phased").reason_codes[-1] == "profile-envelope"
    assert with_profile_envelope(auto, None) is auto
    hinted = classify("x", requested_work_mode="single")
    assert with_profile_envelope(hinted, "phased") is hinted


@pytest.mark.parametrize(("objective", "kw"), [(p.values[0], p.values[1]) for p in TABLE])
def test_a_cached_classification_is_the_one_computed(objective, kw):
    computed = _classify(
        objective,
        kw.get("requested_work_mode"),
        kw.get("goal_binding_id"),
        tuple(kw.get("domains", ())),
    )
    assert classify(objective, **kw) == computed
    assert classify(objective, **kw) == computed  # served from the cache this time


def test_only_short_objectives_are_cached():
    long = "1. design it\n2. build it\n" + "x" * CACHED_CHARS
    assert classify(long).envelope == "phased"
    assert classify(long) is not classify(long)  # computed each time, never kept
    short = "1. design it\n2. build it\n3. ship it"
    assert classify(short) is classify(short)
    assert _cached.cache_info().currsize <= 1024
