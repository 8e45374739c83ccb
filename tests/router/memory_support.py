"""Helpers shared by the Memory tests: a completed run, remember arguments, the store's tables."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from router_driver import ctx, key

from agora.store.neutral import POSTGRESQL, SQLITE, dialect_of

if TYPE_CHECKING:
    from pathlib import Path

SINGLE = "Fix the typo in the README"


async def completed_run(router, session="s1", skills=(), root=None):
    """A completed single-phase run; planned on ``skills`` (an Explicit Skill Lock) if any,
    in the workspace at ``root`` if one is given."""
    lock = {"explicit_skill_ids": list(skills), "explicit_semantics": "use"} if skills else {}
    if root is not None:
        lock["routing_context"] = {"workspace_root": str(root), "domains": [], "tags": [],
                                   "current_phase_id": None}  # fmt: skip
    run = (await router.plan(SINGLE, session=session, **lock))["workflow_run_id"]
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


async def run_of(runtime: Any, observation_id: str) -> str:
    """The workflow run a stored observation was remembered from."""
    (run,) = await runtime.read(lambda c: c.execute(
        "SELECT workflow_run_id FROM router_memory_observations WHERE observation_id = ?",
        (observation_id,)).fetchone())  # fmt: skip
    return str(run)


def memory_workspace(
    tmp_path: Path,
    options: dict[str, Any],
    requested: str | None = "reviewed",
    promotion: str | None = "review-required",
) -> Path:
    """Set ``options`` to a personal ceiling ``reviewed`` (profile promotion ``promotion``,
    left out if None) with ``tmp_path`` the authorized workspace roots' parent; the root of a
    workspace under it that requests ``requested`` (`request_mode`; None: no request yet)."""
    path = tmp_path / "memory-policy.json"
    policy = {"format": "agora-router-memory-policy/1", "ceiling": "reviewed",
              "allowed_targets": ["managed-personal"]}  # fmt: skip
    if promotion is not None:
        policy["profile_promotion"] = promotion
    path.write_text(json.dumps(policy))
    options["router"]["memory_policy"] = str(path)
    options["router"]["workspace_roots"] = [str(tmp_path)]
    root = tmp_path / "ws"
    if requested is not None:
        request_mode(root, requested)
    return root


def request_mode(root: Path, requested: str) -> None:
    """Have the workspace at ``root`` request the Memory mode ``requested``."""
    (root / ".codex").mkdir(parents=True, exist_ok=True)
    (root / ".codex" / "workflow-skill-router-memory.json").write_text(
        json.dumps({"format": "agora-router-memory-request/1", "requested_mode": requested})
    )


def observe_policy(tmp_path: Path, options: dict[str, Any]) -> Path:
    """`memory_workspace` with a workspace that requests ``observe``."""
    return memory_workspace(tmp_path, options, "observe", promotion=None)


async def status(router: Any, root: Path) -> Any:
    """``get_memory_status`` for the workspace at ``root``."""
    return await router.call("get_memory_status", context=ctx(), workspace_root=str(root))
