"""``agora serve`` with probes, for benches that ask where a server's memory and pauses go.

Run as ``python bench/probed_serve.py serve ...`` (the arguments of ``agora``), with
``BENCH_PROBE_DIR`` set. It times every cyclic garbage collection (``gc.callbacks``: cheap)
and, if ``BENCH_TRACE_FRAMES`` is above 0, traces allocations with tracemalloc from before
agora is imported. Each SIGUSR1 writes ``<n>.json`` (n = 0, 1, ...: the collections since
the last signal: count per generation, longest pause in wall and CPU time, total; the
objects tracked by the collector and, when tracing or with ``BENCH_TYPES`` set, their
count by type (with ``BENCH_TYPES`` and a collection: of every live object, frozen ones too);
if ``<n>.collect`` exists, what a full collection of the whole heap, frozen part included, found
unreachable), ``<n>.snap``
(the tracemalloc snapshot, when tracing) and then ``<n>.done``, so the bench knows both are
whole. Tracing costs CPU and about doubles RSS: its figures are for comparing allocation
sites, not RSS. With ``BENCH_OLD_GC`` set, the server keeps the collector policy it had
before `agora.server.heap` (thresholds 50000/20/10, nothing frozen after start-up).
Bench-only; agora never imports it.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
import tracemalloc
from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

FRAMES = int(os.environ.get("BENCH_TRACE_FRAMES", "0"))
if FRAMES > 0:
    tracemalloc.start(FRAMES)


class _Pauses:
    def __init__(self) -> None:
        self.dumps = 0
        self.reset()

    def reset(self) -> None:
        self.started = 0.0
        self.started_cpu = 0.0
        self.count = [0, 0, 0]
        self.longest = [0.0, 0.0, 0.0]
        self.longest_cpu = [0.0, 0.0, 0.0]
        self.total = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            self.started_cpu = time.thread_time()
            return
        took = time.perf_counter() - self.started
        cpu = time.thread_time() - self.started_cpu
        generation = info["generation"]
        self.count[generation] += 1
        self.longest[generation] = max(self.longest[generation], took)
        self.longest_cpu[generation] = max(self.longest_cpu[generation], cpu)
        self.total += took

    def dump(self, signum: int, frame: FrameType | None) -> None:
        directory = Path(os.environ["BENCH_PROBE_DIR"])
        n = self.dumps
        self.dumps += 1
        tracked = gc.get_objects()
        figures: dict[str, Any] = {
            "collections": self.count,
            "longest_pause_ms": [round(s * 1000, 2) for s in self.longest],
            # CPU time of the longest pauses: what they cost on a quiet machine.
            "longest_pause_cpu_ms": [round(s * 1000, 2) for s in self.longest_cpu],
            "total_pause_ms": round(self.total * 1000, 1),
            "tracked_objects": len(tracked),
            "frozen_objects": gc.get_freeze_count(),
        }
        if FRAMES > 0 or os.environ.get("BENCH_TYPES"):
            figures["types"] = Counter(type(o).__qualname__ for o in tracked)
        del tracked
        if (directory / f"{n}.collect").exists():  # asked for: how much cyclic garbage
            gc.unfreeze()
            figures["unreachable_found"] = gc.collect()
            if os.environ.get("BENCH_TYPES"):  # every live tracked object, frozen ones too
                live = gc.get_objects()
                figures["types"] = Counter(type(o).__qualname__ for o in live)
                figures["largest"] = _largest(live)
                del live
            gc.freeze()
        (directory / f"{n}.json").write_text(json.dumps(figures))
        if FRAMES > 0:
            tracemalloc.take_snapshot().dump(str(directory / f"{n}.snap"))
        (directory / f"{n}.done").touch()
        self.reset()


def _largest(live: list[Any], top: int = 40) -> dict[str, int]:
    """The ``top`` largest containers (dict, list, set, deque) by length, each named by its
    type, its id and a sample of its content: one that keeps growing shows as the same name
    with a larger length (a growing dict adds no object to the counts by type)."""
    sized = [o for o in live if type(o) in (dict, list, set, deque) and len(o) >= 256]
    sized.sort(key=len, reverse=True)
    out = {}
    for o in sized[:top]:
        first = next(iter(o.items() if isinstance(o, dict) else o), None)
        out[f"{type(o).__name__}@{id(o):x} {repr(first)[:70]}"] = len(o)
    return out


_pauses = _Pauses()
gc.callbacks.append(_pauses)
signal.signal(signal.SIGUSR1, _pauses.dump)

if os.environ.get("BENCH_OLD_GC"):  # the policy before agora.server.heap, to compare
    from agora.server import heap

    def _old_policy(self: heap.HeapKeeper) -> None:
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 10)

    heap.HeapKeeper.install = _old_policy  # type: ignore[method-assign]

from agora.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
