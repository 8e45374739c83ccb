"""Which server stalls the slowest calls of a bench waited through (bench-only; agora never
imports it).

A `probed_serve` server run with ``BENCH_STALLS_MS`` records, on ``time.perf_counter``
(CLOCK_MONOTONIC, shared by every process on the machine), each time its main thread was held
longer than that: a scheduler run between two I/O waits (``batches``: how many task steps,
the costliest tasks), a single task step (``steps``), a cyclic garbage collection
(``collections``). `attribute` matches them with the bench's calls, each a (scheduled send,
reply, name) span on the same clock: for the calls at or above a latency quantile, how many
overlapped a collection, a long scheduler run, or neither (then the wait was elsewhere: the
writer thread, the client, the kernel). A stall only explains a call it overlaps.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from typing import Any

#: (start, duration) pairs sorted by start, with the longest duration (for overlap queries).
Intervals = tuple[list[float], list[float], float]


def _intervals(rows: list[list[Any]]) -> Intervals:
    rows = sorted(rows, key=lambda r: r[0])
    return [r[0] for r in rows], [r[1] for r in rows], max((r[1] for r in rows), default=0.0)


def _overlap(ivs: Intervals, start: float, end: float) -> float:
    """Seconds of ``[start, end]`` covered by the intervals (they do not overlap each other)."""
    starts, durations, longest = ivs
    total = 0.0
    i = bisect_left(starts, start - longest)
    while i < len(starts) and starts[i] < end:
        total += max(0.0, min(end, starts[i] + durations[i]) - max(start, starts[i]))
        i += 1
    return total


def attribute(spans: list[tuple[float, float, str]], probe: dict[str, Any], q: float = 0.99) -> str:
    """A report from a `probed_serve` probe taken with ``BENCH_STALLS_MS``: the server's
    collections and stalls, and what the calls at or above the ``q`` latency quantile
    overlapped."""
    if not spans:
        return "stalls: no calls"
    timeline = probe["timeline"]
    gcs = _intervals(timeline["collections"])
    runs = _intervals(timeline["batches"])
    latencies = sorted(end - start for start, end, _ in spans)
    cut = latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    slow = [s for s in spans if s[1] - s[0] >= cut]
    kinds: Counter[str] = Counter()
    gc_share = run_share = 0.0
    for start, end, _ in slow:
        in_gc, in_runs = _overlap(gcs, start, end), _overlap(runs, start, end)
        gc_share += in_gc / (end - start)
        run_share += in_runs / (end - start)
        kinds["collection" if in_gc else "long scheduler run" if in_runs else "neither"] += 1
    origin = min(s[0] for s in spans)
    by_gen = Counter(c[2] for c in timeline["collections"])
    longest_gc = {g: max(c[1] for c in timeline["collections"] if c[2] == g) for g in by_gen}
    lines = [
        f"collector: {probe['collections']} collections by generation, "
        f"{probe['total_pause_ms']} ms in all ({probe['total_pause_cpu_ms']} ms CPU), "
        f"longest (CPU ms) {probe['longest_pause_cpu_ms']}; "
        f"{probe['tracked_objects']:,} objects tracked, {probe['frozen_objects']:,} frozen",
        f"stalls: {len(timeline['batches'])} scheduler runs, {len(timeline['steps'])} task "
        f"steps and {len(timeline['collections'])} collections at or over the threshold "
        f"(collections by generation {dict(sorted(by_gen.items()))}, longest ms "
        f"{ {g: round(t * 1000, 1) for g, t in sorted(longest_gc.items())} })",
        f"stalls: the {len(slow)} calls at or over p{q * 100:g} ({cut * 1000:.1f} ms) "
        f"overlapped: {dict(kinds)}; on average {gc_share / len(slow):.0%} of their latency "
        f"in collections, {run_share / len(slow):.0%} in long scheduler runs; by tool "
        f"{dict(Counter(name for _, _, name in slow))}",
    ]
    for start, took, count, top, cpu in sorted(timeline["batches"], key=lambda b: -b[1])[:8]:
        lines.append(
            f"  scheduler run at +{start - origin:.3f} s: {took * 1000:.1f} ms ({cpu * 1000:.1f}"
            f" ms CPU), {count} steps; costliest tasks (ms) {top}"
        )
    for start, took, gen, cpu in sorted(timeline["collections"], key=lambda c: -c[1])[:5]:
        lines.append(
            f"  collection at +{start - origin:.3f} s: generation {gen}, {took * 1000:.1f} ms "
            f"({cpu * 1000:.1f} ms CPU)"
        )
    for start, took, name in sorted(timeline["steps"], key=lambda s: -s[1])[:5]:
        lines.append(f"  task step at +{start - origin:.3f} s: {took * 1000:.1f} ms, {name}")
    return "\n".join(lines)
