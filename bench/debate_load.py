"""Debate under load: durable addressed posts, push delivery, search and read at scale.

Runs against ``agora serve --toolsets debate`` started here on a free 127.0.0.1 port with a
fresh SQLite file (``synchronous=FULL``: every acknowledged post is fsync'd before its reply)
and one configured principal; every agent connects over WebSocket with its bearer token.
The load generator shares the 2 cores with the server, so it must not be the bottleneck:
its agents speak through `debate_wire.WireClient` (raw frames on the non-blocking socket
itself, pre-encoded requests, replies decoded only as far as an agent reads them) and run
with the collector off (what they allocate dies by reference counting); the client's CPU
per post is printed beside the server's.

(load) ``--topics`` topics x ``--roles`` role sessions; each role is one agent that posts
    addressed messages to the next role (``debate_post_with_recipients``) and drains its
    inbox with ``debate_signal_wait`` (1 s at most) + ``debate_signal_advance``, for
    ``--seconds`` after a warm-up. An agent drains as a real one does: it takes every
    message the wait returned (up to 100) and sends one receipt, advancing to the last of
    them (the contract lets a receipt pass several messages addressed to the caller); a
    wait that returned nothing sends none. In the closed loop a wait mostly returns the one
    message the previous role posted since, so a post costs about one wait and one advance.
    Closed loop (the default): one connection per agent looping post, wait, advance; the
    figure is the throughput (every agent always has a call in flight, so latencies there
    are queueing: agents / throughput).
    Open loop (``--rate N``): N posts/s offered in all, each agent posting on its own
    connection at N / agents per second on a fixed schedule (random phase), whatever the
    replies do, while a second connection of the agent drains its inbox (waits of 30 s, cut
    short when the run ends). The figure is the delivery latency at that offered rate.
    Reported: acknowledged (durable) posts/s; the server's CPU in all and of its main
    (Trio) thread, per post; the writer's per post (``/healthz`` store counters): its
    thread's CPU, its wall time in statements and in COMMIT (WAL write, fsync, checkpoints),
    the share of the run it was busy (a serial resource: near 100% it bounds the rate)
    and the bytes the server wrote to storage (``/proc/PID/io``); transactions/s and jobs
    per transaction (the group commit); parked waits answered in the turn of the post
    that woke them (one transaction for both) and those that re-ran their look themselves;
    round trips p50/p99; delivery latency p50/p99, measured only for waits that were
    already parked when the message was posted, from the poster sending the post to the
    recipient's wait returning (it also counts the post's own trip and commit), and from the
    post's commit (the server logs each commit's wall time with ``trace_commits``; the first
    commit at or after the message's ts is taken: an upper bound on "post committed -> wait
    returns").
(search, read) see ``debate_store.py``.

Usage: ``.venv/bin/python bench/debate_load.py [--topics 200] [--roles 5] [--seconds 15]
[--rate N] [--search-messages 100000] [--store-messages 1000000] [--queries 300]
[--pages 300] [--keep-store PATH] [--only load|search] [--synchronous FULL|NORMAL]``.
Not run by CI.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import gc
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import debate_agent
import trio
from cli_args import positive_float, positive_int
from debate_agent import Seat, writer_split
from debate_store import TOKEN, run_search, write_config
from debate_wire import wire_connect
from measure import (
    collector_text,
    commit_split,
    cpu_window,
    disk_bytes,
    healthz,
    pace_text,
    percentile,
    raise_fd_limit,
    summary,
)
from serve import agora_serve

if TYPE_CHECKING:
    from debate_wire import WireClient
    from serve import Server

WARMUP = 2.0


class Stats:
    def __init__(self) -> None:
        self.posts = 0
        self.late_posts = 0
        self.post_rtt: list[float] = []
        self.delivery: list[float] = []
        #: (wall time the wait returned, the message's ts) of each delivery measured.
        self.delivered: list[tuple[float, str]] = []
        self.wait_rtt: list[float] = []
        self.advance_rtt: list[float] = []
        self.waits = 0
        self.empty_waits = 0
        self.counting = False


async def setup_topic(url: str, roles: int) -> list[Seat]:
    """One ACTIVE topic; (topic_id, role, session_id) per role."""
    async with wire_connect(url, TOKEN) as client:
        return await debate_agent.setup_topic(client.tool, roles, "load")


async def post(client: WireClient, seat: Seat, to: str, stats: Stats) -> None:
    """One addressed post; its body is the time it was sent (for the delivery latency)."""
    sent = time.perf_counter()
    await debate_agent.post(client.tool, seat, to, f"{sent:.9f}")
    if stats.counting:
        stats.posts += 1
        stats.post_rtt.append(time.perf_counter() - sent)


async def drain(client: WireClient, seat: Seat, stats: Stats, wait_ms: int = 1000) -> None:
    """One ``debate_signal_wait``, then ``debate_signal_advance`` past what it returned."""
    call = client.tool
    parked = time.perf_counter()
    inbox = await debate_agent.wait(call, seat, wait_ms)
    back, back_wall = time.perf_counter(), time.time()
    if stats.counting:
        stats.wait_rtt.append(back - parked)
        stats.waits += 1
        stats.empty_waits += not inbox["pending"]
        for m in inbox["pending"]:
            posted = float(m["body"])
            if posted > parked:
                stats.delivery.append(back - posted)
                stats.delivered.append((back_wall, m["ts"]))
    if inbox["pending"]:
        t_adv = time.perf_counter()
        await debate_agent.advance(call, seat, inbox)
        if stats.counting:
            stats.advance_rtt.append(time.perf_counter() - t_adv)


async def closed_agent(
    url: str, seat: Seat, to: str, stats: Stats, deadline: float, go: trio.Event
) -> None:
    async with wire_connect(url, TOKEN) as client:
        await go.wait()
        while time.perf_counter() < deadline:
            await post(client, seat, to, stats)
            await drain(client, seat, stats)


async def open_poster(
    url: str,
    seat: Seat,
    to: str,
    stats: Stats,
    deadline: float,
    go: trio.Event,
    interval: float,
) -> None:
    async with wire_connect(url, TOKEN) as client:
        await go.wait()
        due = time.perf_counter() + random.uniform(0, interval)
        while due < deadline:
            now = time.perf_counter()
            if due > now:
                await trio.sleep(due - now)
            elif now - due > 0.005 and stats.counting:
                stats.late_posts += 1  # the schedule slipped: the offered rate is not met
            await post(client, seat, to, stats)
            due += interval


async def open_receiver(
    url: str, seat: Seat, stats: Stats, deadline: float, go: trio.Event
) -> None:
    async with wire_connect(url, TOKEN) as client:
        await go.wait()
        # A long wait (a timed-out wait costs a look and a recorded check): the run's end
        # cuts it short instead.
        with trio.move_on_after(deadline - time.perf_counter()):
            while True:
                await drain(client, seat, stats, wait_ms=30_000)


async def run_load(args: argparse.Namespace, directory: Path) -> None:
    config = write_config(directory)
    probe = directory / "probe" if args.gc else None
    if probe is not None:
        probe.mkdir()
    async with agora_serve(
        directory / "load.db",
        "debate",
        config=config,
        synchronous=args.synchronous,
        trace_commits="true",
        probe=probe,
    ) as server:
        url = f"ws://127.0.0.1:{server.port}/mcp/debate"
        topics: list[list[Seat]] = []
        limiter = trio.CapacityLimiter(50)

        async def one() -> None:
            async with limiter:
                topics.append(await setup_topic(url, args.roles))

        async with trio.open_nursery() as nursery:
            for _ in range(args.topics):
                nursery.start_soon(one)
        agents = args.topics * args.roles
        mode = (
            "closed loop" if args.rate is None else f"open loop, {args.rate:,.0f} posts/s offered"
        )
        print(
            f"load: {args.topics} topics x {args.roles} roles set up ({mode}); {pace_text()}",
            flush=True,
        )
        stats, go = Stats(), trio.Event()
        deadline = time.perf_counter() + WARMUP + args.seconds + 1
        async with trio.open_nursery() as nursery:
            for roster in topics:
                for i, seat in enumerate(roster):
                    to = roster[(i + 1) % len(roster)][1]
                    if args.rate is None:
                        nursery.start_soon(closed_agent, url, seat, to, stats, deadline, go)
                        continue
                    interval = agents / args.rate
                    nursery.start_soon(open_poster, url, seat, to, stats, deadline, go, interval)
                    nursery.start_soon(open_receiver, url, seat, stats, deadline, go)
            await trio.sleep(1)  # connections open
            go.set()
            await trio.sleep(WARMUP)
            await measure(server, stats, args.seconds)
    report(stats, sorted(server.commits))


async def store_counters(port: int) -> dict[str, Any]:
    """The server's store counters (``/healthz`` "store")."""
    return dict((await healthz(port))["store"])


