"""Alice's scenario: she makes an entity of every kind and calls every scoped tool on it.

Each call she makes is kept as a template (tool, arguments) for a stranger to replay. Her
calls must succeed, except those marked ``refused`` (a conductor-only tool on a topic it
does not apply to): they still name her entities, which is all a template needs. Alice
holds the conductor scope, so the conductor-only tools are hers to call. A stranger plays
the same scenario on entities of their own (without the conductor-only steps), so that
each of Alice's ids can be put, one at a time, into a call that is otherwise the
stranger's own.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any

from access_world import AUTH, answer

from agora.toolsets.router.progress import evidence_digest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from mcp import Client

    Probe = Callable[[str, dict[str, Any]], Awaitable[None]]

LANE = '{"priority_lane": "P3", "priority_reason": "access"}'
#: Each scenario's router context names a session of its own ("alice-<n>").
_SCENARIOS = itertools.count(1)
FINGERPRINT = "sha256:" + "ab" * 32
SECTIONS = "OBSERVE a\nORIENT b\nDECIDE c\nACT d"
V1_SEATS = ("CONDUCTOR", "PRO", "CON", "JUDGE", "HUMAN")


def payload(summary: str, **extra: Any) -> str:
    """A structured debate/v1 payload."""
    return json.dumps({"summary": summary, "assumptions": [], "evidence_refs": [], **extra})


class Recorder:
    """One principal's SDK client; each call is kept as a template."""

    def __init__(
        self, client: Client, *, conductor: bool = True, before: Probe | None = None
    ) -> None:
        self.client = client
        #: Called with each call's tool and arguments just before the call is made.
        self.before = before
        #: Whether the principal holds the conductor scope (else the conductor-only steps
        #: of the scenario are left out).
        self.conductor = conductor
        self.templates: list[tuple[str, dict[str, Any]]] = []
        self.sessions: set[str] = set()
        self.context = {
            "session_id": f"alice-{next(_SCENARIOS)}",
            "actor": "alice",
            "runtime_policy_snapshot_id": "p",
        }

    async def call(self, tool: str, *, refused: bool = False, **args: Any) -> dict[str, Any]:
        """Call ``tool``: it must succeed (or be refused with ``refused``); its
        structuredContent."""
        if self.before is not None:
            await self.before(tool, args)
        reply = await answer(self.client, tool, args)
        assert bool(reply.get("isError")) == refused, (tool, reply)
        self.templates.append((tool, args))
        return reply.get("structuredContent") or {}

    async def session(self) -> str:
        """A fresh debate session of this principal."""
        session = str((await self.call("debate_session_open"))["session_id"])
        self.sessions.add(session)
        return session


async def alice(rec: Recorder, workspace: Path) -> None:
    """Every entity kind, and every scoped tool called on one of them."""
    await _debate(rec)
    await _v1(rec)
    await _chamber(rec)
    await _router(rec, workspace)


async def _debate(rec: Recorder) -> None:
    session = await rec.session()
    roster = json.dumps([{"role": "ROLE_A", "session_id": session}])
    init = await rec.call(
        "debate_init", title="t", created_by_role="ROLE_A", roles_json=roster, metadata_json=LANE
    )
    topic = init["topic_id"]
    again = await rec.call(
        "debate_init", topic_id=topic, title="t", created_by_role="ROLE_A", roles_json=roster,
        metadata_json=LANE,
    )  # fmt: skip
    assert again["topic_id"] == topic  # an identical repeat answers the topic
    await rec.call("debate_state", topic_id=topic, role="ROLE_A", new_state="ACTIVE")
    post = await rec.call(
        "debate_post", topic_id=topic, role="ROLE_A", priority="M", kind="STATUS", body="hi"
    )
    await rec.call("debate_read", topic_id=topic, role="ROLE_A")
    await rec.call("debate_list_bindings", topic_id=topic)
    await rec.call("debate_search", topic_id=topic, query="hi")
    await rec.call("debate_signal_check", session_id=session, role="ROLE_A", topic_id=topic)
    await rec.call(
        "debate_advance_watermark", topic_id=topic, role="ROLE_A",
        processed_up_to_msg_id=post["msg_id"],
    )  # fmt: skip
    await rec.call("debate_compact", topic_id=topic, role="ROLE_A", body=SECTIONS)
    await rec.call("debate_reconcile_project", refused=True, topic_id=topic, project="other")
    await rec.call("debate_close_topic", topic_id=topic, role="ROLE_A", new_state="RESOLVED")
    await _crew(rec)


