"""WebSocket keepalive for every connection from one task: a ping each interval, two missed
pongs close the peer.

A task per connection that sleeps between pings costs a parked WebSocket agent about a
fifth of its memory (the task, its coroutine frames, the sleep's cancel scope); here the
peers sit in `SLOTS` buckets and one task visits a bucket every ``interval / SLOTS``
seconds, so each peer is pinged once per interval and the work is spread over it. A new
peer joins the bucket visited last, so its first ping comes one interval after it joined.

A visit never waits on a peer: the ping is written if the socket takes it at once, else it
still counts as sent (a peer whose socket is full is not reading, and misses its pong); a
peer whose sender is busy is skipped this round (the sender's own send timeout watches it).
What to send and how a peer is judged belong to the peer (`Pinged`); this module only keeps
time. Nothing here knows about frames or sessions.
"""

from __future__ import annotations

import logging
from typing import Protocol

import trio

log = logging.getLogger(__name__)

#: Buckets of peers: one is visited every ``interval / SLOTS`` seconds.
SLOTS = 16
#: Peers visited between two checkpoints (a visit is a system call or less).
BATCH = 256


class Pinged(Protocol):
    """A peer the keepalive visits."""

    slot: int

    def keepalive_round(self) -> bool:
        """Judge the last ping and send the next one; False when the peer missed too many
        pongs and has begun to close (it is then visited no more)."""
        ...


class Keepalive:
    """The peers to ping and the one task that pings them.

    Args:
        interval: Seconds between two pings of a peer (0 or less: no keepalive).
        nursery: Where the task runs; it starts with the first peer and ends with the last.
    """

    def __init__(self, interval: float, nursery: trio.Nursery) -> None:
        self.interval = interval
        self._nursery = nursery
        self._slots: list[dict[Pinged, None]] = [{} for _ in range(SLOTS)]
        self._count = 0
        self._next = 0  # the bucket visited next
        self._running = False

    def __len__(self) -> int:
        return self._count

    def add(self, peer: Pinged) -> None:
        """Ping ``peer`` from one interval from now on, until `discard`."""
        if self.interval <= 0:
            return
        peer.slot = (self._next - 1) % SLOTS
        self._slots[peer.slot][peer] = None
        self._count += 1
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._run)

    def discard(self, peer: Pinged) -> None:
        """Stop pinging ``peer`` (a no-op if it is not here)."""
        bucket = self._slots[peer.slot]
        if peer in bucket:
            del bucket[peer]
            self._count -= 1

    async def _run(self) -> None:
        try:
            step = self.interval / SLOTS
            while self._count:
                await trio.sleep(step)
                slot = self._slots[self._next]
                self._next = (self._next + 1) % SLOTS
                await self._visit(slot)
        finally:
            self._running = False

    async def _visit(self, slot: dict[Pinged, None]) -> None:
        for n, peer in enumerate(list(slot)):
            if n and n % BATCH == 0:
                await trio.lowlevel.checkpoint()
            if peer not in slot:
                continue  # it left while others were visited
            try:
                alive = peer.keepalive_round()
            except Exception:  # a bug in one peer must not stop the pings of all
                log.exception("keepalive round failed")
                alive = False
            if not alive:
                self.discard(peer)
