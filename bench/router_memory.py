"""Router Memory at scale: 100,000 observations across 100 workspaces.

The store is seeded directly (as ``remember_workflow`` of a caller without a token would
have written it: the local owner's rows, same tables, same observation documents; per
workspace one route in 80%, two others in 10% each, over 30 days, one corrected feedback in
ten) into a fresh SQLite file, then an embedded agora
server (in-process client, no sockets: this measures the server's work) answers:

- the Memory entity's first load (every observation binding into memory);
- ``list_workflow_candidates`` for each of the 100 workspaces, ``--rounds`` times:
  candidates are derived on every read from the workspace's 1,000 observations, so its
  latency is the candidate rebuild time (p50/p99 reported);
- ``preview_profile_update`` of each workspace's candidate (p50/p99): derivation again, the
  proposed Profile, the semantic diff and the backtest over the 1,000 observations;
- ``get_memory_status`` (p50/p99), which counts the workspace's observations.

Usage: ``.venv/bin/python bench/router_memory.py [--workspaces 100] [--per-workspace 1000]
[--rounds 3]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

import trio
from cli_args import positive_int
from measure import percentile

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.router import memory_sql
from agora.toolsets.router.digests import digest

CONTEXT = {"session_id": "bench", "actor": "bench", "runtime_policy_snapshot_id": "p"}


def write_policies(base: Path, workspaces: int) -> tuple[Path, list[Path]]:
    policy = base / "memory-policy.json"
    policy.write_text(json.dumps({"format": "agora-router-memory-policy/1", "ceiling": "reviewed",
                                  "allowed_targets": ["managed-personal"]}))  # fmt: skip
    roots = []
    for n in range(workspaces):
        root = base / f"ws{n:03d}"
        (root / ".codex").mkdir(parents=True)
        (root / ".codex" / "workflow-skill-router-memory.json").write_text(json.dumps(
            {"format": "agora-router-memory-request/1", "requested_mode": "reviewed"}))  # fmt: skip
        roots.append(root)
    return policy, roots


def seed(db: Path, roots: list[Path], per: int) -> None:
    conn = sqlite3.connect(db)
    with conn:
        for statement, params in memory_sql.create_store(""):  # the local owner's
            conn.execute(statement, params)
        for w, root in enumerate(roots):
            identity = digest({"workspace": str(root.resolve())})
            rows, feedback = [], []
            for i in range(per):
                route = {
                    "routing_envelope": "phased", "route_source": "builtin-default",
                    "selection_mode": "explicit-locked", "routing_profile_digest": None,
                    "matched_profile_rule_id": None,
                    "planned_skill_tree": [{"phase_id": "plan", "exit_gate": "plan-exit",
                                            "primary_skill_id": f"skill:s{max(0, i % 10 - 7)}",
                                            "support_skill_ids": []}],
                }  # fmt: skip
                signature = digest(route)
                day = f"2026-11-{1 + i % 30:02d}"
                doc = {**route, "domains": ["web"], "tags": [], "route_signature_digest": signature,
                       "side_effect_outcome": "known-success", "risk_class": "r0",
                       "target_profile_class": "managed-personal", "one_shot": "none",
                       "recorded_day": day}  # fmt: skip
                oid = f"observation:{w:08x}{i:024x}"
                rows.append((oid, identity, f"run-{w}-{i}", "bench", signature, json.dumps(doc),
                             digest(doc), day, f"{day}T12:{i % 60:02d}:00.000000Z"))  # fmt: skip
                if i % 10 == 0:
                    fb = {"feedback_type": "corrected"}
                    feedback.append((f"feedback:{w:08x}{i:024x}", oid, identity, json.dumps(fb),
                                     digest(fb), f"{day}T13:00:00.000000Z"))  # fmt: skip
            conn.executemany(
                "INSERT INTO router_memory_observations VALUES ('', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.executemany("INSERT INTO router_memory_feedback VALUES ('', ?, ?, ?, ?, ?, ?)",
                             feedback)  # fmt: skip
    conn.close()


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        db = base / "memory.db"
        policy, roots = write_policies(base, args.workspaces)
        options = {"router": {"memory_policy": str(policy), "workspace_roots": [str(base)]}}
        config = Config(port=0, db=str(db), toolsets=["router"], options=options)
        async with open_server(config, listen=False):  # migrations only, then closed
            pass
        t = time.perf_counter()
        seed(db, roots, args.per_workspace)
        print(f"seeded {args.workspaces * args.per_workspace:,} observations "
              f"in {time.perf_counter() - t:.1f} s")  # fmt: skip
        async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as c:
            await c.initialize()
            t = time.perf_counter()
            status = {"context": CONTEXT, "workspace_root": str(roots[0])}
            first = (await c.call_tool("get_memory_status", status))["structuredContent"]
            print(f"first Memory call (entity load): {(time.perf_counter() - t) * 1000:.0f} ms; "
                  f"eligible in one workspace: {first['eligible_workflow_count']}")  # fmt: skip
            lists, statuses, previews = [], [], []
            for _ in range(args.rounds):
                for root in roots:
                    t = time.perf_counter()
                    found = await c.call_tool("list_workflow_candidates", {
                        "context": CONTEXT, "workspace_root": str(root), "limit": 1000,
                        "status": None})  # fmt: skip
                    lists.append(time.perf_counter() - t)
                    assert not found.get("isError"), found
                    for candidate in found["structuredContent"]["candidates"]:
                        t = time.perf_counter()
                        shown = await c.call_tool("preview_profile_update", {
                            "context": CONTEXT, "workspace_root": str(root),
                            "candidate_id": candidate["candidate_id"]})  # fmt: skip
                        previews.append(time.perf_counter() - t)
                        assert shown["structuredContent"]["status"] == "previewed", shown
                    t = time.perf_counter()
                    status = {"context": CONTEXT, "workspace_root": str(root)}
                    await c.call_tool("get_memory_status", status)
                    statuses.append(time.perf_counter() - t)
            candidates = len(found["structuredContent"]["candidates"])
            for name, samples in (("list_workflow_candidates", lists),
                                  ("preview_profile_update", previews),
                                  ("get_memory_status", statuses)):  # fmt: skip
                print(f"{name}: {len(samples)} calls, p50 {percentile(samples, 0.5) * 1000:.1f} ms,"
                      f" p99 {percentile(samples, 0.99) * 1000:.1f} ms")  # fmt: skip
            print(f"candidates per workspace: {candidates}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspaces", type=positive_int, default=100)
    parser.add_argument("--per-workspace", type=positive_int, default=1000)
    parser.add_argument("--rounds", type=positive_int, default=3)
    trio.run(main, parser.parse_args())
