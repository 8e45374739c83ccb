"""Soak: the mixed load for N minutes, sampling the server every 10 s, and the trend of each sample.

Runs ``agora serve`` (all four toolsets, ``synchronous=FULL``, a fresh database) on a free
127.0.0.1 port and the ``mixed`` workload (``bench/mixed.py``, ``--sessions`` sessions) against
it for ``--minutes`` (bounded). Every ``--every`` seconds (10) it samples the server's RSS (and
its anonymous and file-backed parts), its open file descriptors, the actors it holds and the
long-polls parked on them (``/healthz``' ``actors`` and ``parked``; -1 from a server too old to
report them), the database size (file + WAL) and the WAL's alone (one that keeps growing means
a reader pins it). The first ``--warm`` minutes (5: idle actors leave after 5 minutes, so the
actor table fills for that long) are left out of the trend: the slope of each series (least
squares, per minute) over the rest is printed and reported; a flat server has slopes near zero.
A run too short to leave two samples after warm-up says so instead of printing slopes (and
``--minutes`` shorter than ``--warm`` plus two ``--every`` is refused before it starts).

A live debate topic keeps every message's index entry (about 300 bytes) in memory, so a load
that posts into the same topics for the whole run grows by that much per message: growth with
data, not a leak. Debates end; ``--topic-messages`` (1000) replaces a topic by a fresh one
after that many messages, and the old one is evicted once idle (``0``: the same topics for
the whole run, the load of the first soaks).

To see what grows: ``--types`` runs the server under ``bench/probed_serve.py`` and writes to
``--trace-out``, every ``--trace-every`` minutes after warm-up, how many more live objects of
each type it holds than at the end of warm-up (after a full collection, frozen objects
included), where the native heap goes (glibc malloc in use, free in its arenas and their
size; SQLite's memory, each connection's page cache and statements; pymalloc's arenas: a line
``native`` per probe, also in the report) and what the full collection found in reference
cycles (by type, with one cycle through each common type: what the server's collector policy
keeps frozen until its thaw); ``--trace-frames N`` also traces allocations (tracemalloc, N
frames: slow, for short runs) and adds the allocation sites that grew most.

Usage: ``.venv/bin/python -m bench soak -- --minutes 30 [--sessions 200] [--every 10]`` or
``.venv/bin/python bench/soak.py --minutes 30``. Not run by CI.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import mixed
import trio
from cli_args import non_negative_float, non_negative_int, positive_float, positive_int
from measure import healthz, raise_fd_limit, vm_rss
from report import Progress, Report, latency_summary
from serve import agora_serve

#: The sampled series whose trend after warm-up the report gives.
SERIES = ("rss_mib", "rss_anon_mib", "rss_file_mib", "fds", "actors", "parked", "db_mib", "wal_mib")


def trends(samples: list[dict[str, float]], warm: float) -> dict[str, float] | str:
    """The slope per minute of each of `SERIES` over the ``samples`` taken after the first
    ``warm`` minutes; with fewer than two such samples, which draw no line, why not."""
    after = [s for s in samples if s["minute"] >= warm]
    if len({s["minute"] for s in after}) < 2:
        return (
            f"not enough samples after the first {warm:g} minute(s) of warm-up for a trend"
            f" ({len(after)} of the 2 a slope needs): run longer than --warm plus 2 x --every"
        )
    return {
        f"{key}_slope_per_minute": round(slope([(s["minute"], s[key]) for s in after]), 4)
        for key in SERIES
    }


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (x, y) points; 0 with fewer than two."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


async def _healthz(port: int) -> dict[str, Any]:
    try:
        return await healthz(port)
    except ValueError:
        return {}


def _rss_parts(pid: int) -> dict[str, float]:
    """The server's resident memory by kind (MiB): anonymous (heap: Python objects, SQLite's
    page caches, malloc's free lists) and file-backed (code, mapped files)."""
    parts = {"rss_anon_mib": -1.0, "rss_file_mib": -1.0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            parts[f"rss_{name[3:].lower()}_mib"] = round(int(value.split()[0]) / 1024, 2)
    return parts


async def sample(pid: int, port: int, db: Path) -> dict[str, float]:
    """One sample of the server: RSS MiB (and its anonymous and file-backed parts), open fds,
    actors, parked long-polls, database MiB (file + WAL) and the WAL's MiB alone (a WAL that
    keeps growing means checkpoints cannot finish: a reader pins it)."""
    health = await _healthz(port)
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())
    wal = db.with_name(db.name + "-wal")
    return {
        **_rss_parts(pid),
        "wal_mib": round(wal.stat().st_size / 2**20, 3) if wal.exists() else 0.0,
        "rss_mib": round(vm_rss(pid) / 2**20, 2),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "actors": health.get("actors", -1),
        "parked": health.get("parked", -1),
        "db_mib": round(size / 2**20, 3),
    }


