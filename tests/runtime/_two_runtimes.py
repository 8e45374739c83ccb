"""Checks of two runtimes over one store, shared by the PostgreSQL nodes test
(tests/runtime/test_guarded.py) and the shared SQLite file test (tests/shared_file/
test_shared_runtime.py): the same claims, two stores. A background singleton has one runner at
a time and moves when its runtime stops; `Listener` records the resource changes a session hears.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime


async def one_runner_that_moves(
    node: Any, where: Any, retry: float, monkeypatch: Any, wait: float
) -> None:
    """Start a singleton on runtime ``a``, then on ``b`` (both ``node(where)``): only ``a``
    runs it while it holds the lock (``b`` retrying every ``retry`` s); once ``a`` stops, ``b``
    runs it."""
    from agora.runtime import background

    monkeypatch.setattr(background, "SINGLETON_RETRY", retry)
    running: list[str] = []
    seen: list[str] = []
    started = {"a": trio.Event(), "b": trio.Event()}

    def sweep_of(name: str) -> background.BackgroundTask:
        async def sweep(runtime: Runtime) -> None:
            running.append(name)
            seen.append(name)
            assert len(running) == 1, running  # never two runners at once
            started[name].set()
            try:
                await trio.sleep_forever()
            finally:
                running.remove(name)

        sweep.__qualname__ = "sweep"  # one task name in every runtime, as with a toolset's
        return sweep

    with trio.fail_after(wait):
        async with node(where) as b, trio.open_nursery() as b_tasks:
            async with node(where) as a, trio.open_nursery() as a_tasks:
                a_tasks.start_soon(background.supervise, sweep_of("a"), a)
                await started["a"].wait()
                b_tasks.start_soon(background.supervise, sweep_of("b"), b)
                for _ in range(5):  # b keeps trying while a holds the lock
                    await trio.sleep(retry)
                assert seen == ["a"]
                a_tasks.cancel_scope.cancel()  # a stops; its lock goes with it
            await started["b"].wait()
            b_tasks.cancel_scope.cancel()
    assert seen == ["a", "b"]


class Listener:
    """A session as the resource hub sees it: remembers the URIs it was told of."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.told = trio.Event()

    def resource_changed(self, uri: str) -> None:
        self.heard.append(uri)
        self.told.set()