def writer_figures(before: dict[str, Any], after: dict[str, Any], posts: int, span: float) -> str:
    """Where the writer's time went, per post: its thread's CPU, the wall time of its
    statements and of the rest of each transaction (COMMIT: WAL write, fsync, checkpoints);
    and how much of the run it was busy in transactions (the one writer is a serial
    resource: near 100% it, not the CPU, bounds the posts/s)."""
    cpu, statements, busy = writer_split(before, after)
    return (
        f"load: writer per post: CPU {1e3 * cpu / posts:,.0f} us; wall {1e3 * busy / posts:,.0f}"
        f" us in transactions, of which {1e3 * statements / posts:,.0f} us in statements and"
        f" {1e3 * (busy - statements) / posts:,.0f} us in COMMIT (WAL write, fsync, checkpoints)"
        f"; busy {100 * busy / 1e3 / span:.0f}% of the run ({100 * statements / 1e3 / span:.0f}%"
        " in statements)"
    )


async def measure(server: Server, stats: Stats, seconds: float) -> None:
    """Count for ``seconds``; print throughput, CPU, writer and group-commit figures."""
    pid = server.pid
    store0, disk0 = await store_counters(server.port), disk_bytes(pid)
    if server.probe_dir is not None:
        await server.probe()  # the collections so far are not this window's
    t0, wall0, seen = time.perf_counter(), time.time(), len(server.commits)
    with cpu_window(pid) as cpu:
        stats.counting = True
        await trio.sleep(seconds)
        stats.counting = False
    t1, wall1 = time.perf_counter(), time.time()
    store1, disk1 = await store_counters(server.port), disk_bytes(pid)
    span, posts = t1 - t0, max(stats.posts, 1)
    jobs = [
        float(n)
        for at, n in zip(server.commits[seen:], server.commit_jobs[seen:], strict=True)
        if wall0 <= at <= wall1
    ]
    print(
        f"load: {stats.posts / span:,.0f} acknowledged (durable) posts/s over {span:.1f} s"
        f"; {cpu.shares(span)}"
    )
    print(f"load: {cpu.per(posts, 'post')}, each post with its wait and advance")
    if server.probe_dir is not None:
        figures, _ = await server.probe()
        print("load: " + collector_text(figures, posts, "post"))
    print(writer_figures(store0, store1, posts, span))
    print("load: " + commit_split(store0, store1))
    print(f"load: written to storage per post {(disk1 - disk0) / posts / 1024:,.1f} KiB")
    if jobs:
        print(
            f"load: {len(jobs) / span:,.0f} transactions/s, jobs per transaction: mean "
            f"{sum(jobs) / len(jobs):.1f}, p50 {percentile(jobs, 0.5):.0f}, max {max(jobs):.0f}"
        )
    if "polls_answered" in store1:
        answered = store1["polls_answered"] - store0["polls_answered"]
        rerun = store1["polls_rerun"] - store0["polls_rerun"]
        print(
            f"load: parked waits answered in the post's own turn {answered:,}, re-run by "
            f"themselves {rerun:,} (per post {answered / posts:.2f} / {rerun / posts:.2f})"
        )


