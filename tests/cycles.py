"""What only a reference cycle keeps alive after a call that fails: the tests that check a
refusal or a failed write leaves none behind (`agora serve` freezes what survives a
collection until its thaw, so a cycle per refusal is memory kept for minutes)."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


async def refusals_and_garbage(
    act: Callable[[], Awaitable[object]], error: type[Exception], count: int = 20
) -> tuple[int, set[str]]:
    """Run ``act`` ``count`` times with the collector paused and saving what it finds: how
    many raised ``error``, and the types of the objects that only a reference cycle kept
    alive."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        refused = 0
        for _ in range(count):
            try:
                await act()
            except error:  # not bound: the test's frame keeps no reference to it
                refused += 1
        gc.collect()
        return refused, {type(o).__qualname__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
