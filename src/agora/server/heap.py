"""How ``agora serve`` runs Python's cyclic garbage collector: short pauses at any heap size.

A call's objects die by reference counting; what the cyclic collector mostly does is rescan
the long-lived heap (modules, contracts, every connection's state). With the default
thresholds that cost ~4 s of a ~10 s WebSocket bench run, and a server holding 100,000
parked agents has ~8 million tracked objects: a full collection, which CPython runs each
time the old generation has grown by a quarter, then pauses the whole server for seconds
(1.7 s for one middle-generation collection at 18,500 agents on a busy machine).

So: the start-up heap is frozen (`gc.freeze`: never scanned again); the young generation is
collected every `YOUNG` net allocations, the middle one every `MIDDLE` young collections (a
bounded pause: it scans at most ``YOUNG * MIDDLE`` objects) and the old one every `OLD`
middle collections; and after each middle or full collection `HeapKeeper.run` freezes its
survivors (within `CHECK_SECONDS`), so the old generation holds only what survived since
and no collection scans the long-lived heap again. No pause grows with the heap.

The price: an object frozen while alive that later dies inside a reference cycle is not
freed while it stays frozen. Trio and agora free connections and calls by reference counting
(``bench parked`` prints the cyclic garbage its closed agents left: under one object each),
so little piles up, but a server that runs for weeks must not keep even that: every
`THAW_SECONDS` `run` gives the frozen heap back to the collector, collects it whole once (the
one pause that grows with the heap, a fraction of a second at 20,000 parked agents) and
freezes what is still alive. Nothing else here; the embedded server (`agora.server.embed`)
leaves the collector to its host.
"""

from __future__ import annotations

import gc
from typing import Any

import trio

#: Net allocations of tracked objects between two young-generation collections.
YOUNG = 50_000
#: Young collections between two middle-generation collections.
MIDDLE = 4
#: Middle collections between two full collections.
OLD = 2
#: Seconds between two looks for a finished full collection to freeze.
CHECK_SECONDS = 1.0
#: Seconds between two thaws: the frozen heap collected whole, so cycles that died frozen
#: are freed (bounds what the freezing can keep alive to what dies in this many seconds).
THAW_SECONDS = 600.0


class HeapKeeper:
    """Installs the policy (`install`), freezes after middle and full collections (`run`)."""

    def __init__(self) -> None:
        self.collections = 0  # middle or full
        self.freezes = 0
        self.thaws = 0
        self._pending = False
        self._installed = False
        self._before: tuple[int, int, int] = gc.get_threshold()

    def install(self) -> None:
        """Collect and freeze the heap as it is now; set the thresholds; watch collections."""
        gc.collect()
        gc.freeze()
        self._before = gc.get_threshold()
        gc.set_threshold(YOUNG, MIDDLE, OLD)
        gc.callbacks.append(self._collected)
        self._installed = True

    def remove(self) -> None:
        """Undo `install` (the frozen objects are given back to the collector)."""
        if self._installed:
            gc.callbacks.remove(self._collected)
            gc.set_threshold(*self._before)
            gc.unfreeze()
            self._installed = False

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        # Runs inside the collector: only take note (freezing waits for `run`).
        if phase == "stop" and info["generation"] >= 1:
            self.collections += 1
            self._pending = True

    def freeze_if_collected(self) -> bool:
        """Freeze what survived the last middle or full collection, if one ran since the
        last call."""
        if not self._pending:
            return False
        self._pending = False
        gc.freeze()
        self.freezes += 1
        return True

    def thaw(self) -> int:
        """Give the frozen heap back to the collector, collect everything once and freeze the
        survivors again; returns the number of unreachable objects found."""
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self._pending = False
        self.thaws += 1
        return found

    async def run(self) -> None:
        """Freeze the survivors of each middle or full collection, within `CHECK_SECONDS`,
        and `thaw` every `THAW_SECONDS`; forever."""
        since_thaw = 0.0
        while True:
            await trio.sleep(CHECK_SECONDS)
            since_thaw += CHECK_SECONDS
            if since_thaw >= THAW_SECONDS:
                since_thaw = 0.0
                self.thaw()
            else:
                self.freeze_if_collected()
