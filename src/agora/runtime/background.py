"""Background work: tasks a toolset declares, run by the server from start to shutdown.

A background task is ``async def task(runtime) -> None``. The server starts every enabled
toolset's tasks in its nursery once the store is open and the runtime is up, and cancels them
at shutdown after the calls in flight had their grace period. Time comes from Trio's clock
(`trio.sleep`) and `Runtime.clock`, so tests drive background work with `MockClock` and
`FakeWall` like everything else. `periodic` builds the common case: one step, repeated.
This module must not hold toolset logic; it only schedules and supervises.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)

#: What a toolset declares in ``Toolset.background``.
BackgroundTask = Callable[["Runtime"], Awaitable[None]]


def periodic(seconds: float, step: BackgroundTask) -> BackgroundTask:
    """A background task that runs ``step`` at once, then every ``seconds`` (Trio clock).

    Ticks are spaced from the start of one step to the start of the next; a step that takes
    longer than ``seconds`` delays the next one rather than piling them up. A step that
    raises is logged with its traceback and the next tick still runs: one bad pass of a
    sweep must not end the sweep.

    Args:
        seconds: Period, > 0.
        step: ``async def step(runtime) -> None``, one pass of the work.

    Raises:
        ValueError: if ``seconds`` is not positive.
    """
    if seconds <= 0:
        raise ValueError("a periodic task needs a positive period")

    async def task(runtime: Runtime) -> None:
        next_at = trio.current_time()
        while True:
            try:
                await step(runtime)
            except Exception:
                log.exception(
                    "background step %s failed; it runs again in %s s", _name(step), seconds
                )
            next_at = max(next_at + seconds, trio.current_time())
            await trio.sleep_until(next_at)

    task.__name__ = task.__qualname__ = f"periodic({_name(step)})"
    return task


async def supervise(task: BackgroundTask, runtime: Runtime) -> None:
    """Run one background task; an exception is logged and ends that task, not the server."""
    try:
        await task(runtime)
    except Exception:
        log.exception("background task %s crashed; it stays stopped until restart", _name(task))


def _name(fn: Callable[..., object]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
