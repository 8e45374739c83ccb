"""The write turn of a shared SQLite file: an ``flock`` taken with a deadline and a way out.

The writers of the processes sharing a file take turns on an exclusive ``flock`` of a file
beside it (`agora.store.sqlite_guard`). A blocking ``flock`` wakes its waiter the moment the
lock is given back, but it has no time limit and nothing in Python can interrupt it: a
process stopped while holding the turn (SIGSTOP, a debugger) would keep this process's
writer waiting for ever, and its shutdown with it.

So `WriteTurn.take` first tries without waiting (the common, uncontended case: one system
call). When another process holds the turn, a helper thread of this process waits for it in
a blocking ``flock`` and hands it over, while the writer thread waits on a condition with a
deadline: it gets the turn as soon as the kernel gives it, or gives up at the deadline or at
`WriteTurn.stop`. A turn that arrives after its taker gave up is given straight back, or
handed to the next taker already waiting. If the helper is still blocked when the turn is
closed, it closes the file itself once the ``flock`` returns (closing drops the lock).
This module must not import trio.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

#: Seconds between two looks at whether a taker may stop waiting (``give_up``).
LOOK_SECONDS = 0.05


class WriteTurn:
    """An exclusive ``flock`` on one file, taken with a deadline (see the module docstring).

    Attributes:
        contended: Turns that had to wait for another process.
        missed: Waits that ended without the turn (deadline, stop, or nobody waiting).
    """

    def __init__(self, path: str) -> None:
        """Open (create) the lock file ``path``.

        Raises:
            OSError: it cannot be opened.
        """
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._cond = threading.Condition()
        self._wanted = False  # a taker waits for the helper's flock
        self._granted = False  # the helper holds the turn for that taker
        self._blocked = False  # the helper is inside its blocking flock
        self._stopped = False
        self._closed = False
        self._helper: threading.Thread | None = None
        self.contended = 0
        self.missed = 0

    @property
    def closed(self) -> bool:
        """Whether `close` was called (the file itself may close later: see `close`)."""
        return self._closed

    def take(self, deadline: float, give_up: Callable[[], bool] | None = None) -> bool:
        """Take the turn; whether it was taken by ``deadline`` (`time.perf_counter`).

        Returns False at once after `stop`, and early when ``give_up`` says nobody waits
        for the turn any more. One thread takes turns at a time (the writer's).
        """
        with self._cond:
            if self._stopped:
                return False
            if not self._blocked:  # else the helper's flock is already queued for it
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass
                else:
                    return True
            self.contended += 1
            self._wanted = True
            if self._helper is None:
                self._helper = threading.Thread(
                    target=self._wait_for_turns, name="agora-write-turn", daemon=True
                )
                self._helper.start()
            self._cond.notify_all()
            while not self._granted and not self._stopped:
                left = deadline - time.perf_counter()
                if left <= 0 or (give_up is not None and give_up()):
                    break
                self._cond.wait(min(left, LOOK_SECONDS))
            self._wanted = False
            if self._granted:
                self._granted = False
                return True
            self.missed += 1
            return False

    def give(self) -> None:
        """Give the turn back (after a `take` that returned True)."""
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def stop(self) -> None:
        """End every wait for the turn, now and later: `take` returns False."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def close(self) -> None:
        """Stop, and close the file (dropping the lock if held). A helper still blocked in
        its ``flock`` (the other process still holds the turn) closes it when that returns."""
        with self._cond:
            self._stopped = self._closed = True
            self._cond.notify_all()
            if self._blocked:
                log.warning("closing the write turn while another process still holds it")
                return
        os.close(self._fd)

    def _wait_for_turns(self) -> None:
        """The helper thread: take the turn for each waiting taker, in a blocking flock."""
        cond = self._cond
        while True:
            with cond:
                while not (self._wanted and not self._granted) and not self._closed:
                    cond.wait()
                if self._closed:
                    return
                self._blocked = True
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # the kernel wakes it when the turn is free
            with cond:
                self._blocked = False
                if self.closed:  # (read again: `close` ran meanwhile, maybe)
                    os.close(self._fd)  # the last reference: the lock goes with it
                    return
                if self._wanted and not self._granted and not self._stopped:
                    self._granted = True
                    cond.notify_all()
                    continue
            fcntl.flock(self._fd, fcntl.LOCK_UN)  # its taker gave up meanwhile
