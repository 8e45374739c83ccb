"""Every write about a run's gate ends with the next call, and no note asks for what is done.

Tester findings (Cursor over Streamable HTTP): the ``record_work_event`` that reported a
phase's last check said only the next version, not that evaluate_gate could be called now,
nor with which refs and digest (only get_next_work said it, so a chat model had to hash
SHA-256 itself or send a wrong digest); get_next_work said "evaluate_gate can be called now"
and then "Report each check" all the same, as did a replayed plan of a completed run; and
a passing gate of a middle phase did not name the next phase.
"""

from __future__ import annotations

import json

from profile_files import write_workspace
from router_driver import ctx, event_args, plan_args
from test_router_guidance import PHASED, texts

from agora.toolsets.router.progress import evidence_digest

REPORT = "Report each check"


async def test_the_event_that_completes_the_checks_gives_the_gate_call(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    note = texts(await router.event(run, "plan", {"note": "started"}, 1))[-1]
    assert "Phase plan: Not yet reported: plan-ready. Then call evaluate_gate." in note
    event = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 2)
    refs = event["event_ids"]
    note = texts(event)[-1].splitlines()
    assert note[0] == (
        "Every check of phase plan has a latest event that says passed: evaluate_gate can be"
        f" called now with evidence_refs {json.dumps(refs)} and expected_evidence_digest"
        f" {evidence_digest(refs)}."
    )
    assert note[1].startswith("Next write to this run: send expected_state_version 3")
    gate = await router.gate(run, "plan", refs, 3)  # exactly what the note said
    assert gate["passed"] is True


