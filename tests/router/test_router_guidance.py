"""What a read of the tool surface tells an agent about exit-gate checks, before any write.

The outputSchemas of plan_work and get_next_work have no field for check ids (closed
objects), so the router names them in a second text block after the JSON copy.
"""

from __future__ import annotations

import re
from typing import Any

from router_driver import FINGERPRINT, Router, ctx, event_args, gate_args, plan_args

from agora.identity import Principal
from agora.mcp.catalog import Catalog
from agora.mcp.results import tool_reply
from agora.mcp.session import Session

PHASED = "1. design the schema\n2. implement it\n3. test it"


def texts(value: dict[str, Any]) -> list[str]:
    """The text blocks a client gets for ``value``, as the server sends them."""
    reply = tool_reply(Session(Catalog(), {"name": "t", "version": "0"}), 1, value, False)
    return [block["text"] for block in reply["result"]["content"]]


async def test_get_next_work_names_the_phases_exit_gate_checks(router):
    plan = await router.plan(PHASED)
    assert plan["planned_skill_tree"] == []  # no skills: the tree names no gate at all
    nxt = await router.next(plan["workflow_run_id"])
    json_copy, guidance = texts(nxt)
    assert "check_id" not in json_copy
    assert "plan-ready" in guidance
    assert "plan-exit" in guidance
    assert '{"check_id": "plan-ready", "outcome": "passed"}' in guidance
    assert "expected_evidence_digest" in guidance


async def test_plan_work_names_every_phases_checks(router):
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"}
    plan = await router.plan(PHASED, **lock)
    assert plan["planned_skill_tree"][0]["exit_gate"] == "plan-exit"  # the gate, not a check
    _json_copy, guidance = texts(plan)
    for check in ("plan-ready", "implementation-done", "verification-passed"):
        assert check in guidance


async def test_a_locked_plan_names_the_skills_waiting_for_consent(router):
    # Three skills on a one-phase plan under "use": two are planned in no phase, and only
    # support_consent_required (true) hinted at why; the note names them and the way in.
    lock = {"explicit_skill_ids": ["skill:a", "skill:b", "skill:c"], "explicit_semantics": "use"}
    plan = await router.plan("Fix the typo", **lock)
    assert [t["primary_skill_id"] for t in plan["planned_skill_tree"]] == ["skill:a"]
    _json_copy, guidance = texts(plan)
    assert guidance.startswith("Planned but in no phase yet: skill:b, skill:c. Under this")
    assert "propose_support_consent" in guidance
    placed = await router.plan(PHASED, **{**lock, "explicit_semantics": "all"})
    assert "in no phase" not in texts(placed)[-1]  # "all" places them: nothing waits


async def test_a_plan_with_no_structural_signal_suggests_requested_work_mode(router):
    # A Chinese objective has no signal the classifier reads: the low-confidence single plan
    # said nothing of requested_work_mode, the way to plan it phased.
    plan = await router.plan("先設計快取層\uff0c然後實作\uff0c最後測試並撰寫文件")
    assert plan["classification"]["reason_codes"] == ["no-structural-signal"]
    note = texts(plan)[-1]
    assert note.startswith("Classified single with low confidence: no structural signal found.")
    assert 'plan again with requested_work_mode "phased"' in note
    assert "1、" in note
    sure = await router.plan("Fix the typo in the README")
    assert "requested_work_mode" not in texts(sure)[-1]


async def test_a_replayed_plan_says_it_was_replayed(router):
    args = plan_args(PHASED, idem="plan-twice")
    first = await router.call("plan_work", **args)
    again = await router.call("plan_work", **args)
    assert again == first  # the outputSchema has no `replayed`: the structured copy is equal
    assert "replayed" not in texts(first)[-1]
    assert "replayed" in texts(again)[-1]


async def test_a_goal_bound_plan_says_it_cannot_be_progressed_here(router):
    plan = await router.plan(PHASED, goal_binding_id="goal-7")
    assert plan["created_work_items"] == 0
    note = texts(plan)[-1]
    assert "Next write to this run" not in note
    assert "bound to the native Goal goal-7" in note
    assert "cannot be progressed here" in note
    body = await router.refused("get_next_work", context=plan_args("x")["context"],
                                workflow_run_id=plan["workflow_run_id"])  # fmt: skip
    assert body["reason"] == "native-goal-authority"  # what the note says