def report(stats: Stats, commits: list[float]) -> None:
    print(f"load: {stats.waits} waits, {stats.empty_waits} of them timed out empty")
    if stats.late_posts:
        print(f"load: {stats.late_posts} posts went out over 5 ms late (offered rate not met)")
    print(summary("load: post round trip", stats.post_rtt))
    print(summary("load: signal_wait round trip", stats.wait_rtt))
    print(summary("load: signal_advance round trip", stats.advance_rtt))
    print(summary("load: delivery (post sent -> parked wait returned)", stats.delivery))
    print(
        summary(
            "load: delivery (post committed -> parked wait returned)", from_commit(stats, commits)
        )
    )


def from_commit(stats: Stats, commits: list[float]) -> list[float]:
    """Each measured delivery from its post's commit: the first commit logged at or after
    the message's ts (stamped before its commit, so that commit is its own or an earlier
    one: an upper bound, tight when commits are frequent)."""
    out = []
    for back, ts in stats.delivered:
        stamped = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        i = bisect.bisect_left(commits, stamped)
        if i < len(commits) and commits[i] <= back:
            out.append(back - commits[i])
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=positive_int, default=200)
    parser.add_argument("--roles", type=positive_int, default=5)
    parser.add_argument("--seconds", type=positive_float, default=15)
    parser.add_argument("--rate", type=positive_float, help="open loop: posts/s offered in all")
    parser.add_argument("--search-messages", type=positive_int, default=100_000)
    parser.add_argument("--store-messages", type=positive_int, default=1_000_000)
    parser.add_argument("--queries", type=positive_int, default=300)
    parser.add_argument("--pages", type=positive_int, default=300)
    parser.add_argument("--keep-store", type=Path, help="(search) write or reuse the store here")
    parser.add_argument("--only", choices=("load", "search"))
    parser.add_argument("--synchronous", type=str.upper, default="FULL", choices=("FULL", "NORMAL"))
    parser.add_argument(
        "--gc",
        action="store_true",
        help="run the server under probed_serve.py: the cyclic collector's share of the load",
    )
    args = parser.parse_args()
    if args.store_messages < args.search_messages:  # the searched topic is one of the stored
        parser.error("--store-messages must be at least --search-messages")
    raise_fd_limit()
    gc.disable()
    with tempfile.TemporaryDirectory(prefix="debate-bench-") as tmp:
        if args.only in (None, "load"):
            await run_load(args, Path(tmp))
        if args.only in (None, "search"):
            await run_search(args, Path(tmp))


if __name__ == "__main__":
    trio.run(main)
