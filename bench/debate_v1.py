"""debate/v1 under load: ``--topics`` concurrent topics, each driven from init to STOPPED.

Runs against ``agora serve --toolsets debate`` started here on a free 127.0.0.1 port with a
fresh SQLite file (``synchronous=FULL``) and one principal with conductor scope. Each topic
has its own WebSocket connection (`wsload.LeanClient`) and runs, one call after the other:
``debate_init`` (debate/v1, five roles, sessions minted), ACTIVE, the two blind CLAIMs, a
CHALLENGE, its REBUT, a verified VERIFY (-> ADJUDICATE), ``debate_judge_prepare`` and the
two agreeing ``debate_judge_verdict`` calls (-> STOPPED). All topics start together.
Reported: topics completed per second (all topics / time until the last one STOPPED), the
round trip of the five posts per topic (p50/p99), of the verdicts, and the server's CPU.

Usage: ``.venv/bin/python bench/debate_v1.py [--topics 500] [--synchronous FULL|NORMAL]``.
Not run by CI; companion of ``bench/debate_load.py`` (part 1's load, search and read).
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from cli_args import positive_int
from debate_store import tool
from measure import cpu_window, raise_fd_limit, summary
from serve import agora_serve, principal_config
from wsload import LeanClient, lean_connect

TOKEN = "debate-v1-bench-token"
LANE = '{"priority_lane": "P3", "priority_reason": "bench"}'
ROLES = ("CONDUCTOR", "PRO", "CON", "JUDGE", "HUMAN")


def write_config(directory: Path) -> Path:
    return principal_config(directory, TOKEN, scopes=("conductor",))


def payload(summary_text: str, **extra: Any) -> str:
    return json.dumps({"summary": summary_text, "assumptions": [], "evidence_refs": [], **extra})


class Stats:
    def __init__(self) -> None:
        self.post_rtt: list[float] = []
        self.verdict_rtt: list[float] = []
        self.stopped = 0


async def post(client: LeanClient, stats: Stats, topic: str, role: str, kind: str, **args: Any):
    args.setdefault("payload_json", payload(f"{role} {kind}"))
    t0 = time.perf_counter()
    out = await tool(
        client,
        "debate_post",
        topic_id=topic,
        role=role,
        priority="M",
        kind=kind,
        body=f"{role} {kind}",
        **args,
    )
    stats.post_rtt.append(time.perf_counter() - t0)
    return out


async def drive(client: LeanClient, stats: Stats) -> None:
    """One topic from debate_init to STOPPED."""
    roster = [{"role": r} for r in ROLES]
    topic = (
        await tool(
            client,
            "debate_init",
            title="v1 load",
            created_by_role="CONDUCTOR",
            roles_json=json.dumps(roster),
            metadata_json=LANE,
            protocol_version="debate/v1",
            blind_roles_csv="PRO,CON",
        )
    )["topic_id"]
    await tool(client, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    pro = (await post(client, stats, topic, "PRO", "CLAIM"))["msg_id"]
    con = (await post(client, stats, topic, "CON", "CLAIM"))["msg_id"]
    challenge = (await post(client, stats, topic, "CON", "CHALLENGE", reply_to=pro))["msg_id"]
    await post(client, stats, topic, "PRO", "REBUT", reply_to=challenge)
    verify = await post(
        client,
        stats,
        topic,
        "JUDGE",
        "VERIFY",
        reply_to=pro,
        payload_json=payload("ok", result="verified"),
    )
    assert verify["protocol_state"]["phase"] == "ADJUDICATE", verify
    prepared = await tool(
        client, "debate_judge_prepare", topic_id=topic, left_msg_id=pro, right_msg_id=con
    )
    verdict = json.dumps({"winner_msg_id": pro, "decision": "adopt"})
    for projection in prepared["projections"]:
        t0 = time.perf_counter()
        out = await tool(
            client,
            "debate_judge_verdict",
            projection_id=projection["projection_id"],
            judge_role="JUDGE",
            verdict_json=verdict,
        )
        stats.verdict_rtt.append(time.perf_counter() - t0)
    assert out["protocol_state"]["phase"] == "STOPPED", out
    stats.stopped += 1


async def run(args: argparse.Namespace, directory: Path) -> None:
    config = write_config(directory)
    async with agora_serve(
        directory / "v1.db", "debate", config=config, synchronous=args.synchronous
    ) as server:
        url = f"ws://127.0.0.1:{server.port}/mcp/debate"
        stats = Stats()
        clients: list[LeanClient] = []
        go, connected, done = trio.Event(), trio.Event(), trio.Event()
        left = [args.topics]

        async def topic() -> None:
            async with lean_connect(url, TOKEN) as client:
                clients.append(client)
                if len(clients) == args.topics:
                    connected.set()
                await go.wait()
                await drive(client, stats)
                left[0] -= 1
                if not left[0]:
                    done.set()
                await trio.sleep_forever()  # keep the connection until every topic is done

        async with trio.open_nursery() as nursery:
            for _ in range(args.topics):
                nursery.start_soon(topic)
            await connected.wait()
            t0 = time.perf_counter()
            with cpu_window(server.pid) as cpu:
                go.set()
                await done.wait()
            span = time.perf_counter() - t0
            nursery.cancel_scope.cancel()
    print(
        f"v1: {stats.stopped} topics driven to STOPPED in {span:.2f} s: "
        f"{stats.stopped / span:,.1f} topics completed/s; {cpu.shares(span)}"
    )
    print(summary("v1: post round trip (5 per topic)", stats.post_rtt))
    print(summary("v1: judge verdict round trip", stats.verdict_rtt))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=positive_int, default=500)
    parser.add_argument("--synchronous", type=str.upper, default="FULL", choices=("FULL", "NORMAL"))
    args = parser.parse_args()
    raise_fd_limit()
    gc.disable()
    with tempfile.TemporaryDirectory(prefix="debate-v1-bench-") as tmp:
        await run(args, Path(tmp))


if __name__ == "__main__":
    trio.run(main)