async def test_a_goal_bound_plan_says_what_goal_revision_to_send(router):
    # The note gave the versions for the consent tools but not that goal_revision must be
    # non-null; the refusal said only "required exactly for a Goal-bound plan"; and the
    # note after a proposal advised evaluate_gate, which a Goal-bound run cannot take.
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"}
    plan = await router.plan(PHASED, goal_binding_id="goal-7", **lock)
    run = plan["workflow_run_id"]
    assert "goal_revision non-null" in texts(plan)[-1]
    propose = {
        "context": ctx(), "workflow_run_id": run, "phase_id": "scope",
        "primary_skill_id": "skill:lead", "support_skill_ids": ["skill:help"],
        "scope_anchor_id": "task-1", "goal_revision": None, "plan_revision": 1,
        "context_fingerprint": FINGERPRINT, "expected_state_version": 1,
        "idempotency_key": "propose-goal", "correlation_id": "c",
    }  # fmt: skip
    body = await router.refused("propose_support_consent", **propose)
    assert body["code"] == "goal-revision-mismatch"
    assert body["message"].startswith(
        "goal_revision is null, but this plan is bound to the native Goal goal-7: send the"
        " Goal's current revision"
    )
    proposed = await router.call("propose_support_consent", **{**propose, "goal_revision": 3})
    note = texts(proposed)[-1]
    assert "evaluate_gate also" not in note
    assert "send expected_state_version 2, plan_revision 1 and goal_revision non-null" in note


#: What the note about a completed run says instead of the values of a next write.
COMPLETED = re.compile(r"^This run is completed .*: no write to it can succeed")
#: How the notes name the values an agent sends with its next write (no field has room).
SEND_VERSION = re.compile(r"expected_state_version (\d+)")
SEND_REVISION = re.compile(r"expected_plan_revision (\d+)")


def told(value: dict[str, Any]) -> tuple[int, int]:
    """The state version and plan revision the reply's note tells the agent to send next."""
    note = texts(value)[-1]
    version, revision = SEND_VERSION.search(note), SEND_REVISION.search(note)
    assert version is not None, note
    assert revision is not None, note
    return int(version[1]), int(revision[1])


async def test_an_agent_that_reads_only_replies_works_every_phase_without_a_conflict(router):
    """Plan -> next -> event -> gate, phase after phase, with every version taken from the
    replies: `Router.call` fails on any refusal, a conflict included."""
    plan = await router.plan(PHASED)
    run = plan["workflow_run_id"]
    version, revision = told(plan)
    assert (version, revision) == (1, 1)
    while True:
        nxt = await router.next(run)
        if nxt["work_item"] is None:
            break
        version, revision = told(nxt)
        phase = nxt["work_item"]["phase_id"]
        check = re.search(r"checks ([\w-]+)", texts(nxt)[-1])
        assert check is not None
        event = await router.event(run, phase, {"check_id": check[1], "outcome": "passed"},
                                   version)  # fmt: skip
        assert told(event) == (event["resulting_state_version"], revision)
        version, revision = told(event)
        gate = await router.gate(run, phase, event["event_ids"], version, plan_revision=revision)
        assert gate["passed"] is True
        if gate["resulting_state_version"] == 7:  # the plan, then an event and a gate a phase
            assert COMPLETED.match(texts(gate)[-1])  # the last: nothing more to send
        else:
            version, revision = told(gate)
    assert nxt["status"] == "completed"


async def test_a_completed_run_says_no_write_can_succeed(router):
    """Reviewer finding: a completed run's answers still ended "Next write to this run: send
    expected_state_version 9", and that write was refused phase-completed."""
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"}
    args = plan_args(PHASED, idem="plan-done", **lock)
    run = (await router.call("plan_work", **args))["workflow_run_id"]
    version = 1
    for phase, check in (("plan", "plan-ready"), ("implement", "implementation-done"),
                         ("verify", "verification-passed")):  # fmt: skip
        event = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, version)
        gate = await router.gate(run, phase, event["event_ids"], version + 1)
        version += 2
    replayed = await router.call("plan_work", **args)
    for answer in (gate, await router.next(run), replayed):
        note = texts(answer)[-1]
        assert COMPLETED.match(note.splitlines()[-1]), note
        assert SEND_VERSION.search(note) is None
    propose = {
        "context": ctx(), "workflow_run_id": run, "phase_id": "verify",
        "primary_skill_id": "skill:lead", "support_skill_ids": ["skill:help"],
        "scope_anchor_id": "task-1", "goal_revision": None, "plan_revision": 1,
        "context_fingerprint": FINGERPRINT, "expected_state_version": version,
        "idempotency_key": "propose-late", "correlation_id": "c",
    }  # fmt: skip
    refused = [
        await router.refused("record_work_event", **event_args(run, "verify", {"n": 1}, version)),
        await router.refused("evaluate_gate", **gate_args(run, "verify", [], version)),
        await router.refused("propose_support_consent", **propose),
    ]
    assert [r["code"] for r in refused] == ["phase-completed"] * 3


