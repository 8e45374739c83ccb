"""Two WebSocket clients of one ``agora serve`` race on one workflow run: exactly one wins.

Both send ``record_work_event`` with the same ``expected_state_version`` at the same moment, over
their own connections; the run's actor takes them one at a time, so one commits version 2 and
the other gets the typed ``state-version-conflict`` naming version 2. Then a replay of the
winner's call after a server restart answers ``replayed: true`` with the same event ids.
"""

from __future__ import annotations

import trio
from e2e_process import AgoraProcess

from agora.client import connect

CONTEXT = {"session_id": "race", "actor": "user:race", "runtime_policy_snapshot_id": "pol"}
TIMEOUT = 30


def event(run: str, who: str) -> dict[str, object]:
    return {
        "context": CONTEXT, "workflow_run_id": run, "phase_id": "plan",
        "observation": {"by": who}, "activation_receipt_ref": None,
        "expected_state_version": 1, "idempotency_key": f"event-{who}", "correlation_id": who,
    }  # fmt: skip


async def test_two_clients_race_on_one_version_and_exactly_one_wins(tmp_path):
    db = str(tmp_path / "race.db")
    with AgoraProcess("--db", db, "--toolsets", "router") as server:
        outcomes: dict[str, dict] = {}
        with trio.fail_after(TIMEOUT):
            async with connect(f"{server.url}/mcp/router") as planner:
                planned = await planner.call_tool("plan_work", {
                    "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "plan",
                    "correlation_id": "p", "objective": "1. design\n2. build",
                    "goal_binding_id": None, "requested_work_mode": None,
                    "explicit_skill_ids": [], "explicit_semantics": None,
                })  # fmt: skip
            run = planned["structuredContent"]["workflow_run_id"]
            ready, connected = trio.Event(), []

            async def client(who: str) -> None:
                async with connect(f"{server.url}/mcp/router") as c:
                    connected.append(who)
                    if len(connected) == 2:  # both sessions are open: start the race
                        ready.set()
                    await ready.wait()
                    outcomes[who] = await c.call_tool("record_work_event", event(run, who))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(client, "a")
                nursery.start_soon(client, "b")
        server.assert_clean_exit(server.stop())
    results = [o["structuredContent"] for o in outcomes.values()]
    wins = [r for r in results if "event_ids" in r]
    losses = [r for r in results if r.get("code") == "state-version-conflict"]
    assert len(wins) == len(losses) == 1
    assert wins[0]["resulting_state_version"] == losses[0]["current_state_version"] == 2
    winner = next(w for w, o in outcomes.items() if "event_ids" in o["structuredContent"])

    with AgoraProcess("--db", db, "--toolsets", "router") as again:
        with trio.fail_after(TIMEOUT):
            async with connect(f"{again.url}/mcp/router") as c:
                replay = await c.call_tool("record_work_event", event(run, winner))
        again.assert_clean_exit(again.stop())
    assert replay["structuredContent"] == {**wins[0], "replayed": True}
