"""Helpers shared by the Memory tests: a completed run, remember arguments, the store's tables."""

from __future__ import annotations

from router_driver import ctx, key

from agora.store.neutral import POSTGRESQL, SQLITE, dialect_of

SINGLE = "Fix the typo in the README"


async def completed_run(router, session="s1"):
    run = (await router.plan(SINGLE, session=session))["workflow_run_id"]
    ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1,
                            session=session)  # fmt: skip
    await router.gate(run, "work", ev["event_ids"], 2, session=session)
    return run


def remember_args(run, root, **over):
    args = {"context": ctx(), "workflow_run_id": run, "workspace_root": str(root),
            "one_shot": "none", "risk_class": "r0", "side_effect_outcome": "known-success",
            "target_profile_class": "managed-personal", "idempotency_key": key("mem"),
            "correlation_id": "c"}  # fmt: skip
    return {**args, **over}


#: The Memory tables that exist, as each engine lists its tables.
TABLES = {
    SQLITE: "SELECT name FROM sqlite_master WHERE name LIKE 'router_memory%'",
    POSTGRESQL: "SELECT table_name FROM information_schema.tables"
    " WHERE table_schema = current_schema() AND table_name LIKE 'router_memory%'",
}


async def tables(runtime):
    rows = await runtime.read(lambda c: c.execute(TABLES[dialect_of(c)]).fetchall())
    return {r[0] for r in rows}
