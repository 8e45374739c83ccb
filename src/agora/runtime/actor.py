"""The actor loop: one Trio task that owns one entity and handles its commands in order.

Commands arrive on a bounded memory channel. For each: run the entity's pure `handle`,
commit its writes, then release the reply and, if the entity changed, wake long-poll
waiters. A failure in `handle` or in the commit answers that one caller with an internal
error and reloads the entity from the store, so no half-applied change outlives it.

One command runs at a time, holding the actor's turn (a FIFO lock). When the actor is free
(entity loaded, nothing queued, nothing running), the caller runs its command in its own
task under the turn (`Actor.run_inline`) instead of posting it and waiting for the actor's
task to wake: same order, same rules, two trips through the scheduler fewer. Whatever
arrives meanwhile goes through the mailbox as usual, and the commands found waiting there
when the turn comes back run together under one commit (`Actor._handle_group`): a busy
entity pays one commit wait per group, not one per command. The mailbox and the task are
made only by the first command that has to queue: an actor whose commands all run inline (a
chamber attempt just entered by a burst of agents, say) never has either.

How a command becomes a committed change (alone, as a group, or under the version guard)
is `agora.runtime.handling`'s, a base class of `Actor`; the names it defines are importable
from here as before.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import trio

from agora.errors import ActorStopped
from agora.logsafe import loggable
from agora.runtime.failures import InternalError, commit_failed
from agora.runtime.guarding import GuardCounts, stamp
from agora.runtime.handling import Handling
from agora.runtime.park import Parked, Slot, Turn
from agora.runtime.polls import fold

if TYPE_CHECKING:
    from collections.abc import Collection

    from agora.runtime.clock import Now
    from agora.runtime.entity import Effects, Entity, EntityKind
    from agora.runtime.registry import Runtime

__all__ = [
    "MAX_GROUP",
    "SIGNAL_LOG",
    "Actor",
    "GuardCounts",
    "InternalError",
    "Slot",
    "commit_failed",
]

log = logging.getLogger(__name__)

#: Most queued commands an actor runs under one commit (see `Actor._handle_group`).
MAX_GROUP = 32
#: Recent signals an actor remembers for keyed long-polls (`Actor.concerns`).
SIGNAL_LOG = 64


class Actor(Handling):
    """One entity's task, mailbox and change signal.

    Attributes:
        change: Set (then replaced) after every committed command that changed the entity.
        waiters: Long-polls parked on `change`; an actor with waiters is never evicted.
        listeners: What parked polls wait on (`park.Sleeper`, or any object with
            ``set()``), set along with `change` (see `signal`).
        idle_since: When it began waiting for its next command (None while handling one).
    """

    def __init__(self, runtime: Runtime, kind: EntityKind, key: str, mailbox: int) -> None:
        self.runtime = runtime
        self.kind = kind
        self.key = key
        # The mailbox and the task that reads it are made by the first command that must
        # queue (`mailbox`): an actor whose commands all run inline never has either.
        self._size = mailbox
        self._send: trio.MemorySendChannel[tuple[Any, Slot]] | None = None
        self._recv: trio.MemoryReceiveChannel[tuple[Any, Slot]] | None = None
        self._closed = False
        self._change: trio.Event | None = None  # `change`, made on first use
        # `listeners`, made by the first poll that parks here: most actors never have one.
        self._listeners: set[Any] | None = None
        #: The `Runtime.poll`s parked here, oldest first (also among `listeners`): the
        #: change that wakes one may answer it in its own turn (`agora.runtime.polls`).
        self.parked: dict[Parked, None] = {}
        #: Signals so far; the last `SIGNAL_LOG` with the keys they concerned (`concerns`).
        self.epoch = 0
        self._signals: deque[tuple[int, frozenset[str] | None]] = deque(maxlen=SIGNAL_LOG)
        self.waiters = 0
        self.handled = 0
        # Idle from the start: an actor nobody uses is evicted like one whose task waits.
        self.idle_since: float | None = trio.current_time()
        self.queued = 0
        self._turn = Turn()
        self._idle_before_turn: float | None = None
        self._stopping = False
        self._entity: Entity | None = None
        self._now: Now | None = None  # the clock reading `can_run_inline` made the entity at
        #: The store's version of the entity this copy was loaded at (guarded stores only).
        self.version = 0
        self.confirmed = 0
        self.missing = False
        #: A caller left it `vacant` but busy: its task drops it once idle (`Registry.settle`).
        self.settle_later = False

    @property
    def listeners(self) -> set[Any]:
        """What parked polls wait on (trio.Event or park.Sleeper: each has ``set()``)."""
        listeners = self._listeners
        if listeners is None:
            listeners = self._listeners = set()
        return listeners

    @property
    def change(self) -> trio.Event:
        """Set (then replaced) by the next change; made on first use."""
        change = self._change
        if change is None:
            change = self._change = trio.Event()
        return change

    def mailbox(self) -> trio.MemorySendChannel[tuple[Any, Slot]]:
        """Where commands queue; the first call opens it and starts the actor's task.

        Raises:
            trio.ClosedResourceError: the actor has stopped (evicted, or broken): a caller
                gets a fresh actor from the registry.
            ActorStopped: the runtime's nursery has closed, so no actor task can start.
        """
        if self._send is None:
            if self._closed:
                raise trio.ClosedResourceError(f"{self.kind.kind} {self.key} has stopped")
            self._send, self._recv = trio.open_memory_channel[tuple[Any, Slot]](self._size)
            self.runtime.registry.start(self)
        return self._send

    @property
    def send(self) -> trio.MemorySendChannel[tuple[Any, Slot]]:
        """The mailbox (see `mailbox`)."""
        return self.mailbox()

    def close(self) -> None:
        """Take no more commands: close the mailbox; its task, if any, ends once it is empty."""
        self._closed = True
        if self._send is not None:
            self._send.close()

    async def run(self) -> None:
        """Serve commands until the registry evicts it (closing its mailbox), or cancelled."""
        group: list[tuple[Any, Slot]] = []
        recv = self._recv
        assert recv is not None  # `mailbox` opens it before starting this task
        try:
            while True:
                self._idle()
                try:
                    first = await recv.receive()
                except trio.EndOfChannel:  # evicted: the mailbox was closed, and is empty
                    return
                self.idle_since = None
                group = [first]
                turn = self._turn
                if turn.locked():  # a command is running inline: it finishes first
                    await turn.acquire()
                else:
                    turn.acquire_nowait()
                try:
                    self._gather(group)
                    self.queued -= len(group)
                    if self._stopping:  # an inline command broke it: a fresh actor runs these
                        for _, slot in group:
                            slot.fail(ActorStopped(f"{self.kind.kind} {self.key} stopped"))
                    elif len(group) == 1:
                        await self._handle(*group[0])
                    else:  # unguarded: `_gather` took nothing on a guarded store
                        await self._handle_group(group)
                finally:
                    turn.release()
                group = []
        except Exception:
            # The actor itself broke (not the entity's `handle`): the commands in hand may be
            # half done, so their callers get an internal error rather than a retry.
            for _, slot in group:
                if not slot.finished:
                    slot.fail(InternalError(f"internal error in {self.kind.kind}"))
            raise
        finally:
            self.runtime.registry.forget(self)
            stopped = ActorStopped(f"{self.kind.kind} {self.key} stopped")
            for _, slot in group:
                if not slot.finished:
                    slot.fail(stopped)  # cancelled before its write: safe to retry elsewhere
            # Drain before closing: closing the receive side discards whatever is buffered,
            # and those callers would wait forever.
            self._fail_queued(stopped)
            recv.close()
            self.signal(replace=False)

    def _idle(self) -> None:
        """Wait for commands from now; if a caller left while this was busy, drop the actor
        should it hold nothing (`Registry.settle`: set again if it is still busy)."""
        self.idle_since = trio.current_time()
        if self.settle_later:
            self.settle_later = False
            self.runtime.registry.settle(self)

    def _gather(self, group: list[tuple[Any, Slot]]) -> None:
        """Add to ``group`` the commands already waiting in the mailbox (unguarded stores).

        They queued while the previous command committed; run together they share one
        commit (see `_handle_group`) instead of waiting for one commit each.
        """
        if self.runtime.store.guarded:
            return
        recv = self._recv
        assert recv is not None  # only the actor's task gathers
        while len(group) < MAX_GROUP:
            try:
                group.append(recv.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return

    def log_crash(self) -> None:
        """Log the exception being handled as this actor's crash (with its traceback)."""
        log.exception(
            "actor %s %s crashed; it restarts from the store on next use",
            self.kind.kind,
            loggable(self.key),
        )

    def can_run_inline(self) -> bool:
        """Whether a caller may run its command now, in its own task (see `run_inline`).

        A free actor whose entity is not loaded asks its kind's ``create`` first (on a
        guarded store only a kind whose new keys are new everywhere: `Handling._created`):
        an entity the kind knows to be new needs no load, so its first command runs inline
        too instead of going through the mailbox.
        """
        if self.queued or self._turn.locked() or self._stopping:
            return False
        if self._entity is None:
            now = self.runtime.clock.now()
            self._entity = self._created(now)
            if self._entity is not None:
                self._now = now  # `_handle` (next, in `run_inline`) reads it (not a guarded one)
                self.version, self.confirmed = 0, stamp()  # (guarded stores: never written)
        return self._entity is not None

    async def run_inline(self, command: Any, since: int | None = None) -> Slot:
        """Run ``command`` in the calling task, holding the actor's turn.

        Only when `can_run_inline`: the entity is loaded, nothing is queued, no command is
        running. Commands stay one at a time and in arrival order (later ones queue in the
        mailbox and the actor runs them once this turn ends), and this one skips the trip
        to the actor's task and back. With the entity loaded, `_handle` awaits only the
        commit: once submitted it cannot be interrupted, and a cancellation that lands
        before drops the entity so the next command reloads it, as on the actor's task.
        """
        self._turn.acquire_nowait()
        idle_since, self.idle_since = self.idle_since, None
        slot = Slot() if since is None else Slot(since=since)
        try:
            await self._handle(command, slot)
        except Exception:
            # A bug outside the entity's `handle`, as when the actor task crashes: log it,
            # answer with an internal error, and end this actor; commands already queued
            # get ActorStopped and retry on a fresh one, loaded from the store.
            self.log_crash()
            if not slot.finished:
                slot.fail(InternalError(f"internal error in {self.kind.kind}"))
            self._stopping = True
            self._entity = None
            self.runtime.registry.forget(self)
            self.close()
        finally:
            self._now = None
            self._turn.release()
            # Idle again if the actor's task was waiting for commands, or began to meanwhile
            # (a new actor's task starts while its first, inline, command commits).
            if idle_since is not None or self.idle_since is not None:
                self.idle_since = trio.current_time()
        return slot

    def evictable(self, idle_before: float) -> bool:
        """Waiting for commands since ``idle_before`` or earlier, with nobody parked on it."""
        return (
            self.idle_since is not None
            and self.idle_since <= idle_before
            and not self.waiters
            and not self.queued
            and not self._turn.locked()
        )

    def _fail_queued(self, error: BaseException) -> None:
        recv = self._recv
        if recv is None:
            return
        while True:
            try:
                _, slot = recv.receive_nowait()
            except (trio.WouldBlock, trio.ClosedResourceError, trio.EndOfChannel):
                return
            slot.fail(error)

    def signal(self, *, replace: bool = True, keys: Collection[str] | None = None) -> None:
        """Wake everyone parked on this actor: `change` (replaced by a fresh event unless
        ``replace`` is false, as when the actor stops or shutdown begins) and `listeners`.

        ``keys`` (None: any) says which keyed long-polls the change concerns: the others
        go back to sleep without re-running their command (see `concerns`).
        """
        self.epoch += 1
        self._signals.append((self.epoch, None if keys is None else frozenset(keys)))
        change = self._change
        if change is not None:
            change.set()
        if replace:
            self._change = None  # a fresh one when someone asks
        elif change is None:
            self._change = trio.Event()
            self._change.set()
        for listener in self._listeners or ():
            # A keyed poll the change does not concern sleeps on (see `concerns`).
            keyed = keys is not None and type(listener) is Parked and listener.key is not None
            if not keyed or listener.key in keys:  # type: ignore[operator]
                listener.set()

    def _fold(
        self,
        entity: Entity,
        effects: Effects,
        slot: Slot,
        done: list[tuple[Effects, Slot]],
        folded: list[Parked],
        pending: dict[Slot, Any],
        now: Now,
    ) -> bool:
        """Run in this turn the commands of the polls that ``effects`` wakes, into the batch
        ``done`` (`agora.runtime.polls.fold`)."""
        return fold(self, entity, effects, slot, done, folded, pending, now)

    def concerns(self, since: int, key: str) -> bool:
        """Whether a signal after epoch ``since`` may concern long-polls keyed ``key``.

        True when unsure: ``since`` unknown (-1) or older than the signals remembered.
        """
        signals = self._signals
        if since < 0 or not signals or signals[0][0] > since + 1:
            return since < self.epoch
        for epoch, keys in reversed(signals):
            if epoch <= since:
                return False
            if keys is None or key in keys:
                return True
        return False

    # -- turns held from outside, for operations over several actors (runtime.multi) ----------

    async def acquire_turn(self) -> bool:
        """Take this actor's turn; False (turn not held) if the actor stopped meanwhile."""
        await self._turn.acquire()
        if self._stopping or self.runtime.registry.current(self.kind, self.key) is not self:
            self._turn.release()
            return False
        self.idle_since, self._idle_before_turn = None, self.idle_since
        return True

    def release_turn(self) -> None:
        """Give back a turn taken with `acquire_turn`."""
        if self._idle_before_turn is not None:
            self.idle_since = trio.current_time()
        self._turn.release()

    def forget_entity(self) -> None:
        """Drop the in-memory entity: the next command reloads it from the store."""
        self._entity = None

    def changed_elsewhere(self, version: int) -> bool:
        """Another node committed ``version`` of this entity: drop an older copy, wake waiters.

        Returns:
            Whether this node's copy was older (and so dropped).
        """
        if version <= self.version:
            return False
        self._entity = None
        self.signal()
        return True

    def committed(self, changed: bool) -> None:
        """Count a command committed from outside the actor's loop; wake waiters if changed."""
        self.handled += 1
        if changed:
            self.signal()