def _growth(before: Any, after: Any, top: int) -> list[str]:
    """The ``top`` allocation sites (tracebacks) that grew most from ``before`` to ``after``."""
    diff = after.compare_to(before, "traceback")
    lines = []
    for stat in diff[:top]:
        lines.append(
            f"{stat.size_diff / 2**20:+.2f} MiB ({stat.count_diff:+d} blocks), "
            f"now {stat.size / 2**20:.2f} MiB"
        )
        lines += ["    " + line for line in stat.traceback.format()]
    return lines


async def tracer(
    server: Any, args: argparse.Namespace, start: float, natives: list[dict[str, Any]]
) -> None:
    """Every ``--trace-every`` minutes: the server's tracemalloc snapshot and live objects by
    type, compared with the first one taken after warm-up, and where the native heap goes
    (malloc, SQLite, pymalloc: appended to ``natives``); written to ``--trace-out``."""
    import tracemalloc
    from collections import Counter

    out = Path(args.trace_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    first: Any = None
    first_types: Counter[str] | None = None
    first_largest: dict[str, int] = {}
    await trio.sleep(args.warm * 60)
    while True:
        figures, path = await server.probe(collect=True)
        minute = (time.perf_counter() - start) / 60
        snap = tracemalloc.Snapshot.load(str(path)) if path else None
        types = Counter(figures.get("types", {}))
        natives.append({"minute": round(minute, 2), **figures.get("native", {})})
        natives[-1]["collected"] = figures.get("native_collected", {})
        with out.open("a") as f:  # noqa: ASYNC230 - a bench report, once a minute
            f.write(f"-- minute {minute:.1f} native: {json.dumps(natives[-1])}\n")
        if first_types is None:
            first, first_types = snap, types
            first_largest = figures.get("largest", {})
        else:
            lines = [
                f"== minute {minute:.1f} vs warm ({figures.get('tracked_objects')} tracked,"
                f" unreachable {figures.get('unreachable_found')},"
                f" rss {vm_rss(server.pid) >> 20} MiB)"
            ]
            garbage = figures.get("garbage_types", {})
            lines += [f"  garbage {name}: {count}" for name, count in list(garbage.items())[:15]]
            cycles = figures.get("garbage_cycles", {})
            lines += [f"  a cycle through {name}: {path}" for name, path in cycles.items()]
            grown = (types - first_types).most_common(25)
            lines += [f"  {name}: +{count}" for name, count in grown]
            largest = figures.get("largest", {})
            lines += [
                f"  {size} (was {first_largest.get(name, '-')}) {name}"
                for name, size in list(largest.items())[:20]
            ]
            if snap is not None and first is not None:
                lines += _growth(first, snap, args.trace_top)
            with out.open("a") as f:  # noqa: ASYNC230 - a bench report, once a minute
                f.write("\n".join(lines) + "\n")
        if path:
            path.unlink()
        await trio.sleep(args.trace_every * 60)


async def soak(args: argparse.Namespace) -> Report:
    report = Report("soak", vars(args).copy())
    samples: list[dict[str, float]] = []
    natives: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = mixed.write_config(directory)
        db = directory / "soak.db"
        all_sets = "chess,chamber,router,debate"
        probe = None
        if args.trace_frames or args.types:
            probe = directory / "probe"
            probe.mkdir()
        async with agora_serve(
            db, all_sets, config=config, probe=probe, trace_frames=args.trace_frames,
            types=args.types,
            synchronous="FULL",
        ) as server:  # fmt: skip
            url = server.url.replace("http://", "ws://") + "/mcp"
            mix = mixed.Mix(url, mixed.plan_actors(args.sessions), mixed.Acks())
            mix.topic_messages = args.topic_messages
            await mixed.setup_topics(mix, max(1, args.sessions // 40))
            seconds = args.minutes * 60
            start = time.perf_counter()

            async def sampler() -> None:
                while True:
                    point = await sample(server.pid, server.port, db)
                    point["minute"] = round((time.perf_counter() - start) / 60, 3)
                    samples.append(point)
                    await trio.sleep(args.every)

            progress = Progress("soak", seconds, lambda: mix.stats.calls)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sampler)
                if probe is not None:
                    nursery.start_soon(tracer, server, args, start, natives)
                nursery.start_soon(progress.run)
                with trio.fail_after(seconds + 120):
                    await mixed.run(mix, seconds)
                nursery.cancel_scope.cancel()
    report.figures = {
        "calls": mix.stats.succeeded,  # refused calls and JSON-RPC errors apart
        "refused_calls": mix.stats.refused,
        "rpc_errors": mix.stats.errors,
        "acknowledged_writes": len(mix.acks.records),
        "refusals": dict(mix.stats.refusals),
        "broken_connections": mix.stats.broken,
        "samples": samples,
        "native": natives,
    }
    trend = trends(samples, args.warm)
    if isinstance(trend, str):
        report.figures["trend"] = trend
        print(f"trend: {trend}")
    else:
        report.figures |= trend
    report.latency = {k: latency_summary(v) for k, v in mix.stats.latencies.items()}
    report.notes.append(f"trend over samples after the first {args.warm} minute(s)")
    report.failure = mix.stats.lost(args.sessions)
    for key, value in report.figures.items():
        if key.endswith("slope_per_minute"):
            print(f"{key}: {value}")
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(prog="bench/soak.py", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=positive_float, default=30.0)
    parser.add_argument("--sessions", type=positive_int, default=200)
    parser.add_argument("--every", type=positive_float, default=10.0)
    parser.add_argument("--warm", type=non_negative_float, default=5.0)
    parser.add_argument(
        "--topic-messages", type=non_negative_int, default=1000,
        help="replace a debate topic by a fresh one after this many messages (0: never)",
    )  # fmt: skip
    parser.add_argument(
        "--trace-frames",
        type=non_negative_int,
        default=0,
        help="run the server under tracemalloc with this many frames",
    )
    parser.add_argument(
        "--types", action="store_true", help="count the server's live objects by type (no tracing)"
    )
    parser.add_argument("--trace-every", type=positive_float, default=2.0)
    parser.add_argument("--trace-top", type=positive_int, default=15)
    parser.add_argument(
        "--trace-out",
        default=str(Path(__file__).with_name("results") / "soak-trace.txt"),
        help="where the --trace-every probes are written (default: bench/results/, not tracked)",
    )
    args = parser.parse_args(argv)
    if (args.minutes - args.warm) * 60 < 2 * args.every:
        parser.error(
            f"--minutes {args.minutes:g} leaves too little after --warm {args.warm:g} for a"
            f" trend, which needs 2 samples taken {args.every:g} s apart (--every): give"
            f" --minutes at least {math.ceil((args.warm + 2 * args.every / 60) * 100) / 100:g}"
        )
    raise_fd_limit()
    return trio.run(soak, args)


if __name__ == "__main__":
    main().write()
