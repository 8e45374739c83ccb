"""The router on the PostgreSQL backend: a phased run to its last gate, replays, and Memory.

Runs only with a test PostgreSQL server (``AGORA_TEST_PG``; ``bash scripts/pg.sh start DIR``),
each test in a fresh schema. The same SQL as on SQLite: migrations, the run's rows, the
ledger replay, the lazily created Memory store told apart by PostgreSQL's "no such table".
"""

from __future__ import annotations

import json
from typing import Any

from router_driver import ctx, event_args, gate_args, plan_args

from agora.config import Config
from agora.server.embed import open_server
from agora.store.pg import open_pg_store
from agora.toolsets.router.memory_sql import owners, read_store, read_workspace
from agora.toolsets.router.sql import MIGRATIONS

CHECKS = {"plan": "plan-ready", "implement": "implementation-done", "verify": "verification-passed"}


async def test_a_phased_run_and_memory_on_postgresql(pg_url, tmp_path):
    policy = tmp_path / "memory.json"
    policy.write_text(json.dumps({"format": "agora-router-memory-policy/1", "ceiling": "observe",
                                  "allowed_targets": ["managed-personal"]}))  # fmt: skip
    options = {"router": {"memory_policy": str(policy)}}
    config = Config(port=0, db=pg_url, toolsets=["router"], options=options)
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as c:
        await c.initialize()

        async def call(tool, args):
            result = await c.call_tool(tool, args)
            assert not result.get("isError"), result
            return result["structuredContent"]

        status = {"context": ctx(), "workspace_root": None}
        empty = await call("get_memory_status", status)
        assert empty["memory_store_exists"] is False
        args = plan_args("1. design\n2. build\n3. test", idem="pg-plan")
        plan = await call("plan_work", args)
        assert await call("plan_work", args) == plan  # replayed from the ledger
        run, version = plan["workflow_run_id"], 1
        for phase, check in CHECKS.items():
            obs = {"check_id": check, "outcome": "passed"}
            event = await call("record_work_event", event_args(run, phase, obs, version))
            refs, at = event["event_ids"], event["resulting_state_version"]
            gate = await call("evaluate_gate", gate_args(run, phase, refs, at))
            assert gate["passed"] is True
            version = gate["resulting_state_version"]
        stale = await c.call_tool("record_work_event", event_args(run, "verify", {}, 1))
        assert stale["structuredContent"]["code"] == "state-version-conflict"
        remember = {"context": ctx(), "workflow_run_id": run, "workspace_root": None,
                    "one_shot": "none", "risk_class": "r0", "side_effect_outcome": "none",
                    "target_profile_class": "managed-personal", "idempotency_key": "pg-mem",
                    "correlation_id": "c"}  # fmt: skip
        assert (await call("remember_workflow", remember))["status"] == "recorded"
        now = await call("get_memory_status", status)
        assert now["memory_store_exists"] is True
        assert now["eligible_workflow_count"] == 1
        purged = await call("purge_workflow_memory", {
            "context": ctx(), "scope": "all-memory-data", "confirmed": True,
            "expected_summary_digest": now["history_summary_digest"],
            "include_managed_profiles": False, "idempotency_key": "pg-purge",
            "correlation_id": "c"})  # fmt: skip
        assert purged["deleted_observations"] == 1


async def test_managed_profiles_on_postgresql(pg_url, tmp_path):
    from agora.runtime.clock import Clock, FakeWall

    policy = tmp_path / "memory.json"
    policy.write_text(json.dumps({
        "format": "agora-router-memory-policy/1", "ceiling": "reviewed",
        "profile_promotion": "review-required", "allowed_targets": ["managed-personal"],
    }))  # fmt: skip
    config = Config(port=0, db=pg_url, toolsets=["router"],
                    options={"router": {"memory_policy": str(policy)}})  # fmt: skip
    wall = FakeWall()
    routing = {"workspace_root": None, "domains": ["web"], "tags": [], "current_phase_id": None}
    async with (
        open_server(config, listen=False, clock=Clock(wall)) as srv,
        srv.client("/mcp/router") as c,
    ):
        await c.initialize()

        async def call(tool, args):
            result = await c.call_tool(tool, args)
            assert not result.get("isError"), result
            return result["structuredContent"]

        for n in range(3):
            lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use",
                    "routing_context": routing}  # fmt: skip
            run = (await call("plan_work", plan_args("Fix it", idem=f"p{n}", **lock)))[
                "workflow_run_id"
            ]
            done = {"check_id": "work-done", "outcome": "passed"}
            ev = await call("record_work_event", event_args(run, "work", done, 1))
            await call("evaluate_gate", gate_args(run, "work", ev["event_ids"], 2))
            await call("remember_workflow", {
                "context": ctx(), "workflow_run_id": run, "workspace_root": None,
                "one_shot": "none", "risk_class": "r0", "side_effect_outcome": "none",
                "target_profile_class": "managed-personal", "idempotency_key": f"m{n}",
                "correlation_id": "c"})  # fmt: skip
            wall.advance(86400)
        listing = {"context": ctx(), "workspace_root": None, "limit": 5, "status": None}
        (candidate,) = (await call("list_workflow_candidates", listing))["candidates"]
        proposal = (await call("preview_profile_update", {
            "context": ctx(), "workspace_root": None,
            "candidate_id": candidate["candidate_id"]}))["proposal"]  # fmt: skip
        applied = await call("transition_profile_update", {
            "context": ctx(), "workspace_root": None, "proposal_id": proposal["proposal_id"],
            "action": "approve", "expected_proposal_digest": proposal["proposal_digest"],
            "expected_profile_digest": "missing", "expected_state_version": 1,
            "idempotency_key": "t1", "correlation_id": "c"})  # fmt: skip
        assert applied["status"] == "applied"
        plan = await call("plan_work", plan_args("Fix it", idem="after", routing_context=routing))
        assert plan["route_source"] == "managed-personal-profile"


async def test_the_upkeep_asks_for_the_memory_store_without_a_postgresql_error(pg_url):
    """An operator's finding: each time a node took ``router: upkeep``, PostgreSQL logged
    ``ERROR: relation "router_memory_meta" does not exist``: `memory_sql.owners` probed the
    lazily created table and caught the error. No statement of it fails now."""
    failed: list[BaseException] = []

    class Watched:
        def __init__(self, conn: Any) -> None:
            self.conn = conn
            self.dialect = conn.dialect

        def execute(self, sql: str, parameters: Any = ()) -> Any:
            try:
                return self.conn.execute(sql, parameters)
            except BaseException as exc:
                failed.append(exc)
                raise

    async with open_pg_store(pg_url, MIGRATIONS) as store:
        assert await store.read(lambda conn: owners(Watched(conn))) == []
        # Nor the reads of a tool call on a server whose Memory never wrote (they too caught
        # the error, which PostgreSQL logged per call).
        assert await store.read(lambda conn: read_store(Watched(conn), "someone")) is None
        found = await store.read(lambda conn: read_workspace(Watched(conn), "someone", "ws"))
        assert found is None
    assert failed == []
