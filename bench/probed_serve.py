"""``agora serve`` with probes, for benches that ask where a server's memory and pauses go.

Run as ``python bench/probed_serve.py serve ...`` (the arguments of ``agora``), with
``BENCH_PROBE_DIR`` set. It times every cyclic garbage collection (``gc.callbacks``: cheap)
and, if ``BENCH_TRACE_FRAMES`` is above 0, traces allocations with tracemalloc from before
agora is imported. Each SIGUSR1 writes ``<n>.json`` (n = 0, 1, ...: the collections since
the last signal: count per generation, longest pause in wall and CPU time, total; the
objects tracked by the collector (frozen ones apart) and, when tracing or with
``BENCH_TYPES`` set, the count by type of every live tracked object, frozen ones too (but
for ``BENCH_OLD_GC``, whose start-up heap stays out of it); if ``<n>.collect`` exists,
what a full collection of the whole heap, frozen part included, found unreachable, and the
10 commonest types among it: what is left in reference cycles),
``<n>.snap`` (the tracemalloc snapshot, when tracing) and then ``<n>.done``, so the bench
knows both are whole. Tracing costs CPU and about doubles RSS: its figures are for comparing
allocation sites, not RSS. With ``BENCH_STALLS_MS`` set it also records the main thread's
and the writer thread's stalls (`probe_stalls`, read by ``bench/stalls.py``; with
``BENCH_AUTOCHECKPOINT=N`` too, SQLite's automatic checkpoint is back in the COMMITs: an A/B). With
``BENCH_OLD_GC`` set, the server keeps the collector policy it had before
`agora.server.heap` (thresholds 50000/20/10, nothing frozen after start-up).

Every probe also says where the native heap goes (``native``, and ``native_collected`` after
the full collection when one was asked for): glibc malloc's bytes in use, free inside its
arenas and mapped apart (``mallinfo2``), what SQLite holds (page caches, schemas,
statements: ``sqlite3_memory_used``) and pymalloc's (bytes in blocks in use, free blocks,
free pools, ``total``: its arenas; ``sys._debugmallocstats``). Free bytes that keep growing
while bytes in use stay flat are fragmentation, not a leak. With ``BENCH_MALLOC_TRIM_SECONDS``
set, a thread calls ``malloc_trim(0)`` that often (an A/B; its CPU time is reported);
``server_trims`` counts the server's own (`agora.server.heap`), which ``BENCH_NO_TRIM`` turns
off (the A/B of that policy).
With ``BENCH_PROFILE`` set, SIGUSR2 starts and then stops ``cProfile`` on the main thread
(``calls.pstats``, then ``calls.done``, in the probe directory).
Bench-only; agora never imports it.
"""

from __future__ import annotations

import cProfile
import ctypes
import ctypes.util
import gc
import json
import os
import signal
import sys
import tempfile
import threading
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
        self.started = 0.0
        self.started_cpu = 0.0
        self.reset()

    def reset(self) -> None:
        # Not the start times: a dump can run (a signal) while a collection is under way.
        self.count = [0, 0, 0]
        self.longest = [0.0, 0.0, 0.0]
        self.longest_cpu = [0.0, 0.0, 0.0]
        self.total = 0.0
        self.total_cpu = 0.0

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
        self.total_cpu += cpu

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
            "total_pause_cpu_ms": round(self.total_cpu * 1000, 1),
            "tracked_objects": len(tracked),
            "frozen_objects": gc.get_freeze_count(),
            "native": native(),
        }
        if _timeline is not None:
            figures["timeline"] = _timeline.dump()
        if FRAMES > 0 or os.environ.get("BENCH_TYPES"):
            if not os.environ.get("BENCH_OLD_GC"):
                # The server's policy freezes nearly every survivor: count the frozen too
                # (they go back, with what is young, once counted).
                gc.unfreeze()
                tracked = gc.get_objects()
                gc.freeze()
            figures["types"] = Counter(type(o).__qualname__ for o in tracked)
        del tracked
        if (directory / f"{n}.collect").exists():  # asked for: how much cyclic garbage
            # Without the callbacks: the server's (agora.server.heap) freezes the survivors
            # of every collection as it ends, which would hide them from get_objects.
            callbacks = gc.callbacks[:]
            gc.callbacks.clear()
            gc.unfreeze()
            gc.set_debug(gc.DEBUG_SAVEALL)  # kept in gc.garbage, to be counted by type
            figures["unreachable_found"] = gc.collect()
            gc.set_debug(0)
            garbage = Counter(type(o).__qualname__ for o in gc.garbage)
            figures["garbage_types"] = dict(garbage.most_common(10))
            if os.environ.get("BENCH_TYPES"):  # one cycle through each common type
                figures["garbage_cycles"] = _cycles(gc.garbage, garbage)
            gc.garbage.clear()
            gc.collect()  # now free them
            if os.environ.get("BENCH_TYPES"):  # every live tracked object, frozen ones too
                live = gc.get_objects()
                figures["types"] = Counter(type(o).__qualname__ for o in live)
                figures["largest"] = _largest(live)
                del live
            figures["native_collected"] = native()
            gc.freeze()
            gc.callbacks.extend(callbacks)
        (directory / f"{n}.json").write_text(json.dumps(figures))
        if FRAMES > 0:
            tracemalloc.take_snapshot().dump(str(directory / f"{n}.snap"))
        (directory / f"{n}.done").touch()
        self.reset()