async def test_a_replayed_write_tells_the_current_version_not_the_stored_one(router):
    plan = await router.call("plan_work", **plan_args(PHASED, idem="plan-v"))
    run = plan["workflow_run_id"]
    args = event_args(run, "plan", {"note": "started"}, 1)
    first = await router.call("record_work_event", **args)
    await router.event(run, "plan", {"note": "more"}, 2)
    again = await router.call("record_work_event", **args)
    assert again["resulting_state_version"] == 2  # the stored result, as it was
    assert told(again) == (3, 1)
    assert told(first) == (2, 1)
    replayed_plan = await router.call("plan_work", **plan_args(PHASED, idem="plan-v"))
    assert replayed_plan == plan
    assert told(replayed_plan) == (3, 1)


async def test_the_refusals_say_which_values_to_send(router):
    plan = await router.plan(PHASED)
    run = plan["workflow_run_id"]
    stale = await router.refused("record_work_event", **event_args(run, "plan", {}, 0))
    assert stale["current_state_version"] == 1
    assert "current_state_version" in stale["message"]
    assert "re-read" not in stale["message"]
    event = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    args = gate_args(run, "plan", event["event_ids"], 2, plan_revision=0)
    revision = await router.refused("evaluate_gate", **args)
    assert revision["current_plan_revision"] == 1
    assert "current_plan_revision" in revision["message"]
    assert "re-read the plan" not in revision["message"]


#: The note of an observation that names no check: kept, but counted by no gate.
NO_CHECK = "This observation reports no check (it has no check_id)"


async def test_an_observation_that_reports_no_check_says_so(router):
    """Newcomer finding: {"check": "plan-ready", "outcome": "passed"} and the like were
    recorded without a word, and the gate then failed on plan-ready with nothing saying the
    check was never reported."""
    run = (await router.plan(PHASED))["workflow_run_id"]
    version = 1
    misshapen = [
        {"check": "plan-ready", "outcome": "passed"},
        {"checkId": "plan-ready", "outcome": "passed"},
        {"plan-ready": "passed"},
        {"outcome": "passed"},
        {"check_id": None, "outcome": "passed"},
    ]
    refs = []
    for observation in misshapen:
        event = await router.event(run, "plan", observation, version)
        note = texts(event)[-1]
        assert NO_CHECK in note, observation
        assert "ID one of: plan-ready." in note
        meant = next(iter(observation))
        if meant in ("check", "checkId"):  # said to be stored as a note, with no guess
            assert f"You sent '{meant}': did you mean 'check_id'?" in note
        if meant == "plan-ready":
            assert """You sent the check 'plan-ready' as a key: did you mean {"check_id":""" in note
        assert told(event) == (version + 1, 1)  # the values to send still end the note
        refs += event["event_ids"]
        version += 1
    reported = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "failed"},
                                  version)  # fmt: skip
    assert NO_CHECK not in texts(reported)[-1]


async def test_a_failed_gate_says_which_checks_were_reported_failed_and_which_not_at_all(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    noted = await router.event(run, "plan", {"check": "plan-ready"}, 1)
    gate = await router.gate(run, "plan", noted["event_ids"], 2)
    assert gate["failures"] == ["plan-ready"]
    note = texts(gate)[-1]
    assert "The gate failed. plan-ready: no referenced event reports it." in note
    failed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "failed"}, 3)
    gate = await router.gate(run, "plan", failed["event_ids"] + noted["event_ids"], 4)
    note = texts(gate)[-1]
    assert "plan-ready: the latest referenced event reports it failed." in note
    assert told(gate) == (5, 1)
    passed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 5)
    gate = await router.gate(run, "plan", failed["event_ids"] + passed["event_ids"], 6)
    assert gate["passed"] is True
    assert "The gate failed" not in texts(gate)[-1]


async def test_a_gate_warns_of_a_newer_failure_its_refs_leave_out(router):
    # The documented rule stands (only referenced events count), but a gate that passed on
    # an older "passed" while a newer, unreferenced event reported the check failed said
    # nothing of it.
    run = (await router.plan(PHASED))["workflow_run_id"]
    passed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    failed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "failed"}, 2)
    gate = await router.gate(run, "plan", passed["event_ids"], 3)
    assert gate["passed"] is True
    note = texts(gate)[-1]
    assert note.startswith(
        "Warning: a newer event of this phase that evidence_refs does not reference reports a"
        f" check failed: plan-ready (event {failed['event_ids'][0]})."
    )
    assert "advisory only" in note
    assert told(gate) == (4, 1)  # the next write's values still close the note


