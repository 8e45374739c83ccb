"""How ``agora serve`` runs Python's cyclic garbage collector: short pauses at any heap size.

A call's objects die by reference counting; what the cyclic collector mostly does is rescan
live objects. A collection is a pause of the whole server (every thread waits on the GIL),
about a microsecond per object it scans on the development machine, so what a collection
scans is what it costs. With the default thresholds the collector rescans the long-lived
heap (modules, contracts, every connection's and actor's state) over and over: ~4 s of a
~10 s WebSocket bench run, and seconds per full collection with 100,000 parked agents (~8
million tracked objects).

So the start-up heap is frozen (`gc.freeze`: never scanned again), and so is everything made
since, every `TICK_SECONDS` (`HeapKeeper.run`), without scanning it: a freeze moves the
collector's lists whole. Scanning is kept for where garbage is:

- every `SAMPLE_TICKS`-th tick collects the young generation instead (what was made since the
  last tick and is still alive), and what survives is frozen as the collection ends (the
  collector's own callback);
- a collection that finds objects dead in reference cycles makes every tick collect for the
  next `COLLECT_TICKS` ticks (renewed while they find more), so once a sample has found
  some, a server that keeps making cyclic garbage frees it within a tick, not at the thaw;
- the count still collects when `YOUNG` net allocations of tracked objects come between two
  ticks (a burst, or a loop that does not get to run its tick), which bounds what any one
  collection scans.

Why not collect at every tick: under load the young generation at any moment is mostly the
calls in flight (their coroutines, arguments and replies), which die by reference counting a
moment later. Collecting it every 0.1 s scanned 13,000-30,000 objects a tick under the
debate's closed loop, 8-25 ms pauses, 12-15% of the main thread, and found no garbage at all
(the server makes none per call: `bench parked` and the soak count it). A tick's freeze
costs nothing, and the samples, one tick in fifty, a thirtieth of that (4 us of collector
CPU per debate post against 117-140: `bench/debate_load.py --gc`).

The price: an object frozen while alive that later dies inside a reference cycle is not
freed while it stays frozen, and a cycle made and dropped between two samples is frozen
unscanned. Trio and agora free connections and calls by reference counting, so little piles
up, but a server that runs for weeks must not keep even that: every `THAW_SECONDS`
`HeapKeeper.run` gives the frozen heap back to the collector, collects it whole once (the one
pause that grows with the heap, a fraction of a second at 20,000 parked agents) and freezes
what is still alive. The middle and old generations stay empty, so `MIDDLE` and `OLD` only
say how often the collector counts a collection as middle or full.

The C heap too: glibc's malloc keeps what the server frees (Python objects over 512 bytes,
SQLite's page caches and statements, allocated by the reader and writer threads in arenas of
their own) for reuse, and gives back to the system only the free top of each arena. Under a
steady load its arenas fragment: bytes in use level off while free bytes inside the arenas
keep growing, and RSS with them (a 30-minute mixed soak: ~2 MiB/min of malloc arena growth,
with the same bytes in use). So every `TRIM_SECONDS` `run` calls ``malloc_trim(0)`` in a
worker thread (it releases the GIL), which returns every whole free page of every arena to
the system (a few ms of CPU, in `trim_cpu_seconds`); on a C library without it, nothing. The
embedded server (`agora.server.embed`) leaves the collector and the C heap to its host.
"""

from __future__ import annotations

import ctypes
import gc
import time
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

#: Net allocations of tracked objects that make the count collect before the next tick:
#: bounds what one collection scans.
YOUNG = 20_000
#: Young collections between two middle-generation collections (nothing left to scan there).
MIDDLE = 10
#: Middle collections between two full collections (nothing left to scan there either).
OLD = 10
#: Seconds between two freezes of what is young (the net count alone may never collect it).
TICK_SECONDS = 0.1
#: Every this many ticks, one collects the young generation instead: a sample of whether the
#: server is making cyclic garbage.
SAMPLE_TICKS = 50
#: Ticks that collect after a collection found cyclic garbage (renewed while they find more).
COLLECT_TICKS = 50
#: Seconds between two thaws: the frozen heap collected whole, so cycles that died frozen
#: are freed (bounds what the freezing can keep alive to what dies in this many seconds).
THAW_SECONDS = 600.0
#: Seconds between two trims of the C heap (free pages of malloc's arenas given back).
TRIM_SECONDS = 60.0

_installed: HeapKeeper | None = None