async def _crew(rec: Recorder) -> None:
    """Two roles of Alice's: signals, a worker claim on an addressed trigger, rotation."""
    lead, worker = await rec.session(), await rec.session()
    roster = json.dumps(
        [{"role": "CONDUCTOR", "session_id": lead}, {"role": "EXECUTOR_1", "session_id": worker}]
    )
    init = await rec.call(
        "debate_init", title="crew", created_by_role="CONDUCTOR", roles_json=roster,
        metadata_json=LANE,
    )  # fmt: skip
    topic = init["topic_id"]
    await rec.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    if rec.conductor:
        await rec.call("debate_add_role", topic_id=topic, role="REVIEWER", session_id=lead)
    sent = await rec.call(
        "debate_post_with_recipients", topic_id=topic, role="CONDUCTOR", priority="M",
        kind="Q", body="please look", addressed_to_csv="EXECUTOR_1",
    )  # fmt: skip
    trigger = {"schema_version": "debate.trigger/v1", "topic_id": topic, "msg_id": sent["msg_id"]}
    await rec.call("debate_trigger_dry_run", tool_response_json=json.dumps(trigger))
    await rec.call(
        "debate_worker_claim", topic_id=topic, role="EXECUTOR_1", parent_session_id=worker,
        trigger_msg_id=sent["msg_id"],
    )  # fmt: skip
    inbox = {"session_id": worker, "role": "EXECUTOR_1", "topic_id": topic}
    await rec.call("debate_signal_wait", **inbox, timeout_ms=1000)
    await rec.call("debate_signal_advance", **inbox, last_processed_msg_id=sent["msg_id"])
    fresh = await rec.session()
    await rec.call(
        "debate_rotate_session", topic_id=topic, role="EXECUTOR_1", old_session_id=worker,
        new_session_id=fresh, cursor_mode="copy",
    )  # fmt: skip
    cutoff = "2020-01-01T00:00Z"
    await rec.call("debate_message_claim_reclaim", topic_id=topic, older_than_ts=cutoff)
    await rec.call("debate_worker_reclaim", topic_id=topic, older_than_ts=cutoff)
    await rec.call("debate_work_queue", topics_csv=topic)
    await rec.call("debate_escalate", topic_id=topic, role="CONDUCTOR", reason="needs a human")
    if rec.conductor:
        await rec.call("debate_protocol_maintain", topic_ids_csv=topic)