def _cycles(garbage: list[Any], types: Counter[str], top: int = 6) -> dict[str, str]:
    """For each of the ``top`` commonest non-builtin types in the cyclic garbage, one
    reference cycle through an object of it (the types along the way, attribute-free)."""
    ids = {id(o): o for o in garbage}
    builtin = {"tuple", "list", "dict", "set", "frozenset", "cell", "function", "method"}
    out: dict[str, str] = {}
    for name, _ in types.most_common():
        if len(out) >= top:
            break
        if name in builtin:
            continue
        start = next(o for o in garbage if type(o).__qualname__ == name)
        parent: dict[int, int] = {id(start): 0}
        queue, found = deque([start]), None
        while queue and found is None and len(parent) < 100_000:
            node = queue.popleft()
            for ref in gc.get_referents(node):
                if ref is start:
                    found = node
                    break
                if id(ref) in ids and id(ref) not in parent:
                    parent[id(ref)] = id(node)
                    queue.append(ref)
        if found is None:
            continue
        path, at = [], id(found)
        while at:
            path.append(type(ids[at]).__qualname__)
            at = parent[at]
        out[name] = " -> ".join(reversed(path)) + f" -> {name}"
    return out


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


# After tracemalloc has started: it imports agora.
from probe_stalls import install  # noqa: E402

_timeline = (
    install(float(os.environ["BENCH_STALLS_MS"])) if os.environ.get("BENCH_STALLS_MS") else None
)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
_LIBC.mallinfo2.restype = _MallInfo2
try:  # the SQLite the sqlite3 module runs on (Debian's shared library)
    _SQLITE: Any = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    _SQLITE.sqlite3_memory_used.restype = ctypes.c_int64
    _SQLITE.sqlite3_memory_highwater.restype = ctypes.c_int64
except (OSError, AttributeError):
    _SQLITE = None
_TRIMS = {"count": 0, "cpu_s": 0.0}  # BENCH_MALLOC_TRIM_SECONDS' thread
_KEEPER_TRIMS = {"count": 0, "cpu_s": 0.0}  # the server's own (agora.server.heap)


