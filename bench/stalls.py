"""Which server stalls the slowest calls of a bench waited through (bench-only; agora never
imports it).

A `probed_serve` server run with ``BENCH_STALLS_MS`` records, on ``time.perf_counter``
(CLOCK_MONOTONIC, shared by every process on the machine), each time its main thread was held
longer than that: a scheduler run between two I/O waits (``batches``: how many task steps,
the costliest tasks), a single task step (``steps``), a cyclic garbage collection
(``collections``), and each time its store's writer thread spent that long on one
transaction (``commits``: its COMMIT's share, and whether a checkpoint ran in it), and each
checkpoint of the store's checkpointer thread (``checkpoints``) and each WAL restart of the
writer (``restarts``; see `probe_stalls`).
`attribute` matches them with the bench's calls, each a (scheduled send, reply, name) span
on the same clock, and with the bench's own collections (`ClientCollections`): for each
call at or above a latency quantile, the kind of stall that covered the largest share of its
latency, if a quarter or more, else none of them (then the wait was elsewhere: the kernel,
queueing behind ordinary work, short commits in a row).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import Counter
from typing import Any

#: The least share of a call's latency a kind of stall must cover to be named its cause.
SHARE = 0.25

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


class ClientCollections:
    """The bench process's own collections of at least ``threshold_ms`` (a ``gc.callbacks``
    entry): a pause of the load generator delays every reply it is waiting for, so the
    slowest calls are matched with these too."""

    def __init__(self, threshold_ms: float) -> None:
        self.threshold = threshold_ms / 1000
        self.rows: list[tuple[float, float, int, float]] = []
        self.count = [0, 0, 0]
        self.cpu = 0.0  # all collections'
        self._start = self._cpu = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start, self._cpu = time.perf_counter(), time.thread_time()
            return
        self.count[info["generation"]] += 1
        cpu = time.thread_time() - self._cpu
        self.cpu += cpu
        if (took := time.perf_counter() - self._start) >= self.threshold:
            self.rows.append((self._start, took, info["generation"], cpu))


def attribute(
    spans: list[tuple[float, float, str]],
    probe: dict[str, Any],
    client: ClientCollections | None = None,
    q: float = 0.99,
) -> str:
    """A report from a `probed_serve` probe taken with ``BENCH_STALLS_MS``: the server's
    collections and stalls, and what the calls at or above the ``q`` latency quantile
    overlapped (``client``: the bench's own collections, matched first)."""
    if not spans:
        return "stalls: no calls"
    timeline = probe["timeline"]
    mine = _intervals([list(row) for row in client.rows] if client else [])
    gcs = _intervals(timeline["collections"])
    runs = _intervals(timeline["batches"])
    commits = timeline.get("commits", [])
    writes = _intervals(commits)
    checkpointing = _intervals([c for c in commits if c[6]])
    checkpoints = timeline.get("checkpoints") or []
    beside = _intervals(checkpoints)
    restarts = timeline.get("restarts") or []
    restarting = _intervals(restarts)
    latencies = sorted(end - start for start, end, _ in spans)
    cut = latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    slow = [s for s in spans if s[1] - s[0] >= cut]
    kinds: Counter[str] = Counter()
    gc_share = run_share = commit_share = 0.0
    behind_checkpoint = beside_checkpoint = behind_restart = 0
    for start, end, _ in slow:
        span = end - start
        shares = {
            "client collection": _overlap(mine, start, end) / span,
            "server collection": _overlap(gcs, start, end) / span,
            "long scheduler run": _overlap(runs, start, end) / span,
            "long commit": _overlap(writes, start, end) / span,
        }
        gc_share += shares["server collection"]
        run_share += shares["long scheduler run"]
        commit_share += shares["long commit"]
        behind_checkpoint += _overlap(checkpointing, start, end) > 0
        beside_checkpoint += _overlap(beside, start, end) > 0
        behind_restart += _overlap(restarting, start, end) > 0
        top = max(shares, key=shares.__getitem__)
        kinds[top if shares[top] >= SHARE else "none of them"] += 1
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
        f"stalls: the {len(slow)} calls at or over p{q * 100:g} ({cut * 1000:.1f} ms), by "
        f"the stall covering most of their latency (if {SHARE:.0%} or more): {dict(kinds)}; "
        f"on average {gc_share / len(slow):.0%} of their latency "
        f"in collections, {run_share / len(slow):.0%} in long scheduler runs, "
        f"{commit_share / len(slow):.0%} in long commits ({behind_checkpoint} overlapped one "
        f"that checkpointed in its COMMIT, {beside_checkpoint} a checkpoint of the "
        f"checkpointer, {behind_restart} a WAL restart of the writer); "
        f"by tool {dict(Counter(name for _, _, name in slow))}",
        _commit_line(commits, checkpoints, restarts),
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
    if client is not None:
        longest = [
            (round(c[1] * 1000, 1), round(c[3] * 1000, 1), c[2])
            for c in sorted(client.rows, key=lambda c: -c[1])[:3]
        ]
        lines.append(
            f"client collector: {client.count} collections by generation, "
            f"{client.cpu * 1000:.1f} ms CPU in all; longest (ms, CPU "
            f"ms, generation) {longest}"
        )
    for start, took, name in sorted(timeline["steps"], key=lambda s: -s[1])[:5]:
        lines.append(f"  task step at +{start - origin:.3f} s: {took * 1000:.1f} ms, {name}")
    return "\n".join(lines)


def _commit_line(
    commits: list[list[Any]], checkpoints: list[list[float]], restarts: list[list[float]]
) -> str:
    """The writer's long transactions (how many, how long, how many checkpointed in their
    COMMIT), the checkpointer's checkpoints and the writer's WAL restarts."""
    line = "writer: no transaction at or over the threshold"
    if commits:
        ms = sorted(c[1] * 1000 for c in commits)
        checked = [c for c in commits if c[6]]
        mean = sum(c[4] for c in checked) / len(checked) * 1000 if checked else 0.0
        longest = sorted(commits, key=lambda c: -c[1])[:3]
        shown = [
            f"{c[1] * 1000:.1f} ms ({c[2]} jobs, statements {c[3] * 1000:.1f}, COMMIT "
            f"{c[4] * 1000:.1f}, CPU {c[5] * 1000:.1f}{', checkpoint' if c[6] else ''})"
            for c in longest
        ]
        line = (
            f"writer: {len(commits)} transactions at or over the threshold (median "
            f"{ms[len(ms) // 2]:.1f} ms, longest {ms[-1]:.1f}); {len(checked)} of them "
            f"checkpointed in their COMMIT (its mean {mean:.1f} ms); longest {shown}"
        )
    if checkpoints:
        took = sorted(c[1] * 1000 for c in checkpoints)
        line += (
            f"; checkpointer: {len(checkpoints)} checkpoints, {sum(took):.0f} ms in all "
            f"(median {took[len(took) // 2]:.1f} ms, longest {took[-1]:.1f})"
        )
    if restarts:
        took = sorted(r[1] * 1000 for r in restarts)
        line += f"; WAL restarts of the writer: {len(restarts)}, ms {[round(t, 1) for t in took]}"
    return line


def garbage_line(probe: dict[str, Any]) -> str:
    """What a `probed_serve` probe with a full collection found left in reference cycles."""
    return (
        f"cyclic garbage at the end (a full collection, frozen heap included): "
        f"{probe['unreachable_found']:,} objects, by type {probe['garbage_types']}"
    )
