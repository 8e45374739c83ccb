"""Call workers: tasks of one nursery that run call after call, so a call starts with a wake-up.

Starting a Trio task costs a coroutine, a `Task`, a context copy and the nursery's
bookkeeping, and ending one costs as much again; entering and leaving a cancel scope per call
costs about as much once more. `Workers.start_soon` hands a job to a worker that finished its
last one and waits for the next (a list pop and a reschedule), and starts a new worker task
only when none is idle. What a worker does is the pool's ``body`` (`agora.server.connection`
runs a call in that frame itself, under one cancel scope entered for many calls, so a parked
call keeps no more than a task of its own would): ``body(workers, job)`` runs ``job``, asks
`Workers.next` for the next one and ends when it answers None. That happens once `keep`
workers are already idle, so what idles is bounded per pool, not per connection.
`Workers.prepare` starts an idle worker ahead of need (a WebSocket that connects does, so the
burst of calls that follows a wave of connections finds them ready), up to ``keep``.

Idle workers wait until the nursery is cancelled: a pool belongs on a nursery that is
cancelled when its owner shuts down (the server's), never on one that is left to finish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

#: Idle workers kept per pool (each is a parked task of about 2.8 KiB, so at most ~5.6 MiB).
#: Enough for the in-flight count of a couple of thousand busy sessions to swing without
#: workers ending and new ones starting: at 512, 1,000 sessions calling in a closed loop
#: spent ~7% of the event loop's time making and ending workers and their cancel scopes.
KEEP = 2048

#: A worker's task and the abort function of its waits for a job (`Workers.waiter`).
Waiter = tuple[trio.lowlevel.Task, "Callable[[Any], trio.lowlevel.Abort]"]


class Workers:
    """Idle tasks of ``nursery`` that run the jobs handed to `start_soon` with ``body``.

    Args:
        nursery: Where workers run; it must be cancelled when its owner shuts down.
        body: ``async body(workers, job)``: a worker's life, ``job`` None for a prepared one.
        keep: Most workers left idle at once.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        body: Callable[[Workers, Any], Awaitable[None]],
        keep: int = KEEP,
    ) -> None:
        self.keep = keep
        self._nursery = nursery
        self._body = body
        self._idle: list[trio.lowlevel.Task] = []
        self._handed: dict[trio.lowlevel.Task, Any] = {}  # jobs not yet picked up
        self._coming = 0  # prepared workers that have not run yet

    @property
    def idle(self) -> int:
        """Workers waiting for a job now."""
        return len(self._idle)

    def start_soon(self, job: Any) -> None:
        """Run ``job`` soon: in an idle worker if there is one, else in a new one.

        Raises:
            RuntimeError: no worker was idle and the nursery is closed.
        """
        if self._idle:
            task = self._idle.pop()  # the latest to finish: its memory is the warmest
            self._handed[task] = job
            trio.lowlevel.reschedule(task)
        else:
            self._nursery.start_soon(self._body, self, job, name="agora call worker")

    def prepare(self) -> None:
        """Start one idle worker if fewer than `keep` are idle (and the nursery is open)."""
        if len(self._idle) + self._coming < self.keep:
            try:
                self._nursery.start_soon(self._body, self, None, name="agora call worker")
            except RuntimeError:  # closed: nothing will be handed to it anyway
                return
            self._coming += 1

    def waiter(self) -> Waiter:
        """The calling worker's task and the abort function of its waits in `next`, made once
        by a worker and passed to each of its `next` calls (made per wait, they were a
        closure, two cells and a lookup of the current task per call)."""
        task = trio.lowlevel.current_task()
        return task, lambda _: self._abort(task)

    async def next(self, *, prepared: bool = False, waiter: Waiter | None = None) -> Any:
        """The calling worker's next job, once handed over; None if it should end (`keep`
        workers idle already). ``prepared``: the worker is new, from `prepare`; ``waiter``:
        the calling worker's own `waiter` (None: made now).

        Raises:
            trio.Cancelled: the worker's scope or its nursery was cancelled meanwhile; the
                worker is no longer idle.
        """
        if prepared:
            self._coming -= 1
        if len(self._idle) >= self.keep:
            return None
        task, abort = waiter if waiter is not None else self.waiter()
        self._idle.append(task)
        await trio.lowlevel.wait_task_rescheduled(abort)
        return self._handed.pop(task)

    def _abort(self, task: trio.lowlevel.Task) -> trio.lowlevel.Abort:
        self._idle.remove(task)
        return trio.lowlevel.Abort.SUCCEEDED
