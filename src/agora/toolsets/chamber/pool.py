"""A pool of pre-built, server-seeded rooms per suite, so entering costs no generation.

Building a room is pure CPU (about 3 ms, now and then much more). An entry that lets the
server draw the seed takes a `Ready` room from its suite's pool instead: no thread hop, no
lock, no generation on the path of the call. Everything else an entry would draw, hash or
read of its room comes with it, made in the same worker thread: the attempt handle, the
seed's salt, the transcript's genesis head and the room's part of the entry reply (each
random value is drawn for one room and used once), so a pooled entry makes no system call
for randomness (one that releases the GIL to the store's writer thread in the middle of a
burst), hashes nothing and does not walk the room.

`RoomPool.refill` is a background task that tops each suite's pool up to ``room_pool_size``
rooms (``[options.chamber]``, default `DEFAULT_SIZE`; 0 turns the pool off), building one room
per worker-thread call (``trio.to_thread``) so the event loop keeps serving between rooms, and
sleeps until an entry takes one. Entries with a participant's seed, and entries that find the
pool empty, build their room as before.

Each room is a few hundred container objects, so a refill leaves tens of thousands of young
objects behind. `agora serve` freezes them unscanned at its next tick (`agora.server.heap`),
but under an embedding host's collector the burst that follows would pay for the next pass
over them (10-30 ms, and over 100 ms on a busy machine, in the middle of 500 entries). So once
the pool is full the refill runs that young-generation pass itself, while the server is quiet:
the same work, done before the burst instead of inside it.
"""

from __future__ import annotations

import gc
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.runtime.background import node_local
from agora.toolsets.chamber.attempt import seed_commitment
from agora.toolsets.chamber.generate import build_room
from agora.toolsets.chamber.opening import Opening, opening
from agora.toolsets.chamber.transcript import genesis
from agora.toolsets.options import bounded

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.runtime.registry import Runtime
    from agora.toolsets.chamber.room import Room

#: Rooms kept ready per suite (about 40 KiB each, 3 ms of CPU to build). A server expecting
#: N agents to enter at once should keep N (``room_pool_size``); the default keeps start-up
#: cheap for small servers and test runs.
DEFAULT_SIZE: Final = 128
#: After a room is taken, refilling waits until no entry came for this long.
QUIET_SECONDS: Final = 0.25


@dataclass(frozen=True, slots=True)
class Ready:
    """One pooled entry: a fresh handle, a server seed, its salt, the genesis head, the room.

    Attributes:
        handle: The attempt handle the entry will have (``chl-`` and 64 random bits).
        seed: The server-drawn seed (64 random bits, hex).
        salt: The seed commitment's salt (128 random bits, hex).
        head: ``genesis(seed_commitment(salt, suite, seed))``: the transcript's first head.
        room: ``build_room(suite, engine, seed)``.
        opening: The room's part of the entry reply (`attempt.opening`).
    """

    handle: str
    seed: str
    salt: str
    head: str
    room: Room
    opening: Opening


def fresh_room(suite_id: str, engine: str) -> Ready:
    """A new pooled entry of ``suite_id``, its room built without touching `build_room`'s cache."""
    seed, salt = secrets.token_hex(8), secrets.token_hex(16)
    head = genesis(seed_commitment(salt, suite_id, seed))
    room = build_room.__wrapped__(suite_id, engine, seed)
    return Ready("chl-" + secrets.token_hex(8), seed, salt, head, room, opening(room))


def pool_size(options: dict[str, Any]) -> int:
    """``room_pool_size`` from the chamber's options; checked at start too (the chamber's
    `Toolset.options_check`), so the refill task never meets a size it cannot use.

    Raises:
        OptionsError: if it is below 0 (a `ValueError`).
    """
    return int(bounded("chamber", options, "room_pool_size", DEFAULT_SIZE, 0))


@dataclass
class RoomPool:
    """Ready rooms per suite id; `suites` lists (suite id, engine) of the active suites."""

    suites: Sequence[tuple[str, str]]
    _ready: dict[str, deque[Ready]] = field(default_factory=dict, init=False)
    _taken: trio.Event = field(default_factory=trio.Event, init=False, repr=False)
    _full: trio.Event = field(default_factory=trio.Event, init=False, repr=False)
    _size: int = field(default=0, init=False)
    _last_take: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._ready = {suite_id: deque() for suite_id, _ in self.suites}

    def take(self, suite_id: str, now: float) -> Ready | None:
        """A `Ready` entry of ``suite_id``, or None if its pool is empty.

        Args:
            suite_id: The suite entered.
            now: Trio's current time (the entry read it already: a reading costs as much
                as the rest of a take).
        """
        ready = self._ready.get(suite_id)
        if not ready:
            return None
        # Only the first take after the pool was full wakes the refill task; the later ones
        # of a burst just note the time (a wake, a fresh event and a deadline per entry were
        # a quarter of an entry's time on the event loop).
        self._last_take = now
        if not self._taken.is_set():
            self._taken.set()
        if self._full.is_set():
            self._full = trio.Event()
        return ready.popleft()

    def status(self) -> dict[str, dict[str, int]]:
        """Per suite: rooms ready now and the target size."""
        return {s: {"ready": len(q), "size": self._size} for s, q in self._ready.items()}

    @node_local  # each node's pool is in its own memory: every node fills its own
    async def refill(self, runtime: Runtime) -> None:
        """Keep every suite's pool full (runs until cancelled)."""
        while True:
            self._size = pool_size(runtime.options("chamber"))
            built = False
            for suite_id, engine in self.suites:
                queue = self._ready[suite_id]
                if len(queue) < self._size:
                    queue.append(await trio.to_thread.run_sync(fresh_room, suite_id, engine))
                    built = True
            if not built:
                gc.collect(0)  # the young rooms' pass of the collector, now rather than mid-burst
                self._taken = trio.Event()
                self._full.set()
                await self._taken.wait()
                # Entries come in bursts: let a burst pass (no take for QUIET_SECONDS) before
                # competing for the CPU.
                await self._quiet()

    async def _quiet(self) -> None:
        """Return once no entry took a room for `QUIET_SECONDS`."""
        while True:
            quiet = self._last_take + QUIET_SECONDS - trio.current_time()
            if quiet <= 0:
                return
            await trio.sleep(quiet)

    async def wait_full(self) -> None:
        """Return once every suite's pool is full (an entry may empty it again right away)."""
        await self._full.wait()
