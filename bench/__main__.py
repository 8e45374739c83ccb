"""``python -m bench <workload>``: run a named workload and write its report.

Workloads:

- ``mixed``: all four toolsets at once (``bench/mixed.py``): ``--sessions`` WebSocket sessions
  (default 1000), 60% reads, 40% durable writes, long-polls parked, for ``--seconds``.
- ``parked``: agents parked on chess ``wait_for_turn`` and debate ``debate_signal_wait``,
  single wakes timed while they stay parked (``bench/parked.py``; its own flags after ``--``;
  ``--sessions`` is its ``--agents``).
- ``soak``: the mixed load for ``--minutes``, sampling the server (``bench/soak.py``; its own
  flags after ``--``; ``--sessions`` is its ``--sessions``, ``--seconds`` its ``--minutes``).
- ``clients``: the mixed load for ``--seconds`` alone, then again with rude clients
  (``bench/rude.py``: ``--stalled`` stalled connections, one never-reading client, two
  64 KB-frame flooders, hang-ups mid-call and mid-long-poll); the others' p50/p99 in both and
  their ratio (goal: p99 within 2x), server RSS.
- ``peer``, ``ceilings``, ``chess_tables``, ``chamber_attempts``, ``chamber_burst``,
  ``router_runs``, ``debate_load``, ``ws_calls``, ``chess_replies``: the per-toolset, peer
  and floor benches, run as they are (flags after ``--`` go to them, and
  ``--seconds``/``--sessions`` to those that have them); their printed figures go into the
  report, and one that fails fails ``python -m bench``.

A flag a workload does not read is refused, naming it (`flags.USES`), never silently ignored.

The server is ``agora serve`` started here on a free 127.0.0.1 port with a fresh database
(``synchronous=FULL``), or the running server(s) given with ``--url ws://HOST:PORT/mcp``
(repeatable: sessions are spread over them; ``--pid`` names a local server to sample), which
must know the bench's principal: start it with ``--config`` on the agora.toml that
``mixed.write_config`` writes (``python -m bench config [DIR]`` writes it to DIR, made if
missing, or to the current directory; an agora.toml already there is kept unless ``--force``).
A server that cannot be reached, or that refuses the bench's token, is one line on stderr and
exit status 1 before the load starts (`cli_args.check_reachable`); a count or a duration that
is not positive, or a ``--url`` that is not ``ws://HOST:PORT/...``, is refused with the usage
(exit status 2). Every run is bounded in time (``--seconds``) and prints a progress bar; the
report is ``bench/results/<date>-<time>-<workload>.json`` with a Markdown summary and a PNG
chart next to it (see ``bench/report.py``); its figures and latency table are printed too.
``--nodes N`` (``mixed``, ``clients``) runs N nodes
on one PostgreSQL instead (``--pg URL``, a fresh schema on it; else a throwaway cluster started
with ``scripts/pg.sh``), the sessions spread over them: all four toolsets on every node, the
servers' CPU and RSS added up (``--store postgresql`` alone: one node on PostgreSQL). The
machine's other load skews every figure: the report records the load average at the start and
the end. ``calls_per_s`` counts the calls that succeeded over the measured time (refused calls
and JSON-RPC errors are counted apart); a run whose server began shutting down or whose
sessions mostly lost their connection is marked FAILED in its report and on stderr, and
``python -m bench`` exits 1.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import trio  # noqa: E402
from cli_args import check_reachable, operator_errors  # noqa: E402
from flags import build_parser, parse  # noqa: E402
from measure import cpu_seconds, raise_fd_limit, vm_rss  # noqa: E402
from report import Progress, Report, latency_summary, timeline  # noqa: E402

if TYPE_CHECKING:
    import argparse

SCRIPTS = [
    "peer",
    "ceilings",
    "chess_tables",
    "chamber_attempts",
    "chamber_burst",
    "router_runs",
    "debate_load",
    "ws_calls",
    "chess_replies",
]
ALL = "chess,chamber,router,debate"


class Sampler:
    """Servers' CPU between `begin` and `end`, and their peak RSS (added up over every
    node), sampled once a second."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.cpu0 = self._cpu()
        self.rss_start = self._rss()
        self.rss_peak = self.rss_start
        self.cpu = 0.0

    def _cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def _rss(self) -> int:
        return sum(vm_rss(pid) for pid in self.pids)

    async def run(self) -> None:
        while self.pids:
            self.rss_peak = max(self.rss_peak, self._rss())
            await trio.sleep(1.0)

    def end(self) -> dict[str, float]:
        if not self.pids:
            return {}
        self.cpu = self._cpu() - self.cpu0
        return {
            "server_cpu_s": round(self.cpu, 2),
            "server_rss_start_mib": round(self.rss_start / 2**20, 1),
            "server_rss_peak_mib": round(self.rss_peak / 2**20, 1),
            "server_rss_end_mib": round(self._rss() / 2**20, 1),
        }