def installed() -> HeapKeeper | None:
    """The keeper installed in this process (`agora serve` installs one), None if none is:
    an embedding host runs the collector its own way."""
    return _installed


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapKeeper:
    """Installs the policy (`install`: every collection's survivors frozen as it ends),
    freezes or collects the young generation every `TICK_SECONDS`, thaws the frozen heap
    every `THAW_SECONDS` and trims the C heap every `TRIM_SECONDS` (`run`)."""

    def __init__(self) -> None:
        self.collections = 0  # every generation (each followed by a freeze)
        self.freezes = 0  # ticks that froze the young generation unscanned
        self.garbage = 0  # objects the collections found dead in reference cycles
        self.ticks = 0
        self._collect_until = 0  # ticks before this one collect: garbage was found
        self.thaws = 0
        self.trims = 0
        self.trim_cpu_seconds = 0.0
        self._malloc_trim = _malloc_trim()
        self._thawing = False
        self._before: tuple[int, int, int] = gc.get_threshold()
        #: Objects frozen as counted at `install` or the last `thaw` (see `counters`).
        self.frozen_counted = 0

    def install(self) -> None:
        """Collect and freeze the heap as it is now; set the thresholds; watch collections.

        Raises:
            RuntimeError: another keeper is installed (one policy per process).
        """
        global _installed
        if _installed is not None:
            raise RuntimeError("a HeapKeeper is already installed in this process")
        gc.collect()
        gc.freeze()
        self.frozen_counted = gc.get_freeze_count()  # a walk, beside the collection's
        self._before = gc.get_threshold()
        gc.set_threshold(YOUNG, MIDDLE, OLD)
        gc.callbacks.append(self._collected)
        _installed = self

    def remove(self) -> None:
        """Undo `install` (the frozen objects are given back to the collector)."""
        global _installed
        if _installed is self:
            gc.callbacks.remove(self._collected)
            gc.set_threshold(*self._before)
            gc.unfreeze()
            _installed = None

    def counters(self) -> dict[str, float]:
        """What the policy did since `install` (``/healthz`` "collector"): collections of
        any kind, ticks that froze unscanned, objects found dead in reference cycles (above
        0: something in the process makes them), thaws, trims of the C heap and their CPU,
        and the objects frozen as counted at the last thaw (or at `install`).

        Counting the frozen objects walks the collector's list of them, a cache miss per
        object: an idle server's ``/healthz`` took 16-19 ms with 107,000 frozen, and more under
        load, a stall of the event loop for every monitor's probe. So they are counted only
        where the whole heap is walked anyway, at `install` and at each `thaw`; the ticks'
        freezes since are not in the figure.
        """
        return {
            "collections": self.collections,
            "freezes": self.freezes,
            "garbage_found": self.garbage,
            "thaws": self.thaws,
            "trims": self.trims,
            "trim_cpu_seconds": round(self.trim_cpu_seconds, 6),
            "frozen_objects": self.frozen_counted,
        }

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        # Runs in the collector's "stop" callback, once the collection is over (its lists
        # are settled: `gc.freeze` only moves them whole), in whichever thread allocated.
        if phase == "stop" and not self._thawing:
            self.collections += 1
            if info["collected"]:
                self.garbage += info["collected"]
                self._collect_until = self.ticks + 1 + COLLECT_TICKS
            gc.freeze()

    def thaw(self) -> int:
        """Give the frozen heap back to the collector, collect everything once and freeze the
        survivors again; returns the number of unreachable objects found."""
        self._thawing = True  # one freeze, after the whole heap is collected
        try:
            gc.unfreeze()
            found = gc.collect()
        finally:
            self._thawing = False
        gc.freeze()
        self.frozen_counted = gc.get_freeze_count()  # a walk, beside the collection's
        self.thaws += 1
        return found

    def trim(self) -> bool:
        """Give the free pages of every malloc arena back to the system; False (nothing
        done) where the C library cannot. Thread-safe: `run` calls it in a worker thread."""
        if self._malloc_trim is None:
            return False
        started = time.thread_time()
        self._malloc_trim(0)
        self.trim_cpu_seconds += time.thread_time() - started
        self.trims += 1
        return True

    async def run(self) -> None:
        """Every `TICK_SECONDS` freeze the young generation, or collect it (every
        `SAMPLE_TICKS`-th tick, and every tick for `COLLECT_TICKS` after garbage was found);
        `thaw` every `THAW_SECONDS` and `trim` every `TRIM_SECONDS` (in a worker thread),
        forever."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._trim_every, TRIM_SECONDS)
            thaw_at = trio.current_time() + THAW_SECONDS
            while True:
                await trio.sleep(TICK_SECONDS)
                self.ticks += 1
                if trio.current_time() >= thaw_at:
                    thaw_at = trio.current_time() + THAW_SECONDS
                    self.thaw()
                elif self.ticks < self._collect_until or self.ticks % SAMPLE_TICKS == 0:
                    gc.collect(0)
                else:
                    gc.freeze()
                    self.freezes += 1

    async def _trim_every(self, seconds: float) -> None:
        if self._malloc_trim is None:
            return
        while True:
            await trio.sleep(seconds)
            await trio.to_thread.run_sync(self.trim)
