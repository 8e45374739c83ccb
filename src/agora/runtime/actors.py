"""Live actors by (kind, key): spawned on demand, dropped when idle or holding nothing.

`Registry.get` makes an actor synchronously, so two callers racing on one key always meet
the same one. One reaper task evicts actors idle past the runtime's ``idle_seconds``; an
actor that holds nothing for its key (`Actor.vacant`: a lookup of a key nothing was created
under) is dropped as soon as its callers are done with it (`Registry.settle`), so made-up
keys cost no memory. Neither may drop an actor with commands queued or running, a held turn
or parked long-polls: a key's commands keep their order. `agora.runtime.registry` (the
`Runtime`) builds on it; nothing here runs commands.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

from agora.errors import ActorStopped
from agora.runtime.actor import Actor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.runtime.entity import EntityKind
    from agora.runtime.registry import Runtime

#: Shortest pause between two passes of the idle-actor reaper (seconds).
REAP_MIN_TICK = 0.05


class Registry:
    """Live actors by (kind, key)."""

    def __init__(self, runtime: Runtime, nursery: trio.Nursery) -> None:
        self._runtime = runtime
        self._nursery = nursery
        self._actors: dict[tuple[str, str], Actor] = {}
        self._reaping = False
        self.spawned = 0

    def __len__(self) -> int:
        return len(self._actors)

    def get(self, kind: EntityKind, key: str) -> Actor:
        """The live actor for (kind, key), made now if there is none. Never awaits.

        A new actor has no task yet: its commands run inline in their callers' tasks while
        it is free, and its task starts (`start`) when a command first has to queue.

        Raises:
            ActorStopped: if the runtime's nursery is cancelled or closed, so no actor task
                could run.
        """
        actor = self._actors.get((kind.kind, key))
        if actor is None:
            if self._nursery.cancel_scope.cancel_called:
                raise ActorStopped(f"{kind.kind} {key}: the runtime has stopped")
            rt = self._runtime
            actor = Actor(rt, kind, key, rt.mailbox)
            self._actors[(kind.kind, key)] = actor
            self.spawned += 1
            if not self._reaping:
                self._reaping = True
                self._nursery.start_soon(self._reap, name="actor reaper")
        return actor

    def start(self, actor: Actor) -> None:
        """Start ``actor``'s task (its mailbox is open).

        Raises:
            ActorStopped: the runtime's nursery has closed; the actor is dropped and closed.
        """
        try:
            self._nursery.start_soon(self._supervise, actor, name=f"{actor.kind.kind}:{actor.key}")
        except RuntimeError as exc:  # the nursery closed: a queued command would wait forever
            self.forget(actor)
            actor.close()
            raise ActorStopped(f"{actor.kind.kind} {actor.key}: the runtime has stopped") from exc

    async def _supervise(self, actor: Actor) -> None:
        # The one place an unexpected exception from an actor is caught: it ends that actor
        # (its callers get ActorStopped and retry on a fresh one, loaded from the store),
        # never the server.
        try:
            await actor.run()
        except Exception:
            actor.log_crash()

    async def _reap(self) -> None:
        # One task evicts every idle actor, so an actor's wait for its next command needs no
        # timer of its own. It runs while there are actors, checking every eighth of the
        # idle period: an actor leaves between idle_seconds and 1.125 x that after its last
        # command. Closing the mailbox ends the actor's loop; a caller that meets the
        # closed mailbox spawns a fresh actor.
        runtime = self._runtime
        tick = max(runtime.idle_seconds / 8, REAP_MIN_TICK)
        try:
            while self._actors:
                await trio.sleep(tick)
                if runtime.closing:
                    continue
                idle_before = trio.current_time() - runtime.idle_seconds
                for actor in [a for a in self._actors.values() if a.evictable(idle_before)]:
                    self._drop(actor)
        finally:
            self._reaping = False

    def holds(self, kind: EntityKind, key: str) -> bool:
        """Whether (kind, key)'s entity is in memory now, so a command on it reads no rows."""
        actor = self._actors.get((kind.kind, key))
        return actor is not None and actor.in_memory

    def settle(self, actor: Actor) -> None:
        """Drop ``actor`` now if it is idle and holds nothing (`Actor.vacant`).

        Called when a caller is done with an actor (`Runtime.call`, the end of a long-poll,
        an atomic operation). A lookup of a key nothing was created under (a made-up table
        name or handle) would otherwise keep its actor for ``idle_seconds``: memory any
        client could pile up without limit. An actor with queued commands, a running one,
        a held turn or parked long-polls is kept, so a key's commands still run one at a
        time in arrival order; the next command on the key loads it afresh.
        """
        if actor.waiters:
            return
        if not actor.evictable(math.inf):
            # Busy (a command queued or running, say one whose caller was cancelled, or
            # the load that will tell): its task settles it again once idle.
            actor.settle_later = True
        elif actor.vacant() and self._actors.get((actor.kind.kind, actor.key)) is actor:
            self._drop(actor)

    def settle_keys(self, kind: EntityKind, keys: Iterable[str]) -> None:
        """`settle` the live actors of ``keys`` (those a long-poll used; it may have met
        several actors of one key, so it asks the registry which one is live now)."""
        for key in keys:
            actor = self._actors.get((kind.kind, key))
            if actor is not None:
                self.settle(actor)

    def _drop(self, actor: Actor) -> None:
        # Closing the mailbox ends the actor's task, if it has one. The signal tells whoever
        # still holds the actor without being counted on it (a poll whose reply is in but
        # that has not parked yet) that it changed: it runs its command again, on a fresh
        # actor, instead of parking where no change will ever be signalled.
        self.forget(actor)
        actor.close()
        actor.signal(replace=False)

    def current(self, kind: EntityKind, key: str) -> Actor | None:
        """The live actor for (kind, key), or None; never spawns."""
        return self._actors.get((kind.kind, key))

    def named(self, kind: str, key: str) -> Actor | None:
        """The live actor for the kind named ``kind`` and ``key``, or None; never spawns."""
        return self._actors.get((kind, key))

    def actors(self) -> list[Actor]:
        """Every live actor (a copy of the list)."""
        return list(self._actors.values())

    def parked(self) -> int:
        """Long-polls parked on live actors (one `poll_many` counts once per key it waits on)."""
        return sum(actor.waiters for actor in self._actors.values())

    def forget(self, actor: Actor) -> None:
        """Drop ``actor`` if it is still the registered one for its key."""
        if self._actors.get((actor.kind.kind, actor.key)) is actor:
            del self._actors[(actor.kind.kind, actor.key)]

    def wake_all(self) -> None:
        """Set every actor's change signal (used at shutdown)."""
        for actor in list(self._actors.values()):
            actor.signal(replace=False)
