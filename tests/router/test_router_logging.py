"""What the router logs of a caller's values: escaped and cut, so no call forges a log line."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from memory_support import completed_run, observe_policy, remember_args
from router_driver import ctx, event_args, gate_args, plan_args

from agora.errors import ProtocolError

# What passes the router's bounds (`agora.toolsets.router.bounds`: a control character or an
# identifier past 256 characters is refused before any handler runs, test_router_bounds):
# line and paragraph separators, a bidi override, the longest identifier.
HOSTILE = [
    pytest.param("INJECT\u2028ERROR agora.fake: forged log line", id="line-separator"),
    pytest.param("a\u2029b\u202ered\u202cc", id="separators"),
    pytest.param("x" * 256, id="longest"),
]


def _clean(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("agora.toolsets.router")]
    assert lines
    for line in lines:
        assert line.isprintable(), line  # no newline, CR, ESC, NEL, U+2028, bidi override
        assert len(line) < 600, len(line)
    return lines


@pytest.mark.parametrize("correlation", HOSTILE)
async def test_a_refusal_logs_the_correlation_id_escaped_and_cut(router, caplog, correlation):
    run = (await router.plan("1. design it\n2. build it"))["workflow_run_id"]
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    args = event_args(run, "nope", {"note": "x"}, 1)
    body = await router.refused("record_work_event", **{**args, "correlation_id": correlation})
    assert body["code"] == "unknown-phase"
    lines = _clean(caplog)
    assert any("refused: unknown-phase" in line for line in lines)
    if "INJECT" in correlation:
        assert any("INJECT\\u2028ERROR agora.fake" in line for line in lines)


@pytest.mark.parametrize("correlation", HOSTILE)
async def test_a_commit_logs_the_correlation_id_escaped_and_cut(router, caplog, correlation):
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    await router.call("plan_work", **plan_args("Fix it", correlation_id=correlation))
    assert any("-> version 1" in line for line in _clean(caplog))


class _Failing:
    def __init__(self):
        self.capabilities = {"roots": {}}

    async def request(self, method, params):
        raise ProtocolError(-32000, "no roots\nERROR agora.fake: forged \x1b[2J" + "y" * 9000)


async def test_a_client_error_from_roots_list_is_logged_escaped_and_cut(router, caplog):
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    router.client = _Failing()
    routing = {"workspace_root": "/nowhere", "domains": [], "tags": [], "current_phase_id": None}
    await router.plan("Fix it", routing_context=routing)
    assert any("roots/list failed" in line for line in _clean(caplog))


def test_loggable_escapes_and_cuts():
    from agora.logsafe import MAX_LOGGED, loggable

    assert loggable("corr-abc") == "corr-abc"
    assert loggable("a\nb\\n\x1b\u2028\U000e0001") == "a\\nb\\\\n\\x1b\\u2028\\U000e0001"
    cut = loggable("z" * 50_000)
    assert cut == "z" * MAX_LOGGED + f"...[+{50_000 - MAX_LOGGED} chars]"


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [line for line in _clean(caplog) if " refused: " in line]


async def test_every_refused_write_is_logged_with_its_correlation_id(router, caplog):
    """Reviewer finding: the README says correlation_id is logged with every refusal, but a
    version conflict, a reused key and a missing run or proposal were answered unlogged."""
    run = (await router.plan("1. design it\n2. build it", idem="logged"))["workflow_run_id"]
    caplog.set_level(logging.INFO, logger="agora.toolsets.router")
    refused = {
        "state-version-conflict": ("record_work_event", event_args(run, "plan", {}, 7)),
        "idempotency-conflict": ("plan_work", plan_args("Something else", idem="logged")),
        "capability-unavailable": ("record_work_event", event_args("run-none", "plan", {}, 1)),
        "proposal-not-found": ("transition_support_consent", _transition("nope")),
    }
    for n, (code, (tool, args)) in enumerate(refused.items()):
        body = await router.refused(tool, **{**args, "correlation_id": f"corr-agent-{n}"})
        assert body["code"] == code
        assert any(f"{tool} on " in line and f"refused: {code} (correlation corr-agent-{n})"
                   in line for line in _refusals(caplog)), code  # fmt: skip
    body = await router.refused("transition_support_consent",
                                **_transition("run-none/proposal-0"))  # fmt: skip
    assert body["code"] == "proposal-not-found"  # the form of one, but of no run
    assert "refused: proposal-not-found (correlation corr-proposal)" in _refusals(caplog)[-1]


def _transition(proposal_id: str) -> dict:
    return {
        "context": ctx(), "proposal_id": proposal_id, "action": "approve",
        "current_phase_id": "plan", "current_scope_anchor_id": "anchor-1",
        "current_goal_revision": None, "current_plan_revision": 1,
        "current_context_fingerprint": "sha256:" + "ab" * 32, "expected_state_version": 1,
        "idempotency_key": "decide", "correlation_id": "corr-proposal",
    }  # fmt: skip


def _logged_as_a_runs(caplog: pytest.LogCaptureFixture, line: str) -> bool:
    """Whether ``line`` was logged as a run's refusals are: the run module's logger, INFO."""
    return any(r.getMessage() == line and r.name == "agora.toolsets.router.run"
               and r.levelno == logging.INFO for r in caplog.records)  # fmt: skip


async def test_every_refused_memory_write_is_logged_with_its_correlation_id(
    router, caplog, tmp_path, options
):
    """Reviewer finding: the Memory tools' refusals were answered unlogged, where every
    refused write to a run is logged with its correlation_id."""
    root = observe_policy(tmp_path, options)
    (root / ".codex" / "workflow-skill-router-memory.json").write_text(json.dumps(
        {"format": "agora-router-memory-request/1", "requested_mode": "reviewed"}))  # fmt: skip
    done = await completed_run(router)
    kept = await router.call("remember_workflow", **remember_args(done, root, idempotency_key="k"))
    obs = kept["observation_id"]
    caplog.set_level(logging.INFO, logger="agora.toolsets.router")
    feedback = {"context": ctx(), "workflow_run_id": done, "observation_id": obs,
                "workspace_root": str(root), "feedback_type": "corrected",
                "reason_code": "user-correction", "correction_dimensions": [],
                "original_route_digest": None, "corrected_route_digest": None,
                "idempotency_key": "fb"}  # fmt: skip
    nowhere, proposal, revision = (f"{kind}:{'0' * 32}" for kind in
                                   ("observation", "proposal", "revision"))  # fmt: skip
    digest = "sha256:" + "0" * 64
    refused = [
        ("remember_workflow", done, "idempotency-conflict",
         remember_args(done, root, idempotency_key="k", risk_class="r1")),
        ("record_route_feedback", obs, "correction-unbound", feedback),
        ("record_route_feedback", nowhere, "observation-not-found",
         {**feedback, "feedback_type": "accepted", "observation_id": nowhere}),
        ("purge_workflow_memory", "history-only", "idempotency-conflict",
         {"context": ctx(), "scope": "history-only", "confirmed": True,
          "expected_summary_digest": digest, "include_managed_profiles": False,
          "idempotency_key": "k"}),
        ("transition_profile_update", proposal, "idempotency-conflict",
         {"context": ctx(), "workspace_root": str(root), "proposal_id": proposal,
          "expected_proposal_digest": digest, "expected_profile_digest": digest,
          "expected_state_version": 1, "action": "approve", "idempotency_key": "k"}),
        ("rollback_profile_revision", revision, "idempotency-conflict",
         {"context": ctx(), "workspace_root": str(root), "source_revision_id": revision,
          "expected_profile_digest": digest, "idempotency_key": "k"}),
    ]  # fmt: skip
    for n, (tool, on, code, args) in enumerate(refused):
        body = await router.refused(tool, **{**args, "correlation_id": f"corr-memory-{n}"})
        assert body["code"] == code, tool
        line = f"router {tool} on {on} refused: {code} (correlation corr-memory-{n})"
        assert _logged_as_a_runs(caplog, line), line


async def test_every_refused_evaluation_is_logged_with_its_correlation_id(
    router, caplog, tmp_path, options
):
    """Reviewer finding: the evaluation tools' refusals were answered unlogged, where every
    refused write to a run is logged with its correlation_id."""
    caplog.set_level(logging.INFO, logger="agora.toolsets.router")
    base = {"context": ctx(), "authorization_ref": "auth-ok", "idempotency_key": "e"}
    runs = {"baseline_run_id": "eval-a", "candidate_run_id": "eval-b"}
    export = {"comparison_ref": "eval-a~eval-b", "export_kind": "comparison-summary",
              "attestation_ref": None}  # fmt: skip
    run = {"sealed_case_ref": "no-such-case", "repeats": 1}
    refused = [
        ("run_model_evaluation", "no-such-case", "capability-unavailable", {**base, **run}),
        ("compare_evaluations", "eval-a~eval-b", "capability-unavailable", {**base, **runs}),
        ("export_router_artifact", "eval-a~eval-b", "capability-unavailable",
         {**base, **export}),
    ]  # fmt: skip
    configured = [
        ("run_model_evaluation", "no-such-case", "evaluation-not-authorized",
         {**base, **run, "authorization_ref": "auth-other"}),
        ("run_model_evaluation", "no-such-case", "sealed-case-unknown", {**base, **run}),
        ("compare_evaluations", "eval-a~eval-b", "evaluation-run-unknown", {**base, **runs}),
        ("export_router_artifact", "eval-a~eval-b", "comparison-unknown", {**base, **export}),
    ]  # fmt: skip
    for n, (tool, on, code, args) in enumerate([*refused, *configured]):
        if n == len(refused):  # read at each call: from here on an adapter is configured
            (tmp_path / "cases").mkdir()
            options["router"]["adapter"] = {
                "command": [sys.executable, "-c", "pass"], "cases_dir": str(tmp_path / "cases"),
                "authorizations": ["auth-ok"],
            }  # fmt: skip
        body = await router.refused(tool, **{**args, "correlation_id": f"corr-eval-{n}"})
        assert body["code"] == code, tool
        line = f"router {tool} on {on} refused: {code} (correlation corr-eval-{n})"
        assert _logged_as_a_runs(caplog, line), line


async def test_a_write_refused_for_its_arguments_is_logged_with_its_correlation_id(
    tmp_path, caplog
):
    """Reviewer finding: a write refused by its inputSchema, the router's bounds or a plan's
    contradictory lock was answered ``invalid-arguments`` unlogged, where every other refused
    write is logged with the correlation_id its agent sent. Over Streamable HTTP on loopback
    from the official MCP SDK's client; a read's refusal (it carries no correlation_id) stays
    unlogged."""
    mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK")
    import trio

    from agora.config import Config
    from agora.server.embed import open_server

    caplog.set_level(logging.INFO, logger="agora.toolsets.router")
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"])
    event = event_args("run-7", "plan", {}, "one")  # expected_state_version: not an integer
    bounds = gate_args("run-7", "plan", [], 1)
    bounds["idempotency_key"] = "k" * 300  # an identifier past the router's bound
    lock = plan_args("Fix it", explicit_skill_ids=["code-review"], explicit_semantics=None)
    cases = {
        "record_work_event": ({**event, "correlation_id": "corr-schema"}, "run-7"),
        "evaluate_gate": ({**bounds, "correlation_id": "corr-bounds"}, "run-7"),
        "plan_work": ({**lock, "correlation_id": "corr-lock"}, "-"),
        "transition_support_consent": ({"proposal_id": "p-1", "correlation_id": 9}, "p-1"),
    }
    messages = {}
    with trio.fail_after(30):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=30) as client,
        ):
            for tool, (args, _) in cases.items():
                answer = await client.call_tool(tool, args)
                assert answer.is_error, tool
                assert answer.structured_content["code"] == "invalid-arguments", (tool, answer)
                messages[tool] = answer.structured_content["message"]
            read = await client.call_tool("get_next_work", {"context": ctx()})
            assert read.structured_content["code"] == "invalid-arguments"
    assert "must be an integer" in messages["record_work_event"]
    assert "must be at most 256 characters" in messages["evaluate_gate"]
    assert "explicit_skill_ids names skills" in messages["plan_work"]
    lines = _refusals(caplog)
    for tool, (args, subject) in cases.items():
        correlation = args["correlation_id"] if isinstance(args["correlation_id"], str) else "-"
        line = f"router {tool} on {subject} refused: invalid-arguments (correlation {correlation})"
        assert line in lines, (line, lines)
    assert not any("get_next_work" in line for line in lines)


def test_every_write_names_an_argument_of_its_own_schema_in_its_refusals():
    """A refused write's log line names what it acts on: its run, or the argument
    `run.SUBJECTS` names. Each such name must be an argument the write's inputSchema has,
    so a table out of step with the contract shows here, not as ``-`` in an operator's log."""
    from agora.mcp.contracts import load_contract
    from agora.toolsets.router.run import SUBJECTS, WRITES

    tools = load_contract("router").tools
    assert set(SUBJECTS) <= WRITES
    unnamed = {
        name: SUBJECTS.get(name, "workflow_run_id")
        for name in WRITES
        if SUBJECTS.get(name, "workflow_run_id")
        not in {"", *tools[name].input_schema.get("properties", {})}
    }
    assert unnamed == {}
