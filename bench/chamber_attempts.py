"""Chamber attempts under load: acknowledged actions/s, action latency, seals/s, group commit.

``--agents A`` agents (default 500), each on its own WebSocket to
``ws://127.0.0.1:PORT/mcp/chamber``, run one attempt each: ``enter_open_challenge``, then
``--actions`` (20) ``chamber_action`` calls, then ``seal_attempt``. Actions are valid read
ops (look, inspect, hint), each sent with the ``expected_action_index`` taken from the
previous reply, so every one is acknowledged only after its transcript record is committed.
The server is ``agora serve --toolsets chamber``, started here as a subprocess on a free
127.0.0.1 port with a fresh SQLite file and ``AGORA_SYNCHRONOUS=FULL`` (every acknowledged
change fsync'd). Agents enter without a seed, so the server draws it and hands out a room
from its pool (``room_pool_size`` is set to one room per agent, and the run waits until
``/chamber/pool`` has them all; past the anonymous entry limit, 600 a minute shared by all
anonymous callers, the run lifts that limit); ``--chosen-seeds`` enters with one participant
seed each, so every room is built at entry. All agents connect first; then the three phases
run one after the other, all agents at once, so each rate is measured alone: enters/s, acknowledged
actions/s (with p50/p99 per-action latency as the client sees it) and seals/s. Server and
client CPU time per phase are printed, to tell which side is the bottleneck.

For scale, the same agents then send the same number of messages of the same size to a bare
trio-websocket echo server (a subprocess, no MCP, no store): the transport floor of this
machine and this client, measured in the same run, and the action rate as a share of it.

The run is repeated on a new server with ``AGORA_GROUP_COMMIT=false`` (one transaction per
write) and the ratios are printed. After each run the database is checked: one transcript
row per acknowledged action, one card per seal.

The agents use the lean sequential client of ``wsload.py`` (frames made by hand in the
agent's own task), because this machine has two cores and the load generator shares them with the
server; ``--client agora`` uses `agora.client` (two reader tasks per connection) instead,
to show what the general client costs.

RLIMIT_NOFILE is raised to its hard limit first (the server inherits it). Traffic stays on
loopback; every phase is bounded by ``--timeout`` seconds.

Usage: ``.venv/bin/python bench/chamber_attempts.py [--agents 500] [--actions 20] [--suite
chambre-chrono-v0] [--synchronous FULL] [--timeout 300] [--no-baseline] [--no-echo]
[--chosen-seeds] [--client lean|agora] [--py-spy PATH] [--py-spy-phase enter|actions|seal]
[--py-spy-rate 250] [--py-spy-gil] [--gc] [--strace PATH] [--calls [--top 8]]``. ``--py-spy``
samples the server during one phase (the action phase unless ``--py-spy-phase`` says otherwise;
``--py-spy-gil`` samples only the thread holding the GIL, so a thread waiting for it is not
counted as busy; py-spy must be installed: it is a measuring aid, not a dependency). Each phase
also prints where its commits spent their time (``/healthz``: queue, BEGIN, statements, COMMIT,
the hand-off back) and, with ``--gc``, the server runs under ``probed_serve.py`` and each phase
prints its collections and their CPU (per call: the collector's share of an entry). ``--strace
PATH`` counts the server's system calls (``strace -c -f``, every thread) during the
``--py-spy-phase`` phase, and ``--calls`` the main thread's Python calls per call of that phase
(cProfile, under ``probed_serve``, by module): counts a busy machine cannot skew, to compare two
trees with ``PYTHONPATH=OTHER/src``.
The agents' jobs are in ``chamber_agents.py``, the phases and their report in
``chamber_phases.py``, the echo floor in ``chamber_echo.py``, the profilers in ``profilers.py``.
Not run by CI.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import trio
from chamber_agents import SUITES, Agent, act, agent_connection, enter, seal
from chamber_echo import echo_floor
from chamber_phases import Run, pool_ready, report, run_phase
from cli_args import SYNCHRONOUS, int_range, positive_float, positive_int
from measure import commit_cost, pace_text, percentile, raise_fd_limit
from profilers import py_spy, python_calls, strace
from serve import agora_serve

from agora.toolsets.chamber.ratelimit import ANONYMOUS_PER_MINUTE


async def one_run(args: argparse.Namespace, directory: Path, group_commit: bool) -> Run:
    """Start a server, connect every agent, run the three phases, stop, check the rows."""
    run = Run("group commit " + ("on" if group_commit else "off"))
    db = directory / ("group.db" if group_commit else "single.db")
    with trio.fail_after(args.timeout):
        config = directory / "agora.toml"
        # One pooled room per agent, so a whole burst of entries finds its rooms ready.
        text = f"[options.chamber]\nroom_pool_size = {max(args.agents, 128)}\n"
        # The agents are anonymous, so they share one bucket: past its size, lift its limit.
        if args.agents > ANONYMOUS_PER_MINUTE:
            text += "anonymous_enter_per_minute = 0\n"
        config.write_text(text)
        probe = directory / f"probe-{db.stem}" if args.gc or args.calls else None
        if probe is not None:
            probe.mkdir()
        if args.calls:  # inherited by the server: probed_serve profiles on SIGUSR2
            os.environ["BENCH_PROFILE"] = "1"
        async with agora_serve(
            db,
            "chamber",
            config=config,
            synchronous=args.synchronous,
            group_commit=str(group_commit).lower(),
            probe=probe,
        ) as server:
            print(f"[{run.label}] server pid {server.pid} on {server.url}", file=sys.stderr)
            url = f"{server.url.replace('http://', 'ws://')}/mcp/chamber"
            async with AsyncExitStack() as stack:
                agents = []
                for n in range(args.agents):
                    client = await stack.enter_async_context(agent_connection(url, args.client))
                    agents.append(Agent(client, n))
                if not args.chosen_seeds:
                    await pool_ready(server.url, args.suite, args.agents)
                chosen = args.chosen_seeds
                profile = args.py_spy and args.py_spy.with_suffix(f".{db.stem}.txt")
                phases = (
                    ("enter", enter, (args.suite, chosen)),
                    ("actions", act, (args.actions,)),
                    ("seal", seal, ()),
                )
                traced = args.strace and args.strace.with_suffix(f".{db.stem}.txt")
                for name, job, extra in phases:
                    spied = profile if name == args.py_spy_phase else None
                    counted = traced if name == args.py_spy_phase else None
                    profiled = args.calls and name == args.py_spy_phase
                    async with (
                        py_spy(server.pid, spied, args.py_spy_rate, args.py_spy_gil),
                        strace(server.pid, counted),
                        python_calls(server, run.phase(name), profiled, args.top),
                    ):
                        await run_phase(run, name, server, agents, job, *extra)
    conn = sqlite3.connect(db)
    try:
        actions = conn.execute("SELECT count(*) FROM chamber_actions").fetchone()[0]
        sealed = conn.execute("SELECT count(*) FROM chamber_cards").fetchone()[0]
    finally:
        conn.close()
    run.rows = (actions, sealed)
    assert actions == run.phase("actions").calls, (actions, run.phase("actions").calls)
    assert sealed == run.phase("seal").calls, (sealed, run.phase("seal").calls)
    return run


async def main(args: argparse.Namespace) -> None:
    limit = raise_fd_limit()
    print(
        f"chamber_attempts: {args.agents} agents x {args.actions} actions, suite {args.suite},"
        f" synchronous={args.synchronous}, RLIMIT_NOFILE {limit}, {os.cpu_count()} CPUs;"
        f" {pace_text()}"
    )
    with tempfile.TemporaryDirectory(prefix="agora-chamber-bench-") as tmp:
        directory = Path(tmp)
        cost = commit_cost(directory, args.synchronous)
        print(f"one single-row commit (synchronous={args.synchronous}) on this disk: "
              f"{cost * 1e3:.3f} ms")  # fmt: skip
        grouped = await one_run(args, directory, group_commit=True)
        report(grouped)
        a = grouped.phase("actions")
        if not args.no_echo:
            echo = await echo_floor(args)
            print("transport floor (bare trio-websocket echo, same agents, same message size):")
            print("  " + echo.line())
            if echo.rate:
                print(f"  chamber actions/s = {a.rate / echo.rate:.0%} of the echo round trips/s")
        if args.no_baseline:
            return
        single = await one_run(args, directory, group_commit=False)
        report(single)
    b = single.phase("actions")
    if not (a.calls and b.calls):
        raise SystemExit("no acknowledged actions: nothing to compare")
    s, t = grouped.phase("seal"), single.phase("seal")
    print(
        f"group commit on/off: actions/s x{a.rate / b.rate:.2f},"
        f" seals/s x{s.rate / t.rate:.2f},"
        f" action p99 {percentile(a.latencies, 0.99) * 1e3:.1f} ms vs"
        f" {percentile(b.latencies, 0.99) * 1e3:.1f} ms"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--agents", type=int_range(1, 20000), default=500, help="concurrent agents (default 500)"
    )
    parser.add_argument(
        "--actions", type=int_range(0, 64), default=20, help="actions per agent (max 64)"
    )
    parser.add_argument("--suite", choices=SUITES, default=SUITES[0])
    parser.add_argument("--synchronous", type=str.upper, default="FULL", choices=SYNCHRONOUS)
    parser.add_argument(
        "--timeout", type=positive_float, default=300.0, help="seconds per run, at most"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run with group commit off"
    )
    parser.add_argument(
        "--no-echo", action="store_true", help="skip the bare WebSocket echo (transport floor)"
    )
    parser.add_argument(
        "--chosen-seeds",
        action="store_true",
        help="enter with participant seeds (rooms built at entry) instead of server seeds,"
        " which come from the room pool",
    )
    parser.add_argument(
        "--client",
        choices=["lean", "agora"],
        default="lean",
        help="the agents' client: wsload's lean one (default) or agora.client",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="PATH",
        help="record the server with py-spy during one phase (raw stacks to PATH.*.txt)",
    )
    parser.add_argument(
        "--strace",
        type=Path,
        metavar="PATH",
        help="count the server's system calls (strace -c -f) during the --py-spy-phase phase"
        " (summary to PATH.*.txt; it slows the phase down: for counts, not times)",
    )
    parser.add_argument(
        "--py-spy-phase",
        choices=["enter", "actions", "seal"],
        default="actions",
        help="the phase --py-spy records (default actions)",
    )
    parser.add_argument(
        "--py-spy-rate",
        type=positive_int,
        default=250,
        help="py-spy samples per second (default 250)",
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="run the server under probed_serve and print the main thread's Python calls per"
        " call of the --py-spy-phase phase (cProfile: it slows the phase, counts not times)",
    )
    parser.add_argument("--top", type=positive_int, default=8, help="modules shown by --calls")
    parser.add_argument(
        "--gc",
        action="store_true",
        help="run the server under probed_serve and print the collector's CPU per phase",
    )
    parser.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="sample only the thread holding the GIL (its work, without its waits for the GIL)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    trio.run(main, parse_args())
