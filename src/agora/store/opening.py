"""Opening a store in a worker thread that a cancellation of the opener stops.

Opening a database may wait (another process's write lock on a SQLite file, a PostgreSQL
advisory lock or table lock held by another node) and a toolset's migration step may run
for seconds. `open_in_thread` runs that work off the Trio thread, so an embedding program's
own tasks, timeouts and cancel scopes keep working, and ends it when the opener is
cancelled: the thread's connection is interrupted (`Opening.adopt` says how), no step
begins or commits after that (`Opening.check`), and the Trio side waits for the thread to
let go of its connection, at most `agora.store.sqlite.STOP_SECONDS` (a toolset's step stuck
in its own Python code is left behind, and commits nothing), before it returns. The
backends' own parts: `agora.store.sqlite_open`, `agora.store.pg_cluster.migrate`.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, TypeVar

import trio

from agora.store.sqlite import STOP_SECONDS

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

log = logging.getLogger(__name__)


def loop_delivery() -> Callable[[Callable[[], None]], None]:
    """How a store's threads hand their outcomes to the calling Trio run (its token's
    ``run_sync_soon``), saying once the run has ended instead of raising into the thread:
    a writer stopped past its deadline (its batch waited for another process's write lock)
    may finish after the event loop, when nobody is left to tell."""
    run_soon = trio.lowlevel.current_trio_token().run_sync_soon

    def deliver(outcome: Callable[[], None]) -> None:
        try:
            run_soon(outcome)
        except trio.RunFinishedError:
            log.info("a store outcome came after the event loop ended: nobody is left to tell")

    return deliver


class OpenCancelled(Exception):
    """The open was cancelled: its thread stops (nobody wants what it would return)."""


class Opening:
    """One open's worker thread, as its Trio task sees it: `cancel` stops it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._finished = False
        self._interrupt: Callable[[], None] | None = None
        self._close: Callable[[], None] | None = None
        #: Set once the thread is done with the database (its connection closed if cancelled).
        self.done = threading.Event()

    def adopt(self, interrupt: Callable[[], None], close: Callable[[], None] | None) -> None:
        """The thread's connection, as it connects: ``interrupt()`` stops the statement it
        runs (from another thread), ``close()`` closes it (a connection the thread made and
        returned to nobody: None if the thread closes its own on the way out)."""
        with self._lock:
            self._interrupt = interrupt
            self._close = close

    def cancelled(self) -> bool:
        """Whether the open was cancelled."""
        return self._cancelled

    def check(self) -> None:
        """Raise `OpenCancelled` if the open was cancelled."""
        if self._cancelled:
            raise OpenCancelled("the open was cancelled")

    def run(self, fn: Callable[[Opening], T]) -> T:
        """``fn(self)`` in the worker thread; what it opened is closed if it was cancelled."""
        try:
            return fn(self)
        finally:
            with self._lock:
                self._finished = True
                close = self._close if self._cancelled else None
            if close is not None:
                close()
            self.done.set()

    def cancel(self) -> None:
        """Stop the thread (the Trio side, cancelled): it closes its connection, or this
        does if the thread already returned it to nobody."""
        with self._lock:
            self._cancelled = True
            finished = self._finished
            interrupt, close = self._interrupt, self._close
        if finished:
            if close is not None:
                close()
        elif interrupt is not None:
            interrupt()

    def stop(self, timeout: float) -> None:
        """`cancel`, then wait up to ``timeout`` seconds for the thread to be done."""
        self.cancel()
        self.done.wait(timeout)


async def open_in_thread(fn: Callable[[Opening], T]) -> T:
    """``fn(opening)`` in a worker thread; a cancellation ends it as the module says.

    Raises:
        What ``fn`` raises; the caller's cancellation (once the thread let go of the
        database, or after `STOP_SECONDS`).
    """
    opening = Opening()
    try:
        return await trio.to_thread.run_sync(opening.run, fn, abandon_on_cancel=True)
    except BaseException:
        if opening.done.is_set():
            opening.cancel()  # closes what it returned to nobody; nothing if ``fn`` raised
        else:  # interrupting may block (PostgreSQL's cancel request): not on this thread
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(opening.stop, STOP_SECONDS)
        raise