async def test_a_session_wide_status_names_the_sessions_runs_newest_first(runtime):
    """Newcomer finding: an agent that lost a run's id could not find it again: the
    session-wide status (workflow_run_id null) gave only a count of work items."""
    from agora.toolsets.router.sql import RECENT_RUNS  # (here: a0f93e2 fails this test alone)

    alice, bob = Router(runtime, principal=Principal("alice")), Router(runtime)
    status = {"context": ctx("repo"), "workflow_run_id": None, "goal_binding_id": None}
    empty = await alice.call("get_router_status", **status)
    assert texts(empty)[-1] == "Session repo has no run (of this filter): plan_work creates one."
    runs = []
    for n in range(RECENT_RUNS + 2):
        runtime.clock.wall_source.advance(1)  # one a second: "newest" is well defined
        plan = await alice.call("plan_work", **plan_args(f"task {n}", session="repo"))
        runs.append(plan["workflow_run_id"])
    await bob.call("plan_work", **plan_args("not alice's", session="repo"))
    note = texts(await alice.call("get_router_status", **status))[-1]
    assert note.startswith("Runs of session repo, newest first (12 in all, the 10 newest here): ")
    named = re.findall(r"(\S+) \(status planned, state version 1, \d+ work items, created ", note)
    assert named == runs[:1:-1]  # the ten newest of alice's, newest first; none of bob's
    assert "\x1f" not in note  # the session as alice sent it, not as the router scopes it
    bobs = texts(await bob.call("get_router_status", **status))[-1]
    assert "(1 in all)" in bobs
    assert not set(runs) & set(re.findall(r"(\S+) \(status", bobs))


async def test_a_plans_key_reused_for_another_objective_names_the_run_it_made(router):
    """Newcomer finding: resending plan_work with its key but another objective (a new
    conversation that kept the key) answered idempotency-conflict naming only the key, so the
    run it had made could not be found from it."""
    made = await router.call("plan_work", **plan_args(PHASED, idem="plan-kept"))
    body = await router.refused("plan_work", **plan_args("Fix the typo", idem="plan-kept"))
    assert body["code"] == "idempotency-conflict"
    assert body["workflow_run_id"] == made["workflow_run_id"]
    assert made["workflow_run_id"] in body["message"]
    nxt = await router.next(body["workflow_run_id"])  # the run it names is the agent's own
    assert nxt["work_item"]["phase_id"] == "plan"
    # It said "send it as workflow_run_id", an argument plan_work does not take.
    assert "send it as workflow_run_id" not in body["message"]
    assert "get_next_work with that workflow_run_id continues it" in body["message"]


async def test_a_key_reused_by_another_tool_names_the_tool_that_used_it(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    event = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1,
                               idem="k-shared")  # fmt: skip
    body = await router.refused("evaluate_gate", **gate_args(run, "plan", event["event_ids"], 2,
                                                             idem="k-shared"))  # fmt: skip
    assert body["code"] == "idempotency-conflict"
    assert body["message"] == (
        f"this idempotency key was used by record_work_event for a different request, on run"
        f" {run}: each write to a run needs its own key, so send this evaluate_gate with a new"
        " key"
    )


async def test_refusals_name_the_phase_of_a_misplaced_ref_and_a_completed_run(router):
    """Newcomer findings: unknown-evidence-ref said "not events of this phase" for an event
    of another phase, and phase-completed did not say that the whole run was done."""
    run = (await router.plan("1. design it\n2. build it"))["workflow_run_id"]
    plan_event = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    await router.gate(run, "plan", plan_event["event_ids"], 2)
    misplaced = await router.refused(
        "evaluate_gate", **gate_args(run, "implement", plan_event["event_ids"], 3)
    )
    assert misplaced["code"] == "unknown-evidence-ref"
    assert misplaced["message"] == (
        "not events of phase 'implement' (some are events of phase 'plan'): send as"
        " evidence_refs only the event_ids that record_work_event returned for phase 'implement'"
    )
    again = await router.refused("evaluate_gate", **gate_args(run, "plan", [], 3))
    assert again["message"].endswith(": call get_next_work for the phase to work on now")
    version = 3
    for phase, check in (("implement", "implementation-done"), ("verify", "verification-passed")):
        event = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, version)
        await router.gate(run, phase, event["event_ids"], version + 1)
        version += 2
    done = await router.refused("evaluate_gate", **gate_args(run, "plan", [], version))
    assert "; so is the run (every phase's gate passed)" in done["message"]