def _pymalloc() -> dict[str, int]:
    """pymalloc's totals, from ``sys._debugmallocstats`` (it writes to fd 2 only)."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    wanted = {
        "arenas allocated current": "arenas",
        "bytes in allocated blocks": "in_use",
        "bytes in available blocks": "free_blocks",
        "bytes lost to pool headers": "pool_headers",
        "bytes lost to quantization": "quantization",
        "Total": "total",
    }
    out_figures: dict[str, int] = {}
    for line in text.splitlines():
        label, _, value = line.partition("=")
        label = label.strip().lstrip("# ").strip()
        if label in wanted and wanted[label] not in out_figures:  # the first Total
            out_figures[wanted[label]] = int(value.strip().replace(",", ""))
        elif label.endswith("unused pools * 16384 bytes"):
            out_figures["free_pools"] = int(value.strip().replace(",", ""))
    return out_figures


def native() -> dict[str, Any]:
    """The native heap: malloc (MiB in use, free in its arenas, mapped apart), SQLite's and
    pymalloc's memory, and the trimming thread's work so far."""
    info = _LIBC.mallinfo2()
    mib = 2**20
    figures: dict[str, Any] = {
        "malloc_in_use_mib": round(info.uordblks / mib, 2),
        "malloc_free_mib": round(info.fordblks / mib, 2),
        "malloc_arena_mib": round(info.arena / mib, 2),
        "malloc_mmapped_mib": round(info.hblkhd / mib, 2),
        "malloc_top_free_mib": round(info.keepcost / mib, 2),
        "pymalloc_mib": {k: round(v / mib, 2) for k, v in _pymalloc().items() if k != "arenas"},
        "trims": dict(_TRIMS),
        "server_trims": dict(_KEEPER_TRIMS),
    }
    if _SQLITE is not None:
        figures["sqlite_mib"] = round(_SQLITE.sqlite3_memory_used() / mib, 2)
        figures["sqlite_highwater_mib"] = round(_SQLITE.sqlite3_memory_highwater(0) / mib, 2)
        figures["sqlite_connections_kib"] = _sqlite_connections()
    return figures


def _sqlite_connections() -> list[dict[str, int]]:
    """Each open sqlite3 connection's page cache, schema and prepared statements (KiB):
    ``sqlite3_db_status`` on the handle, which CPython 3.11's Connection keeps right after
    its object header (bench-only: it reads that layout)."""
    import sqlite3

    out = []
    current, high = ctypes.c_int(), ctypes.c_int()
    for conn in gc.get_objects():
        if type(conn) is not sqlite3.Connection:
            continue
        handle = ctypes.c_void_p.from_address(id(conn) + 2 * ctypes.sizeof(ctypes.c_void_p))
        if not handle.value:
            continue  # closed
        sizes = {}
        for op, name in ((1, "cache"), (2, "schema"), (3, "statements")):
            _SQLITE.sqlite3_db_status(handle, op, ctypes.byref(current), ctypes.byref(high), 0)
            sizes[name] = current.value >> 10
        out.append(sizes)
    return out


def _trimmer(seconds: float) -> None:
    _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
    while True:
        time.sleep(seconds)
        started = time.thread_time()
        _LIBC.malloc_trim(0)
        _TRIMS["count"] += 1
        _TRIMS["cpu_s"] += time.thread_time() - started


if os.environ.get("BENCH_MALLOC_TRIM_SECONDS"):
    threading.Thread(
        target=_trimmer,
        args=(float(os.environ["BENCH_MALLOC_TRIM_SECONDS"]),),
        daemon=True,
        name="bench-malloc-trim",
    ).start()

_pauses = _Pauses()
gc.callbacks.append(_pauses)
signal.signal(signal.SIGUSR1, _pauses.dump)


class _Calls:
    """With ``BENCH_PROFILE`` set, SIGUSR2 starts ``cProfile`` on the main thread (the event
    loop's: a signal handler runs there) and the next SIGUSR2 stops it and writes
    ``calls.pstats`` and then ``calls.done`` in the probe directory: the Python calls a phase
    made, a count a busy machine cannot skew."""

    def __init__(self) -> None:
        self.profile: cProfile.Profile | None = None

    def toggle(self, signum: int, frame: FrameType | None) -> None:
        if self.profile is None:
            self.profile = cProfile.Profile()
            self.profile.enable()
            return
        self.profile.disable()
        directory = Path(os.environ["BENCH_PROBE_DIR"])
        self.profile.dump_stats(directory / "calls.pstats")
        (directory / "calls.done").touch()
        self.profile = None


if os.environ.get("BENCH_PROFILE"):
    signal.signal(signal.SIGUSR2, _Calls().toggle)

if os.environ.get("BENCH_OLD_GC"):  # the policy before agora.server.heap, to compare
    from agora.server import heap

    def _old_policy(self: heap.HeapKeeper) -> None:
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 10)

    heap.HeapKeeper.install = _old_policy  # type: ignore[method-assign]

from agora.server import heap as _heap  # noqa: E402

_server_trim = _heap.HeapKeeper.trim


def _counted_trim(self: _heap.HeapKeeper) -> bool:
    done = _server_trim(self)
    _KEEPER_TRIMS.update(count=self.trims, cpu_s=round(self.trim_cpu_seconds, 4))
    return done


_heap.HeapKeeper.trim = _counted_trim  # type: ignore[method-assign]
if os.environ.get("BENCH_NO_TRIM"):  # the server without its periodic malloc_trim, to compare
    _heap.TRIM_SECONDS = 1e9

from agora.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
