"""A trouble with the database that lasts a while, told in the log as it begins and ends.

A full disk, another process holding the write lock, an immutable WAL index, PostgreSQL away,
``/readyz`` refusing probes: each strikes many calls, probes or retries in a row, and one log
line per strike buried the line that said why (three lines per refused call, nine a second
from an idle node). So each is told as an `Episode`: its first strike is logged, the ones after
it are counted, and its end is one line with how long it lasted and how many it struck. The
accounts that tell them: `agora.store.diskfault.DiskDoctor`, `agora.store.lockwait.LockWaits`,
`agora.store.shm_guard.ShmGuard`, `agora.store.outage.Outage` and
`agora.server.health.Readiness`. Not thread-safe: an account used from several threads locks.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class Episode:
    """Whether a trouble is under way, since when, and how many times it struck.

    Attributes:
        since: The clock's time of the first strike of the episode under way; None if none.
        count: Strikes of the episode under way (of the last one, once it ended).
    """

    __slots__ = ("_clock", "count", "since")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        """Args: clock: its time (`time.perf_counter`; Trio's, in the Trio thread)."""
        self._clock = clock
        self.since: float | None = None
        self.count = 0

    @property
    def under_way(self) -> bool:
        """Whether an episode has begun and not ended."""
        return self.since is not None

    def strike(self, count: int = 1, ago: float = 0.0) -> bool:
        """``count`` more strikes; whether they began an episode (its first line is due).
        ``ago``: the trouble began that many seconds before the first strike was seen (a
        write that waited its deadline before it was dropped)."""
        if self.since is not None:
            self.count += count
            return False
        self.since, self.count = self._clock() - ago, count
        return True

    def told(self, noun: str) -> str:
        """The strikes as the log counts them: ``1 write``, ``3 writes``."""
        return counted(self.count, noun)

    def now(self) -> float:
        """The episode's clock now."""
        return self._clock()

    def end(self, at: float | None = None) -> float | None:
        """End the episode under way: its length in seconds up to ``at`` (the clock's time;
        None: now), its strikes staying in `count`; None if none was under way."""
        if self.since is None:
            return None
        length, self.since = (self._clock() if at is None else at) - self.since, None
        return length


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``1 write``, ``0 writes``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