async def test_next_work_stops_asking_for_reports_once_every_check_passed(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    assert REPORT in texts(await router.next(run))[-1]  # nothing reported yet
    await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    note = texts(await router.next(run))[-1]
    assert "evaluate_gate can be called now" in note
    assert REPORT not in note
    assert "Next: evaluate_gate for phase plan (exit gate plan-exit)" in note


async def test_a_passed_gate_names_the_next_phase(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    event = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    note = texts(await router.gate(run, "plan", event["event_ids"], 2))[-1].splitlines()
    assert note[0].startswith(
        "The gate passed: phase plan is completed. Next: phase implement (exit gate"
        ' implement-exit): checks implementation-done; e.g. {"check_id": "implementation-done"'
    )
    assert note[-1].startswith("Next write to this run: send expected_state_version 3")


async def test_a_completed_runs_replayed_plan_asks_for_no_report(router):
    args = plan_args("Fix the typo", idem="plan-done")
    run = (await router.call("plan_work", **args))["workflow_run_id"]
    event = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    await router.gate(run, "work", event["event_ids"], 2)
    note = texts(await router.call("plan_work", **args))[-1]
    assert REPORT not in note
    assert "work-done" not in note
    assert note.splitlines()[-1].startswith("This run is completed")


async def test_a_completed_run_says_to_plan_further_work_under_a_new_session_id(router):
    # Tester 9 finding: a completed run's answers said "plan_work with a new idempotency_key"
    # only, so a model kept the finished task's session_id (rule: one per task) for the next.
    args = plan_args("Fix the typo", idem="plan-next")
    run = (await router.call("plan_work", **args))["workflow_run_id"]
    event = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    gate = await router.gate(run, "work", event["event_ids"], 2)
    status = {"context": ctx(), "workflow_run_id": run, "goal_binding_id": None}
    answers = [gate, await router.next(run), await router.call("get_router_status", **status),
               await router.call("plan_work", **args)]  # fmt: skip
    new = "a new context.session_id (one per task, named after the repository and the next task)"
    for answer in answers:
        last = texts(answer)[-1].splitlines()[-1]
        assert last.startswith("This run is completed"), last
        assert f"plan_work under {new} and a new idempotency_key." in last
    refused = await router.refused("record_work_event", **event_args(run, "work", {}, 3))
    assert refused["code"] == "phase-completed"
    assert "new context.session_id, one per task, and a new idempotency_key" in refused["message"]


async def test_a_replayed_plan_gives_the_gate_call_once_every_check_passed(router):
    # Tester 6 finding: a replayed plan_work (how an agent finds a lost run id) still said
    # "Report each check", with the hashing recipe, once every check had passed, while
    # get_next_work said "Next: evaluate_gate".
    args = plan_args("Fix the typo", idem="plan-ready")
    run = (await router.call("plan_work", **args))["workflow_run_id"]
    refs = (await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"},
                               1))["event_ids"]  # fmt: skip
    note = texts(await router.call("plan_work", **args))[-1].splitlines()
    assert REPORT not in "\n".join(note)
    assert note[-2] == (
        "Every check of phase work has a latest event that says passed: evaluate_gate can be"
        f" called now with evidence_refs {json.dumps(refs)} and expected_evidence_digest"
        f" {evidence_digest(refs)}."
    )
    phased = plan_args(PHASED, idem="plan-phased")
    run = (await router.call("plan_work", **phased))["workflow_run_id"]
    first = texts(await router.call("plan_work", **phased))[-1]
    assert REPORT in first  # nothing reported yet
    assert "hex SHA-256" not in first  # and no recipe: the answers give the digest
    assert "never compute the digest" in first
    await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    note = texts(await router.call("plan_work", **phased))[-1]
    assert REPORT not in note
    assert "Every check of phase plan has a latest event that says passed" in note
    assert "For each later phase, report its checks with record_work_event" in note


def test_the_instructions_say_where_the_gate_arguments_come_from():
    # The instructions said only "evaluate_gate", and the notes told a chat model to hash
    # SHA-256 over RFC 8785 JSON itself.
    from agora.toolsets.router import INSTRUCTIONS

    told = " ".join(INSTRUCTIONS.split())
    assert (
        "then evaluate_gate with the evidence_refs and expected_evidence_digest that the answer"
        " of the event completing the phase's checks gives (no need to hash anything yourself)"
    ) in told


async def test_a_replayed_event_after_its_gate_passed_asks_for_nothing(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    args = event_args(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    event = await router.call("record_work_event", **args)
    await router.gate(run, "plan", event["event_ids"], 2)
    note = texts(await router.call("record_work_event", **args))[-1]  # replayed
    assert "can be called now" not in note
    assert note.startswith("Next write to this run: send expected_state_version 3")
    kept = event_args(run, "implement", {"check": "implementation-done"}, 3)
    await router.call("record_work_event", **kept)
    done = {"check_id": "implementation-done", "outcome": "passed"}
    refs = (await router.event(run, "implement", done, 4))["event_ids"]
    await router.gate(run, "implement", refs, 5)
    replayed = texts(await router.call("record_work_event", **kept))[-1]
    assert replayed.startswith("This observation reports no check")  # said again on replay
    # Tester 6 finding: the replay invited a check report on the completed phase, which
    # record_work_event then refuses (phase-completed).
    assert "ID one of" not in replayed
    assert (
        "kept as a note of phase implement. Phase implement is completed (its gate passed), so"
        " it takes no more reports: get_next_work gives the phase to work on now."
    ) in replayed


async def test_a_failed_check_of_a_phase_of_several_is_named_and_no_gate_call_follows(
    router, tmp_path, options
):
    # Tester 6 finding: with checks tests-pass and lint-clean, a failed tests-pass was
    # answered "Not yet reported: lint-clean. Then call evaluate_gate.", and once lint-clean
    # passed "A check's latest event says failed", naming none, and still "Then call
    # evaluate_gate", which would fail.
    options["router"]["workspace_roots"] = [str(tmp_path)]
    gate = {"gate_id": "build-exit", "check_ids": ["tests-pass", "lint-clean"]}
    phase = {"phase_id": "build", "primary_skill_id": "skill:build", "support_skill_ids": [],
             "exit_gate": gate}  # fmt: skip
    rule = {"rule_id": "r1", "match": {}, "phases": [phase]}
    write_workspace(tmp_path / "repo", {"format": "agora-router-profile/1",
                                        "profile_id": "team", "rules": [rule]})  # fmt: skip
    routing = {"workspace_root": str(tmp_path / "repo"), "domains": [], "tags": [],
               "current_phase_id": None}  # fmt: skip
    run = (await router.plan("Add a login page", routing_context=routing))["workflow_run_id"]
    failed = {"check_id": "tests-pass", "outcome": "failed"}
    note = texts(await router.event(run, "build", failed, 1))[-1].splitlines()[0]
    assert note == (
        "Phase build: The latest event of tests-pass says failed: report it again once it"
        " passes. Not yet reported: lint-clean."
    )
    lint = {"check_id": "lint-clean", "outcome": "passed"}
    note = texts(await router.event(run, "build", lint, 2))[-1].splitlines()[0]
    assert note == (
        "Phase build: The latest event of tests-pass says failed: report it again once it passes."
    )
    passed = {"check_id": "tests-pass", "outcome": "passed"}
    note = texts(await router.event(run, "build", passed, 3))[-1].splitlines()[0]
    assert note.startswith("Every check of phase build has a latest event that says passed")
