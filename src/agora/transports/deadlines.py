"""Read deadlines of HTTP connections, kept by one task per listener (a coarse idle sweeper).

A connection waiting for its peer's bytes (the next request on a kept-alive connection,
the rest of a head, a body) has a deadline; past it the connection ends. A Trio cancel
scope whose deadline is set for each wait and reset after it costs two updates of the run
loop's deadline heap per request, several percent of a whole call; here a wait only writes
a float (`Timed.deadline`), and one task expires the connections whose deadline has
passed, then sleeps until the earliest deadline left, but at least ``period`` seconds: a
deadline is enforced at most ``period`` late, never early. A wait that must end before the
task next wakes says so (`Sweeper.due`; rare: later waits end later); only then is the
task's own deadline moved. The task runs while there are connections to watch and stops
with the last one. What expiring means belongs to the connection (`Timed.expire`);
nothing here does I/O.
"""

from __future__ import annotations

import logging
import math
from typing import Protocol

import trio

log = logging.getLogger(__name__)

#: Fewest seconds between two sweeps: the most a deadline can be overrun.
PERIOD = 0.25


class Timed(Protocol):
    """A connection the sweeper watches."""

    #: When the current wait for the peer must end (``math.inf``: not waiting).
    deadline: float

    def expire(self) -> None:
        """The deadline has passed: end the wait (and so the connection)."""
        ...


class Sweeper:
    """The watched connections and the one task that expires the late ones.

    Args:
        nursery: Where the task runs; it starts with the first connection.
        period: Fewest seconds between two sweeps.
    """

    def __init__(self, nursery: trio.Nursery, period: float = PERIOD) -> None:
        self.period = period
        self._nursery = nursery
        self._watched: dict[Timed, None] = {}
        self._running = False
        #: When the task next sweeps (inf: once a connection says it is `due`).
        self.wake_at = math.inf
        self._sleep = trio.CancelScope()

    def due(self, deadline: float) -> None:
        """A watched connection now waits until ``deadline``: sweep by then.

        Callers skip the call when ``deadline`` is not before `wake_at` (the common case).
        """
        if deadline < self.wake_at:
            self.wake_at = deadline
            self._sleep.deadline = deadline

    def __len__(self) -> int:
        return len(self._watched)

    def add(self, conn: Timed) -> None:
        """Watch ``conn`` until `discard`."""
        self._watched[conn] = None
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._run)

    def discard(self, conn: Timed) -> None:
        """Stop watching ``conn`` (a no-op if it is not watched)."""
        self._watched.pop(conn, None)
        if not self._watched:
            self._sleep.cancel()  # the task ends

    def sweep(self, now: float) -> float:
        """Expire every watched connection whose deadline is ``now`` or earlier (it is
        watched no more); the earliest deadline left (``math.inf`` if none)."""
        late = []
        earliest = math.inf
        for conn in self._watched:
            if conn.deadline <= now:
                late.append(conn)
            elif conn.deadline < earliest:
                earliest = conn.deadline
        for conn in late:
            del self._watched[conn]
            conn.deadline = math.inf
            try:
                conn.expire()
            except Exception:  # a bug in one connection must not stop the sweeps of all
                log.exception("expiring a connection failed")
        return earliest

    async def _run(self) -> None:
        try:
            while self._watched:
                with trio.CancelScope(deadline=self.wake_at) as self._sleep:
                    await trio.sleep_forever()
                now = trio.current_time()
                self.wake_at = max(self.sweep(now), now + self.period)
        finally:
            self._running = False
            self.wake_at = math.inf
