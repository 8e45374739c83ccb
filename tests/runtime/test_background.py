"""Background work: `periodic` on the mock clock, and the server running toolset tasks."""

from __future__ import annotations

import functools
import logging
import re

import pytest
import trio

from agora.config import Config
from agora.runtime.background import periodic
from agora.server.embed import open_server
from agora.toolsets.base import Toolset


async def test_periodic_runs_at_once_then_every_period_and_survives_a_failing_step(
    runtime, autojump_clock, caplog
):
    ticks: list[float] = []

    async def step(rt) -> None:
        assert rt is runtime
        ticks.append(trio.current_time())
        if len(ticks) == 2:
            raise RuntimeError("one bad pass")
        if len(ticks) == 3:
            await trio.sleep(25)  # longer than the period: the next tick waits for it

    with trio.move_on_after(100):
        await periodic(10, step)(runtime)
    assert ticks == [0, 10, 20, 45, 55, 65, 75, 85, 95]
    assert "one bad pass" in caplog.text


async def test_a_step_failing_every_tick_is_told_once_then_seldom(runtime, autojump_clock, caplog):
    """A step of half a second that failed every tick logged 24 identical tracebacks in five
    seconds, forever: now the first in full, then one summary a minute, then the end."""
    caplog.set_level(logging.INFO, logger="agora.runtime.background")
    ticks: list[float] = []

    async def tick(rt) -> None:
        ticks.append(trio.current_time())
        if len(ticks) <= 300:  # 150 s of the same failure
            raise RuntimeError(f"tick {len(ticks)} failed")
        if len(ticks) == 301:
            raise KeyError("another fault")

    with trio.move_on_after(200):
        await periodic(0.5, tick)(runtime)
    first = (
        "background step tick failed; it runs again in 0.5 s (the same failure again is"
        " counted and told at most every 60 s)"
    )
    summary = (
        "background step tick still fails the same way after {} s: 120 failures in the last"
        " 60 s (latest: RuntimeError: tick {} failed); it runs again every 0.5 s"
    )
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, first),
        (logging.ERROR, summary.format(60, 121)),
        (logging.ERROR, summary.format(120, 241)),
        (
            logging.INFO,
            "background step tick then failed another way after 300 failures in a row over 150.0 s",
        ),
        (logging.ERROR, first),
        (logging.INFO, "background step tick succeeded again after 1 failure in a row over 0.5 s"),
    ]
    tracebacks = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert [type(exc) for exc in tracebacks] == [RuntimeError, KeyError]


def test_periodic_needs_a_positive_period():
    async def step(rt) -> None:
        return None

    with pytest.raises(ValueError, match="positive"):
        periodic(0, step)


def sync_step(rt) -> None:
    return None


async def no_runtime() -> None:
    return None


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        pytest.param(sync_step, "sync_step) is not async", id="sync"),
        pytest.param(
            no_runtime, "takes no positional parameter: it must take one, the Runtime", id="no-arg"
        ),
        pytest.param(42, "is not callable (a int)", id="not-callable"),
    ],
)
def test_periodic_refuses_a_step_it_cannot_await_when_called(step, problem):
    """A sync step used to start cleanly (the task around it is async) and then fail on
    every tick: "object NoneType can't be used in 'await' expression"."""
    with pytest.raises(ValueError, match=re.escape(problem)) as refused:
        periodic(5, step)
    assert str(refused.value).startswith("the step of periodic(5, ")


def test_periodic_takes_every_step_shape_the_server_can_await():
    class Sweeper:
        async def sweep(self, runtime, batch: int = 10) -> None:
            return None

    periodic(5, Sweeper().sweep)
    periodic(5, functools.partial(Sweeper.sweep, Sweeper()))


async def test_the_server_runs_background_tasks_from_start_to_shutdown(autojump_clock, caplog):
    caplog.set_level(logging.ERROR)
    seen: list[tuple[str, float]] = []

    async def sweep(rt) -> None:
        seen.append(("sweep", trio.current_time()))

    async def broken(rt) -> None:
        raise RuntimeError("broken background task")

    async def watcher(rt) -> None:
        seen.append(("watcher started", trio.current_time()))
        try:
            await trio.sleep_forever()
        finally:
            seen.append(("watcher stopped", trio.current_time()))

    toolset = Toolset(
        name="bg",
        handlers={},
        contract=None,
        background=[periodic(30, sweep), broken, watcher],
    )
    config = Config(db=":memory:", grace_seconds=1)
    with trio.fail_after(1000):
        async with open_server(config, toolsets=[toolset], listen=False) as server:
            await trio.sleep(65)
            assert not server.runtime.closing  # the broken task ended alone
        stopped_at = trio.current_time()
    # Trio starts sibling tasks in no fixed order: compare as sorted lists.
    assert sorted(seen) == [
        ("sweep", 0),
        ("sweep", 30),
        ("sweep", 60),
        ("watcher started", 0),
        ("watcher stopped", stopped_at),
    ]
    assert "broken background task" in caplog.text