async def _v1(rec: Recorder) -> None:
    """A debate/v1 topic with every seat Alice's, prepared for judging."""
    sessions = {role: await rec.session() for role in V1_SEATS}
    roster = [{"role": r, "session_id": None if r == "HUMAN" else s} for r, s in sessions.items()]
    init = await rec.call(
        "debate_init", title="v1", created_by_role="CONDUCTOR", roles_json=json.dumps(roster),
        metadata_json=LANE, protocol_version="debate/v1", blind_roles_csv="PRO,CON",
    )  # fmt: skip
    topic = init["topic_id"]
    await rec.call("debate_bind_role", topic_id=topic, role="HUMAN", session_id=sessions["HUMAN"])
    await rec.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    await rec.call("debate_protocol_state", topic_id=topic)
    await rec.call("debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="p1", reason="r")
    claims = await adjudicate(rec, topic)
    if not rec.conductor:
        return
    prepared = await rec.call(
        "debate_judge_prepare", topic_id=topic, left_msg_id=claims[0], right_msg_id=claims[1]
    )
    verdict = json.dumps({"winner_msg_id": claims[0], "decision": "adopt"})
    # Her JUDGE is not independent of her own blind seats (ineligible_judge): refused, yet
    # the call names her projection, which is all a stranger's replay needs.
    await rec.call(
        "debate_judge_verdict", projection_id=prepared["projections"][0]["projection_id"],
        judge_role="JUDGE", verdict_json=verdict, refused=True,
    )  # fmt: skip


async def adjudicate(rec: Recorder, topic: str, pro: Recorder | None = None) -> list[str]:
    """Both blind CLAIMs (PRO's by ``pro`` when given) and a verified VERIFY: ADJUDICATE.
    Returns the two claims' msg_ids."""
    ids = []
    for who, role in ((pro or rec, "PRO"), (rec, "CON")):
        claim = await who.call(
            "debate_post", topic_id=topic, role=role, priority="M", kind="CLAIM",
            body=f"{role} claims", payload_json=payload(f"{role} CLAIM"),
        )  # fmt: skip
        ids.append(str(claim["msg_id"]))
    await rec.call(
        "debate_post", topic_id=topic, role="JUDGE", priority="M", kind="VERIFY", body="ok",
        reply_to=ids[0], payload_json=payload("checked", result="verified"),
    )  # fmt: skip
    return ids


async def _chamber(rec: Recorder) -> None:
    entry = {"product": "alice-agent", "host": "h", "provider_claim": "p", "model_claim": "m"}
    attempt = await rec.call(
        "enter_open_challenge", **entry, suite="chambre-chrono-v0", seed="alice"
    )
    handle = attempt["attempt_handle"]
    await rec.call("observe_chamber", challenge_handle=handle, object=attempt["objects"][0])
    await rec.call("chamber_action", challenge_handle=handle, op="look", expected_action_index=0)
    await rec.call("call_for_help", challenge_handle=handle, ally="grok-4.6")
    await rec.call("seal_attempt", challenge_handle=handle)


def _mutation(rec: Recorder, key: str) -> dict[str, Any]:
    return {"context": rec.context, "idempotency_key": key, "correlation_id": key}


async def _router(rec: Recorder, workspace: Path) -> None:
    await _run(rec, "1. a\n2. b", [], None, phase_check=("plan-ready", "g"))
    await memory(rec, workspace)
    locked = await _plan(rec, "1. design\n2. build", ["skill:lead"], "only", "locked")
    proposal = await rec.call(
        "propose_support_consent", **_mutation(rec, "prop"), workflow_run_id=locked,
        phase_id="plan", primary_skill_id="skill:lead", support_skill_ids=["skill:a"],
        scope_anchor_id="anchor-1", goal_revision=None, plan_revision=1,
        context_fingerprint=FINGERPRINT, expected_state_version=1,
    )  # fmt: skip
    await rec.call(
        "transition_support_consent", **_mutation(rec, "decide"),
        proposal_id=proposal["proposal_id"], action="approve", current_phase_id="plan",
        current_scope_anchor_id="anchor-1", current_goal_revision=None,
        current_plan_revision=1, current_context_fingerprint=FINGERPRINT,
        expected_state_version=2,
    )  # fmt: skip
    await _evaluations(rec)


async def memory(rec: Recorder, workspace: Path) -> None:
    """A completed run remembered in the caller's Memory, and feedback on it."""
    done = await _run(rec, "Fix the typo in the README", [], None, phase_check=("work-done", "w"))
    root = str(workspace)
    remembered = await rec.call(
        "remember_workflow", **_mutation(rec, "mem"), workflow_run_id=done, workspace_root=root,
        one_shot="none", risk_class="r0", side_effect_outcome="known-success",
        target_profile_class="managed-personal",
    )  # fmt: skip
    assert remembered["status"] == "recorded", remembered
    await rec.call(
        "record_route_feedback", **_mutation(rec, "fb"), workflow_run_id=done, workspace_root=root,
        observation_id=remembered["observation_id"], feedback_type="accepted",
        reason_code="user-accepted", correction_dimensions=[], original_route_digest=None,
        corrected_route_digest=None,
    )  # fmt: skip


def memory_calls(
    name: str, workspace: Path, digest: str, key: str
) -> list[tuple[str, dict[str, Any]]]:
    """The six Memory tools that name no entity of anyone's, as principal ``name`` calls
    them on its own context: status, candidates, a preview, a transition and a rollback
    of ids nobody made, and a purge of everything bound to ``digest``."""
    context = {"session_id": f"{name}-memory", "actor": name, "runtime_policy_snapshot_id": "p"}
    root = {"context": context, "workspace_root": str(workspace)}
    nobody = "sha256:" + "0" * 64
    mutation = {"context": context, "idempotency_key": f"{key}-m", "correlation_id": key}
    return [
        ("get_memory_status", root),
        ("list_workflow_candidates", {**root, "status": None, "limit": 50}),
        ("preview_profile_update", {**root, "candidate_id": "candidate:" + "0" * 32}),
        ("transition_profile_update", {
            **mutation, "workspace_root": str(workspace), "proposal_id": "proposal:" + "0" * 32,
            "expected_proposal_digest": nobody, "expected_profile_digest": None,
            "expected_state_version": 0, "action": "approve"}),
        ("rollback_profile_revision", {
            **mutation, "workspace_root": str(workspace),
            "source_revision_id": "revision:" + "0" * 32, "expected_profile_digest": nobody}),
        ("purge_workflow_memory", {
            **mutation, "scope": "all-memory-data", "expected_summary_digest": digest,
            "include_managed_profiles": True, "confirmed": True}),
    ]  # fmt: skip


async def _plan(
    rec: Recorder, objective: str, skills: list[str], semantics: str | None, key: str
) -> str:
    plan = await rec.call(
        "plan_work", **_mutation(rec, key), expected_state_version=0, objective=objective,
        goal_binding_id=None, requested_work_mode=None, explicit_skill_ids=skills,
        explicit_semantics=semantics,
    )  # fmt: skip
    return str(plan["workflow_run_id"])


async def _run(
    rec: Recorder,
    objective: str,
    skills: list[str],
    semantics: str | None,
    *,
    phase_check: tuple[str, str],
) -> str:
    """A planned run whose first phase passed its gate; its id."""
    check, key = phase_check
    run_id = await _plan(rec, objective, skills, semantics, f"plan-{key}")
    run = {"workflow_run_id": run_id}
    work = await rec.call("get_next_work", context=rec.context, **run)
    await rec.call("get_router_status", context=rec.context, goal_binding_id=None, **run)
    phase = work["work_item"]["phase_id"]
    event = await rec.call(
        "record_work_event", **_mutation(rec, f"event-{key}"), **run, phase_id=phase,
        observation={"check_id": check, "outcome": "passed"}, activation_receipt_ref=None,
        expected_state_version=1,
    )  # fmt: skip
    refs = event["event_ids"]
    await rec.call(
        "evaluate_gate", **_mutation(rec, f"gate-{key}"), **run, phase_id=phase, evidence_refs=refs,
        expected_evidence_digest=evidence_digest(refs), expected_plan_revision=1,
        expected_state_version=event["resulting_state_version"],
    )  # fmt: skip
    return run_id


async def _evaluations(rec: Recorder) -> None:
    runs = []
    for case in ("routing-keywords-v1", "routing-keywords-v2"):
        run = await rec.call(
            "run_model_evaluation", **_mutation(rec, f"eval-{case}"), authorization_ref=AUTH,
            repeats=1, sealed_case_ref=case,
        )  # fmt: skip
        runs.append(run["run_id"])
    await rec.call(
        "compare_evaluations", **_mutation(rec, "cmp"), authorization_ref=AUTH,
        baseline_run_id=runs[0], candidate_run_id=runs[1],
    )  # fmt: skip
    await rec.call(
        "export_router_artifact", **_mutation(rec, "exp"), authorization_ref=AUTH,
        comparison_ref=f"{runs[0]}~{runs[1]}", export_kind="comparison-summary",
        attestation_ref=None,
    )  # fmt: skip