async def run_mixed(args: argparse.Namespace, urls: list[str], pids: list[int]) -> Report:
    import mixed

    params = {"sessions": args.sessions, "seconds": args.seconds, "urls": urls}
    report = Report("mixed", params | {"nodes": len(urls), "store": args.store})
    mix = mixed.Mix(urls[0], mixed.plan_actors(args.sessions), mixed.Acks(), urls=urls)
    with trio.fail_after(120):
        await mixed.setup_topics(mix, max(1, args.sessions // 40))
    mix.stats = mixed.Stats()
    sampler = Sampler(pids)
    progress = Progress("mixed", args.seconds, lambda: mix.stats.calls)
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(progress.run)
        nursery.start_soon(sampler.run)
        with trio.fail_after(args.seconds + 120):
            await mixed.run(mix, args.seconds)
        nursery.cancel_scope.cancel()
    elapsed = time.perf_counter() - start
    calls = mix.stats.calls
    report.figures = {
        **call_figures(mix.stats, elapsed),
        "acknowledged_writes": len(mix.acks.records),
        "refusals": dict(mix.stats.refusals),
        "broken_connections": mix.stats.broken,
        **sampler.end(),
    }
    report.failure = mix.stats.lost(args.sessions)
    if sampler.cpu and calls:
        report.figures["server_cpu_us_per_call"] = round(sampler.cpu / calls * 1e6, 1)
    calls_only = [s for k in ("read", "write") for s in mix.stats.latencies.get(k, [])]
    report.latency = {"reads and writes": latency_summary(calls_only)} | {
        kind: latency_summary(samples) for kind, samples in mix.stats.latencies.items()
    }
    report.latency |= {  # per toolset, tool by tool (refusals included)
        f"{toolset_of(tool)}: {tool}": latency_summary(samples)
        for tool, samples in sorted(mix.stats.tools.items(), key=lambda t: toolset_of(t[0]))
    }
    report.per_second = timeline(mix.stats.timeline, start)
    return report


def call_figures(stats: Any, elapsed: float, label: str = "") -> dict[str, Any]:
    """Calls that succeeded and their rate over the measured ``elapsed`` seconds, with the
    refused ones and the JSON-RPC errors counted apart: a server that refuses everything
    (one shutting down answers -32011 at once) must not read as a fast one."""
    suffix = f" {label}" if label else ""
    return {
        f"calls{suffix}": stats.succeeded,
        f"refused_calls{suffix}": stats.refused,
        f"rpc_errors{suffix}": stats.errors,
        f"seconds{suffix}": round(elapsed, 2),
        f"calls_per_s{suffix}": round(stats.succeeded / elapsed, 1) if elapsed else 0.0,
    }


def toolset_of(tool: str) -> str:
    """The toolset serving ``tool`` (the mixed load's tools only)."""
    if tool.startswith("debate_"):
        return "debate"
    if tool in ("get_board", "make_move", "wait_for_turn"):
        return "chess"
    if "chamber" in tool or tool in ("enter_open_challenge", "seal_attempt"):
        return "chamber"
    return "router"


async def run_clients(args: argparse.Namespace, urls: list[str], pids: list[int]) -> Report:
    """The mixed load alone, then with rude clients; the polite sessions' latency in both."""
    import mixed
    import rude

    report = Report("clients", {"sessions": args.sessions, "seconds": args.seconds,
                                "stalled": args.stalled})  # fmt: skip
    mix = mixed.Mix(urls[0], mixed.plan_actors(args.sessions), mixed.Acks(), urls=urls)
    with trio.fail_after(120):
        await mixed.setup_topics(mix, max(1, args.sessions // 40))
    port = int(urls[0].split("://", 1)[1].split("/")[0].rsplit(":", 1)[1])
    phases: dict[str, mixed.Stats] = {}
    elapsed: dict[str, float] = {}
    rss: dict[str, float] = {}
    held: list[trio.SocketStream] = []
    for phase in ("alone", "with rude clients"):
        mix.stats = phases[phase] = mixed.Stats()
        async with trio.open_nursery() as nursery:
            if phase != "alone":
                await rude.stall(port, args.stalled, held)
                nursery.start_soon(rude.never_reads, urls[0], mix.topics[0]["topic_id"])
                nursery.start_soon(rude.flood, urls[0])
                nursery.start_soon(rude.flood, urls[0])
                nursery.start_soon(rude.hang_up, urls[0], mix.topics[0], 10_000)
            progress = Progress(phase, args.seconds, lambda: mix.stats.calls)
            nursery.start_soon(progress.run)
            start = time.perf_counter()
            with trio.fail_after(args.seconds + 120):
                await mixed.run(mix, args.seconds)
            elapsed[phase] = time.perf_counter() - start
            if pids:
                rss[phase] = round(sum(vm_rss(pid) for pid in pids) / 2**20, 1)
            nursery.cancel_scope.cancel()
    for stream in held + rude.OPENED:
        await stream.aclose()
    failures = []
    for phase, stats in phases.items():
        calls = [s for k in ("read", "write") for s in stats.latencies.get(k, [])]
        report.latency[phase] = latency_summary(calls)
        report.figures |= call_figures(stats, elapsed[phase], phase)
        if lost := stats.lost(args.sessions):
            failures.append(f"{phase}: {lost}")
    report.failure = "; ".join(failures)
    alone, loaded = (report.latency[p].get("p99_ms", 0.0) for p in phases)
    report.figures["p99_ratio"] = round(loaded / alone, 2) if alone else None
    report.notes.append(
        "p99_ratio: the other clients' p99 with the rude clients over their p99 alone "
        "(goal: at most 2, rude clients must not slow the rest much)"
    )
    report.figures["server_rss_mib"] = rss
    return report


def run_script(name: str, extra: list[str]) -> Report:
    """A per-toolset bench as it is; its output lines become the report's figures."""
    command = [sys.executable, str(HERE / f"{name}.py"), *extra]
    report = Report(name, {"argv": extra})
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    sys.stderr.write(done.stderr[-4000:])
    if done.returncode != 0:  # e.g. its own argparse refused a flag: there is nothing to report
        print(done.stdout)
        print(f"python -m bench {name}: bench/{name}.py exited {done.returncode}; no report",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(done.returncode if done.returncode > 0 else 1)
    report.figures = {
        "exit_status": done.returncode,
        "seconds": round(time.perf_counter() - start, 1),
        "output": done.stdout.splitlines(),
    }
    print(done.stdout)
    return report


async def with_server(args: argparse.Namespace) -> Report:
    workload = run_clients if args.workload == "clients" else run_mixed
    if args.url:
        import mixed

        await check_reachable(args.url, mixed.TOKEN)
        return await workload(args, args.url, [args.pid] if args.pid else [])
    if args.store == "postgresql":
        return await on_nodes(args, workload)
    import mixed
    from serve import agora_serve

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = mixed.write_config(directory)
        async with agora_serve(
            directory / "bench.db", ALL, config=config, synchronous="FULL"
        ) as server:
            url = server.url.replace("http://", "ws://") + "/mcp"
            return await workload(args, [url], [server.pid])


async def on_nodes(args: argparse.Namespace, workload: Any) -> Report:
    """``workload`` over ``--nodes`` agora nodes sharing one PostgreSQL database (a fresh
    schema on ``--pg``, or on a throwaway cluster started with ``scripts/pg.sh``); the
    sessions spread round-robin over the nodes, every node's CPU and RSS added up."""
    import mixed
    import nodes_cluster

    server, pgdir = args.pg, ""
    if not server:
        pgdir = tempfile.mkdtemp(prefix="agora-bench-pg-")  # pg.sh hands it to postgres
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        started = await trio.run_process(
            ["bash", str(HERE.parent / "scripts" / "pg.sh"), "start", pgdir, str(port)],
            capture_stdout=True,
        )
        server = started.stdout.decode().strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = mixed.write_config(Path(tmp))
            schema = nodes_cluster.fresh_schema(server)
            async with nodes_cluster.cluster(schema, args.nodes, ALL, config, None) as (running, _):
                urls = [n.url.replace("http://", "ws://") + "/mcp" for n in running]
                return await workload(args, urls, [n.proc.pid for n in running])  # type: ignore[no-any-return]
    finally:
        if pgdir:
            with trio.CancelScope(shield=True):
                await trio.run_process(
                    ["bash", str(HERE.parent / "scripts" / "pg.sh"), "stop", pgdir], check=False
                )
            shutil.rmtree(pgdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    with operator_errors("python -m bench"):
        run(argv)


def run(argv: list[str] | None) -> None:
    parser = build_parser(
        __doc__.split("\n")[0], ["mixed", "clients", "parked", "soak", "config", *SCRIPTS]
    )
    args, extra = parse(parser, sys.argv[1:] if argv is None else argv)
    raise_fd_limit()
    if args.workload == "config":
        directory = Path(args.directory or ".")
        if directory.exists() and not directory.is_dir():
            parser.error(f"config: {directory} is not a directory")
        if (directory / "agora.toml").exists() and not args.force:
            parser.error(
                f"config: {directory / 'agora.toml'} exists; give --force to replace it,"
                " or another directory"
            )
        directory.mkdir(parents=True, exist_ok=True)
        import mixed

        print(mixed.write_config(directory))
        return
    if args.workload in ("mixed", "clients"):
        report = trio.run(with_server, args)
    elif args.workload in ("parked", "soak"):
        module = __import__(args.workload)
        report = module.main(extra)
    else:
        report = run_script(args.workload, extra)
    path = report.write(args.out or HERE / "results")
    chart = path.with_suffix(".png")
    print(report.summary())
    print(f"\nreport: {path} (+ .md{', .png' if chart.exists() else ''})")
    if report.failure:
        sys.exit(f"\nFAILED: {report.failure}.\nThese figures do not measure a working server.")


if __name__ == "__main__":
    main()
