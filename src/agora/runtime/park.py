"""Parking long-polls without a cancel scope and an event per wait.

A parked long-poll (`Runtime.poll`, `poll_many`) used to sleep in ``trio.move_on_at``
around ``Event.wait``: per parked call a CancelScope with its status (two sets), a
ParkingLot and two coroutine frames. Here a poll parks its task directly
(``wait_task_rescheduled``) behind a `Sleeper` that the actors it watches hold among
their ``listeners`` (they call ``set()`` when they change), and its deadline goes into
one heap per runtime, served by one timer task that sleeps until the earliest deadline.

The outer cancel scopes still cancel a parked poll (the abort function drops it), and a
deadline fires at its exact time (the timer task's own scope deadline is moved to the
earliest one whenever an earlier one arrives), so autojump clocks stay exact.

`Turn` is an actor's one-at-a-time lock, cheap for the actor that never waits for it, and
a `Slot` is where a caller waits for its command's outcome, the caller parked without an event.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import outcome
import trio

from agora.runtime.guarding import stamp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agora.runtime.handling import Handling

__all__ = ["Parked", "Sleeper", "Slot", "Timers", "Turn", "Waiting"]

_current_task = trio.lowlevel.current_task  # looked up once: `Turn` is on every call's path


class Sleeper:
    """One parked task: woken once, by a change (`set`) or by its deadline (`expire`)."""

    __slots__ = ("deadline", "task")

    def __init__(self, task: trio.lowlevel.Task, deadline: float) -> None:
        self.task: trio.lowlevel.Task | None = task
        self.deadline = deadline

    def __lt__(self, other: Sleeper) -> bool:
        # Sleepers are the heap's entries themselves (no tuple and counter per poll).
        return self.deadline < other.deadline

    def set(self) -> None:
        """Wake the task: something it watches changed (as ``trio.Event.set``)."""
        self._wake(True)

    def abort(self, _: Any) -> trio.lowlevel.Abort:
        """The task was cancelled while parked: no wake may reach it any more."""
        self.task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def expire(self) -> None:
        """Wake the task: its deadline passed."""
        self._wake(False)

    def _wake(self, changed: bool) -> None:
        task = self.task
        if task is not None:
            self.task = None
            trio.lowlevel.reschedule(task, outcome.Value(changed))


class Parked(Sleeper):
    """A parked `Runtime.poll`: a `Sleeper` that also carries the poll's command.

    The change that wakes it may run that command in its own turn and commit its writes
    in the same transaction (`agora.runtime.polls`): it first `claim`s the poll (a `Slot`
    for the outcome), and from then on neither a change nor the deadline wakes the task;
    only `answer` does, once the outcome is in (or the claim was given up).

    Attributes:
        command: What the poll runs on the entity.
        key: The poll's ``wait_key`` (None: every change concerns it).
        since: When the poll began (`Slot.since` of its runs).
        slot: Where a claiming change leaves the command's outcome (None: not claimed).
    """

    __slots__ = ("command", "key", "since", "slot")

    def __init__(
        self, task: trio.lowlevel.Task, deadline: float, command: Any, key: str | None, since: int
    ) -> None:
        super().__init__(task, deadline)
        self.command = command
        self.key = key
        self.since = since
        self.slot: Slot | None = None

    def set(self) -> None:
        """A change: wake the task unless a change claimed it (that one answers)."""
        if self.slot is None:
            self._wake(True)

    def expire(self) -> None:
        """The deadline: wake the task unless a change claimed it (its answer is coming)."""
        if self.slot is None:
            self._wake(False)

    def claim(self) -> Slot | None:
        """Take the poll for a change running its command now; None if it is awake already
        (woken, expired or cancelled) or claimed."""
        if self.task is None or self.slot is not None:
            return None
        self.slot = Slot(since=self.since)
        return self.slot

    def answer(self) -> None:
        """Wake the task with the claim's outcome; with none (the change was cancelled
        before its commit) the claim is given up and the poll re-runs its command itself."""
        slot = self.slot
        if slot is not None and not slot.finished:
            self.slot = None
        self._wake(True)


class Waiting:
    """A `Runtime.poll`'s command as submitted: if its reply is not ``ready``, the poll will
    wait, so a later command of the same group that concerns ``key`` runs ``command`` again
    for it (`agora.runtime.polls.fold`) instead of the poll parking only to re-run it."""

    __slots__ = ("command", "key", "ready")

    def __init__(self, command: Any, key: str | None, ready: Callable[[Any], bool]) -> None:
        self.command = command
        self.key = key
        self.ready = ready

    def waits(self, reply: Any) -> bool:
        """Whether the poll will wait after ``reply`` (an error or a ``ready`` that raises
        goes back to the poll, which raises it)."""
        if isinstance(reply, BaseException):
            return False
        try:
            return not self.ready(reply)
        except Exception:
            return False


class Timers:
    """The deadlines of a runtime's parked long-polls, served by one task.

    The task runs only while some poll is parked, so it never holds up a shutdown.
    """

    __slots__ = ("_heap", "_live", "_nursery", "_running", "_scope")

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._heap: list[Sleeper] = []
        self._live = 0  # sleepers in the heap still parked
        self._scope: trio.CancelScope | None = None
        self._running = False

    async def park(self, listeners: Sequence[set[Any]], deadline: float) -> bool:
        """Sleep until a ``set()`` from one of the sets' owners (True) or ``deadline`` (False).

        Adds a `Sleeper` to each set of ``listeners`` while parked and takes it out after.
        Returns False at once when the runtime is shutting down (see `enter`).
        A checkpoint: cancellation by any enclosing scope raises ``trio.Cancelled``.
        Long-polls inline the three steps (`enter`, ``wait_task_rescheduled``, `leave`)
        so that a parked one keeps no coroutine frame of this method.
        """
        sleeper = self.enter(listeners, deadline)
        if sleeper is None:
            await trio.lowlevel.checkpoint()
            return False
        try:
            changed: bool = await trio.lowlevel.wait_task_rescheduled(sleeper.abort)
        finally:
            self.leave(listeners, sleeper)
        return changed

    def enter(
        self, listeners: Sequence[set[Any]], deadline: float, sleeper: Sleeper | None = None
    ) -> Sleeper | None:
        """Register the current task to be woken by ``listeners`` or at ``deadline``.

        ``sleeper`` (made for the current task, with ``deadline``) is the one to register;
        by default a plain `Sleeper`.

        The caller then awaits ``trio.lowlevel.wait_task_rescheduled(sleeper.abort)``
        (True: a change, False: the deadline) and calls `leave` in a ``finally``.
        None when ``deadline`` has passed or the runtime is shutting down (its nursery
        cancelled or closed): the caller then returns as at its deadline.
        """
        if deadline <= trio.current_time() or not self._start():
            return None
        if sleeper is None:
            sleeper = Sleeper(trio.lowlevel.current_task(), deadline)
        self._push(deadline, sleeper)
        for watched in listeners:
            watched.add(sleeper)
        return sleeper

    def leave(self, listeners: Sequence[set[Any]], sleeper: Sleeper) -> None:
        """Undo `enter` once the task is awake (woken, expired or cancelled)."""
        sleeper.task = None
        self._live -= 1
        for watched in listeners:
            watched.discard(sleeper)
        if not self._live and self._scope is not None:
            self._scope.cancel()  # no one parked: the timer task ends

    def _start(self) -> bool:
        if not self._running:
            if self._nursery.cancel_scope.cancel_called:  # shutting down
                return False
            try:
                self._nursery.start_soon(self._serve, name="agora long-poll timers")
            except RuntimeError:  # the runtime's nursery closed
                return False
            self._running = True
        return True

    def _push(self, deadline: float, sleeper: Sleeper) -> None:
        heap = self._heap
        if len(heap) > 2 * self._live + 64:  # many woken early: drop their entries
            self._heap = heap = [entry for entry in heap if entry.task is not None]
            heapq.heapify(heap)
        self._live += 1
        heapq.heappush(heap, sleeper)
        scope = self._scope
        if scope is not None and deadline < scope.deadline:
            scope.deadline = deadline

    async def _serve(self) -> None:
        try:
            while self._live:
                heap = self._heap
                with trio.CancelScope(deadline=heap[0].deadline if heap else math.inf) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
                now = trio.current_time()
                heap = self._heap
                while heap and heap[0].deadline <= now:
                    heapq.heappop(heap).expire()
        finally:
            self._running = False
            self._scope = None
            if not self._live:
                self._heap = []


class Turn:
    """A FIFO lock whose queue is made by the first task that has to wait.

    An actor's turn (`agora.runtime.actor.Actor`): most are taken and given back by one
    inline command at a time, with nobody waiting, so a task reference does; a
    ``trio.Lock`` per actor cost its making (a ParkingLot and attrs) on every fresh entity.
    As ``trio.Lock``, it knows its holder: only the task that holds the turn may give it
    back. A release hands the turn straight to the longest waiter, so no task can cut in.
    """

    __slots__ = ("_lot", "_owner")

    def __init__(self) -> None:
        self._owner: trio.lowlevel.Task | None = None
        self._lot: trio.lowlevel.ParkingLot | None = None

    def locked(self) -> bool:
        """Whether some task holds the turn."""
        return self._owner is not None

    def acquire_nowait(self) -> None:
        """Take the turn now.

        Raises:
            trio.WouldBlock: it is held.
        """
        if self._owner is not None:
            raise trio.WouldBlock
        self._owner = _current_task()

    async def acquire(self) -> None:
        """Take the turn, waiting in line while it is held (a checkpoint either way)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._owner is None:
            self._owner = _current_task()
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        if self._lot is None:
            self._lot = trio.lowlevel.ParkingLot()
        await self._lot.park()  # `release` handed the turn over, to this task

    def release(self) -> None:
        """Give the turn back: to the longest waiter if any, else free it.

        Raises:
            RuntimeError: the calling task does not hold the turn.
        """
        if self._owner is not _current_task():
            raise RuntimeError("release of a turn this task does not hold")
        if self._lot is not None and (woken := self._lot.unpark()):
            self._owner = woken[0]
            return
        self._owner = None


