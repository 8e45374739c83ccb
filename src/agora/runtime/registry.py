"""The runtime: actors spawned on demand by (kind, key), the store, the clock, and long-poll.

`Runtime.call` finds or spawns the actor for a key (synchronously, so two callers racing on
one key always meet the same actor), posts the command and waits for its reply. `poll` waits
for changes outside the actor, so thousands of parked waiters cost the actor nothing.
Shutdown wakes every waiter so long-polls answer cleanly instead of being cut off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import trio

from agora.errors import ActorStopped
from agora.runtime import multi, polls
from agora.runtime.actor import GuardCounts, Slot
from agora.runtime.actors import Registry
from agora.runtime.clock import Clock
from agora.runtime.follow import Follower, follow
from agora.runtime.guarding import stamp
from agora.runtime.park import Timers, Waiting
from agora.runtime.polls import PollCounts
from agora.runtime.resources import ResourceHub

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping, Sequence

    from agora.runtime.actor import Actor
    from agora.runtime.entity import EntityKind, Write
    from agora.store.db import Store
    from agora.store.neutral import ReadConn

T = TypeVar("T")


class Runtime:
    """What toolsets use: actors, store, clock, options. See docs/toolset-api.md.

    Attributes:
        closing: True once shutdown began; long-polls return their latest reply.
    """

    def __init__(
        self,
        store: Store,
        nursery: trio.Nursery,
        *,
        clock: Clock | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        public_url: str = "",
        idle_seconds: float = 300.0,
        mailbox: int = 64,
    ) -> None:
        self.store = store
        self.clock = clock or Clock()
        self.public_url = public_url
        self.idle_seconds = idle_seconds
        self.mailbox = mailbox
        self.closing = False
        self._options = options or {}
        self.registry = Registry(self, nursery)
        #: The deadlines of parked long-polls (one timer task for them all).
        self.timers = Timers(nursery)
        #: Resource subscriptions of every session (see `resources_updated`).
        self.resources = ResourceHub()
        #: How parked long-polls were answered (`agora.runtime.polls`).
        self.polls = PollCounts()
        #: What the version guard cost (a shared store's conflicts, stale reads, busy answers).
        self.guard = GuardCounts()
        #: Each background task's state on this node, by label (``running``, or
        #: ``standby``: a cluster-wide one whose lock another node holds), for ``/healthz``
        #: (`agora.runtime.background.supervise`).
        self.background: dict[str, str] = {}
        #: Other nodes' changes, followed on a shared store; None on SQLite (and on a store
        #: no other process can reach: an inline test store).
        self.follower: Follower | None = None
        if store.shared:
            self.follower = Follower(self)
            nursery.start_soon(follow, self, self.follower, name="agora change follower")

    def counters(self) -> dict[str, Any]:
        """The store's counters (`Store.counters`), ``polls_answered`` and ``polls_rerun``
        (`agora.runtime.polls.PollCounts`) and, on a shared store, this node's share
        of the cluster's work: ``retried``, ``stale_reads``, ``busy`` (`GuardCounts`),
        ``notes_received`` (other nodes' NOTIFYs), ``copies_dropped`` (cached entities they
        made stale), ``listener_connects`` (1 + the listener's reconnections)."""
        out = self.store.counters()
        out |= {"polls_answered": self.polls.answered, "polls_rerun": self.polls.rerun}
        follower = self.follower
        if follower is not None:
            guard = self.guard
            out |= {
                "retried": guard.retried,
                "stale_reads": guard.stale_reads,
                "busy": guard.busy,
                "notes_received": follower.notes,
                "copies_dropped": follower.dropped,
                "listener_connects": follower.connections,
            }
        return out

    def options(self, toolset: str) -> dict[str, Any]:
        """The ``[toolsets.<name>]`` table of the config file (empty if absent)."""
        return dict(self._options.get(toolset, {}))

    async def _submit(
        self,
        kind: EntityKind,
        key: str,
        command: Any,
        since: int | None = None,
        waiting: Waiting | None = None,
        busy: Actor | None = None,
    ) -> tuple[Actor, Slot]:
        """Run ``command`` on the entity: inline if its actor is free, else through its
        mailbox; returns the actor and the slot holding the outcome.

        ``busy``: the actor `call` just found unable to run it inline, in this same step
        (it checked for cancellation already): the first try posts to it directly.
        """
        actor = busy
        if actor is None:  # a caller cancelled already sends nothing
            await trio.lowlevel.checkpoint_if_cancelled()
        since = stamp() if since is None else since  # when the call began (`Slot.since`)
        for _ in range(3):
            if actor is None:
                actor = self.registry.get(kind, key)
                if actor.can_run_inline():
                    return actor, await actor.run_inline(command, since)
            slot = Slot(since=since, waiting=waiting)
            actor.queued += 1
            try:
                mailbox = actor.mailbox()
                try:  # room in the mailbox (the usual case): no extra trip through the scheduler
                    mailbox.send_nowait((command, slot))
                except trio.WouldBlock:
                    await mailbox.send((command, slot))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                actor.queued -= 1
                actor = None
                continue  # it was evicted between lookup and send: the next get() respawns
            except BaseException:
                actor.queued -= 1  # cancelled while the mailbox was full: never sent
                raise
            await slot.wait()  # posted: the actor's task has not run it yet, so this parks
            if isinstance(slot.error, ActorStopped) and not self.closing:
                actor = None
                continue  # it stopped before starting this command: a fresh actor may run it
            return actor, slot
        raise ActorStopped(f"{kind.kind} {key} is not accepting commands")

    async def call(self, kind: EntityKind, key: str, command: Any) -> Any:
        """Run ``command`` on the entity (kind, key) and return its reply.

        Raises:
            LookupError: the entity could not be loaded.
            InternalError: the entity failed on this command (nothing changed).
            ActorStopped: shutdown began before it could answer.
            Exception: whatever exception instance the entity returned as its reply.
        """
        await trio.lowlevel.checkpoint_if_cancelled()  # a caller cancelled already sends nothing
        actor = self.registry.get(kind, key)
        try:
            if actor.can_run_inline():  # `_submit`'s usual case, one coroutine fewer per call
                slot = await actor.run_inline(command, stamp())
            else:
                actor, slot = await self._submit(kind, key, command, busy=actor)
        finally:
            self.registry.settle(actor)  # a lookup that found nothing keeps no actor
        error = slot.error if slot.error is not None else slot.value
        if not isinstance(error, BaseException):
            return slot.value
        # The traceback will hold this frame: let go of the exception here (through the
        # slot and the local), else the two make a reference cycle, which the server's
        # collector policy (`agora.server.heap`) would keep frozen until its next thaw.
        slot.error = slot.value = None
        try:
            raise error
        finally:
            del error

    def holds(self, kind: EntityKind, key: str) -> bool:
        """Whether (kind, key)'s entity is in memory now: a command on it reads no rows.

        For a toolset that must answer two cases alike in time as well as in bytes (a key
        that exists but is not the caller's, and one that does not exist, whose lookup
        reads the store): asked before the call, it says whether the first case skipped
        the read the second makes.
        """
        return self.registry.holds(kind, key)

    def poll(
        self,
        kind: EntityKind,
        key: str,
        command: Any,
        *,
        ready: Callable[[Any], bool],
        timeout: float,
        wait_key: str | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """Repeat ``command`` whenever the entity changes, until ``ready(reply)`` or timeout.

        With ``wait_key``, a change whose `Effects.wakes` leave the key out does not re-run
        the command (it cannot make the reply ready): the poll sleeps on. A change that does
        concern the poll runs its command in the change's own turn and commits it in the
        same transaction (`agora.runtime.polls`): no second trip through the actor and the
        writer, and the reply is durable before the poll gets it.

        Returns:
            To await: the first ready reply, or the latest one when ``timeout`` seconds
            passed or the server began shutting down. (The coroutine of
            `agora.runtime.polls.poll` itself: a parked poll keeps no frame of this method,
            and every wake-up passes through one frame fewer.)
        """
        return polls.poll(self, kind, key, command, ready=ready, timeout=timeout, wait_key=wait_key)

    async def poll_many(
        self,
        kind: EntityKind,
        commands: Mapping[str, Any],
        *,
        ready: Callable[[dict[str, Any]], bool],
        timeout: float,  # noqa: ASYNC109 - the long-poll deadline is part of the request
    ) -> dict[str, Any]:
        """`poll` over several keys of one kind (e.g. an agent's inbox over its topics).

        Runs ``commands[key]`` on each key, then, until ``ready(replies)`` holds, waits
        (outside the actors) for any of them to change and re-runs the commands of the keys
        that changed. Same guarantees as `poll`: answers the moment a change makes it ready,
        returns the latest replies at ``timeout`` or when shutdown begins, and an actor that
        stops while parked is replaced by a fresh one, loaded from the store.

        Args:
            kind: The entities' kind.
            commands: Key -> the command to run on that key (a read, usually).
            ready: Judges all the replies at once, as a dict key -> reply.
            timeout: Seconds (Trio clock) before answering with what there is.

        Returns:
            Key -> the latest reply of each key.

        Raises:
            LookupError: an entity could not be loaded.
            InternalError: an entity failed on its command.
            ActorStopped: shutdown began before it could answer.
            Exception: whatever exception instance an entity returned as its reply.
        """
        return await multi.poll_many(self, kind, commands, ready=ready, timeout=timeout)

    async def call_atomic(self, operations: Sequence[tuple[EntityKind, str, Any]]) -> list[Any]:
        """Run one command on each of several entities as one atomic change.

        Takes the actors' turns in sorted (kind, key) order, so concurrent overlapping
        operations cannot deadlock; runs each pure `handle` with one clock reading; commits
        every write in one transaction; wakes the waiters of the changed entities; returns
        the replies in the order of ``operations``. All or nothing: if a `handle` raises or
        answers with an exception instance, or the commit fails, nothing is saved and every
        entity of the operation reloads from the store on its next command.

        Args:
            operations: ``(kind, key, command)`` triples; each (kind, key) at most once.

        Returns:
            The replies, one per operation, in the given order.

        Raises:
            ValueError: a (kind, key) appears twice.
            LookupError: an entity could not be loaded (nothing was run).
            InternalError: a `handle` failed, or the commit did (nothing changed).
            ActorStopped: an actor kept stopping before its turn could be taken.
            Exception: the first exception instance an entity answered with (nothing changed).
        """
        return await multi.call_atomic(self, operations)

    async def read(self, fn: Callable[[ReadConn], T]) -> T:
        """``fn(conn)`` on committed rows, in a worker thread (a snapshot on PostgreSQL)."""
        return await self.store.read(fn)

    async def write(self, writes: list[Write]) -> None:
        """Commit statements outside any actor."""
        await self.store.write(writes)

    def resources_updated(self, *uris: str) -> None:
        """Tell subscribed sessions that ``uris`` changed; call after the change committed.

        Entities say it with `Effects.updated` instead; this is for changes made outside
        actors (`write`). Never awaits: notifications go out from each session's own task.
        """
        self.resources.updated(*uris)

    def begin_shutdown(self) -> None:
        """Make every long-poll return now, with its latest reply."""
        self.closing = True
        self.registry.wake_all()