@dataclass(slots=True, eq=False)
class Slot:
    """Where the actor leaves one command's outcome.

    Attributes:
        finished: The outcome is in (``value`` or ``error``).
    """

    value: Any = None
    error: BaseException | None = None
    #: The actor's `Actor.epoch` the reply reflects (-1: unknown, a long-poll re-runs).
    epoch: int = -1
    #: When the call began (`agora.runtime.handling.stamp`): a copy shown current after it
    #: needs no version probe before a read-only reply (see `Handling._handle_guarded`).
    since: int = field(default_factory=stamp)
    finished: bool = False
    #: A poll's own command: how a later command of its group may answer it.
    waiting: Waiting | None = None
    #: The caller's task parked in `wait` (None: nobody waits, or it was cancelled).
    _task: trio.lowlevel.Task | None = None
    _change: trio.Event | None = None
    _actor: Handling | None = None  # whose change event at `epoch` follows the reply

    @property
    def change(self) -> trio.Event | None:
        """Set by the first change after the reply (None: no reply); looked up on first use,
        so a caller that never parks costs its actor no event."""
        actor = self._actor
        if self._change is None and actor is not None:
            self._actor = None
            if actor.epoch == self.epoch:
                self._change = actor.change
            else:  # changed since the reply: as the event it had then, already set
                self._change = trio.Event()
                self._change.set()
        return self._change

    def set(
        self,
        value: Any,
        change: trio.Event | None,
        epoch: int = -1,
        actor: Handling | None = None,
    ) -> None:
        """The reply, followed by ``change`` (or by ``actor``'s change at ``epoch``)."""
        self.value, self._change, self.epoch, self._actor = value, change, epoch, actor
        self.finished = True  # `_finish` inlined: every command's reply comes this way
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._finish()

    def _finish(self) -> None:
        self.finished = True
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        """Until the outcome is in (returns at once, without a checkpoint, if it is).

        One caller waits on a slot (the one that submitted its command). Its task parks
        itself, as `Sleeper` does: an event per queued command cost its making (a
        ParkingLot), its wait and its set on every call that went through a mailbox.
        Cancellable while parked, as ``Event.wait``: the command still runs, unanswered.
        """
        if not self.finished:
            self._task = _current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: Any) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED
