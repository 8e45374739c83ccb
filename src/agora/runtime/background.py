"""Background work: tasks a toolset declares, run by the server from start to shutdown.

A background task is ``async def task(runtime) -> None``. The server starts every enabled
toolset's tasks in its nursery once the store is open and the runtime is up, and cancels them
at shutdown after the calls in flight had their grace period. Time comes from Trio's clock
(`trio.sleep`) and `Runtime.clock`, so tests drive background work with `MockClock` and
`FakeWall` like everything else. `periodic` builds the common case: one step, repeated.
This module must not hold toolset logic; it only schedules and supervises.

On a shared store (several nodes on one PostgreSQL, or processes sharing one SQLite file) a
background task runs once for all of them: `supervise` first takes the task's lock, named by
its public name (`PgStore.try_singleton`, `SharedStore.try_singleton`),
retrying every `SINGLETON_RETRY` seconds while another node holds it, and gives the task up
if the lock's connection dies (the lock is then free for another node). A task that keeps
this node's own memory in shape (a cache, a pool of pre-built objects) is marked
`node_local` and runs on every node. On SQLite nothing of this happens: the task simply runs.

The log says when this node begins running a cluster-wide task and when it stops (its lock's
connection lost: an operator found every node's log claiming ``chamber: purge`` after a few
PostgreSQL restarts, since the nodes that lost it never said so), naming the node as its
connections' ``application_name`` does (``HOST:PID``, `node_name`); and ``/healthz`` shows
each task's state on this node (`Runtime.background`: ``running``, or ``standby`` while
another node holds its lock or the database is away; a `node_local` task on a shared store is
``running_per_node``).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.runtime.hooks import handler_problem, shown_name
from agora.runtime.step_failures import StepFailures
from agora.store.neutral import SQLITE

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)

#: What a toolset declares in ``Toolset.background``.
BackgroundTask = Callable[["Runtime"], Awaitable[None]]


_NODE_LOCAL = "agora_node_local"
#: The step a `periodic` task repeats (its name is the one the log shows).
_STEP = "agora_step"
#: How the log names the background task the current Trio task supervises (`supervise`).
_LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("agora_background_label")

F = TypeVar("F", bound=Callable[..., Any])


def node_local(task: F) -> F:
    """Mark ``task`` (a function, or a method: mark the function) to run on every node of a
    shared store, not once per cluster: it tends this node's memory, not the database."""
    setattr(task, _NODE_LOCAL, True)
    return task


def periodic(seconds: float, step: BackgroundTask) -> BackgroundTask:
    """A background task that runs ``step`` at once, then every ``seconds`` (Trio clock).

    Ticks are spaced from the start of one step to the start of the next; a step that takes
    longer than ``seconds`` delays the next one rather than piling them up. A step that
    raises is logged with its traceback and the next tick still runs: one bad pass of a
    sweep must not end the sweep. The same failure again is counted, not logged again, and
    told at most once a minute until the step succeeds (`StepFailures`).

    Args:
        seconds: Period, > 0.
        step: ``async def step(runtime) -> None``, one pass of the work.

    Raises:
        ValueError: if ``seconds`` is not positive, or ``step`` cannot be called as
            ``await step(runtime)`` (`agora.runtime.hooks.handler_problem`): the task
            itself is async, so the server's start-up check of background tasks would
            let a sync step through, to fail on every tick.
    """
    if seconds <= 0:
        raise ValueError("a periodic task needs a positive period")
    problem = handler_problem(step, ("the Runtime",), "None")
    if problem is not None:
        raise ValueError(
            f"the step of periodic({seconds}, {shown_name(step)}) {problem};"
            " a step is `async def step(runtime: Runtime) -> None`"
        )

    async def task(runtime: Runtime) -> None:
        failures = StepFailures(f"background step {_LABEL.get(readable(step))}", seconds)
        next_at = trio.current_time()
        while True:
            try:
                await step(runtime)
            except StoreError as exc:  # the database is away (restarting?): an event, not a bug
                _store_failed(runtime, failures, exc)
            except Exception as exc:
                failures.failed(exc)
            else:
                failures.succeeded()
            next_at = max(next_at + seconds, trio.current_time())
            await trio.sleep_until(next_at)

    task.__name__ = task.__qualname__ = f"periodic({_name(step)})"
    setattr(task, _STEP, step)
    return task


def _store_failed(runtime: Runtime, failures: StepFailures, exc: StoreError) -> None:
    """A step's `StoreError`: a bug if no retry can cure it (logged as one, in one line); a
    disk that refuses writes at DEBUG only (the store logs each such episode once, and a step
    retried every fraction of a second would fill the log meanwhile); else an event, told to
    the store's `agora.store.outage.Outage` if it keeps one (once, then seldom), or a
    WARNING. ``failures`` tells what it logs: once, then seldom."""
    outage = getattr(runtime.store, "outage", None)
    if exc.permanent:
        failures.failed(exc, logging.ERROR, trace=False)
    elif exc.cause is not None:
        log.debug(
            "%s failed (%s); it runs again in %s s", failures.what, one_line(exc), failures.seconds
        )
    elif outage is not None:
        outage.failed(failures.what, exc)
    else:
        failures.failed(exc, logging.WARNING, trace=False)


async def supervise(task: BackgroundTask, runtime: Runtime, label: str = "") -> None:
    """Run one background task; an exception is logged and ends that task, not the server.

    On a shared store the task runs only on the node holding its cluster-wide lock, unless
    it is `node_local`. ``label`` names it in the log (``<toolset>: <task>``; `readable`
    when empty).
    """
    label = label or readable(task)
    _LABEL.set(label)
    states = _states(runtime)
    try:
        if not runtime.store.shared:
            states[label] = RUNNING
            await task(runtime)
        elif not getattr(task, _NODE_LOCAL, False):
            await _once_per_cluster(task, runtime, label)
        else:
            states[label] = PER_NODE
            await task(runtime)
    except Exception:
        log.exception("background task %s crashed; it stays stopped until restart", label)
    finally:
        states.pop(label, None)


#: A background task's state on this node, as ``/healthz`` shows it (`Runtime.background`).
RUNNING = "running"
#: A `node_local` task on a shared store: it runs on this node as on every other (an
#: operator checking that each task ran on exactly one node found ``chamber: RoomPool.refill``
#: ``running`` on all three).
PER_NODE = "running_per_node"
#: A cluster-wide task this node does not run now: another node holds its lock (or the
#: database is away); this node takes it if that lock is freed.
STANDBY = "standby"


def _states(runtime: Any) -> dict[str, str]:
    states = getattr(runtime, "background", None)
    return states if isinstance(states, dict) else {}


def node_name() -> str:
    """This node as its PostgreSQL connections' ``application_name`` names it
    (``HOST:PID``: `agora.store.pg_sql.application_name`), for the lock lines."""
    return f"{socket.gethostname()}:{os.getpid()}"


def readable(task: Callable[..., object]) -> str:
    """A background task's name as the log shows it: the name it was defined with, without
    the scopes around it (``build_toolset.<locals>.``) or `periodic`'s wrapper."""
    name = _name(getattr(task, _STEP, task))
    return name.rpartition("<locals>.")[2]


#: Seconds between two attempts at a task's cluster lock, and between two checks that the
#: lock is still held.
SINGLETON_RETRY = 2.0


def _sharing(store: Any) -> tuple[str, str]:
    """Who runs a task once for whom, as the log says it: this node for the cluster
    (PostgreSQL), or this process for the processes sharing its SQLite file."""
    if getattr(store, "dialect", None) == SQLITE:
        return "this process", f"the processes sharing {store.path}"
    return "this node", "the cluster"


async def _once_per_cluster(task: BackgroundTask, runtime: Runtime, label: str) -> None:
    store: Any = runtime.store
    outage = getattr(store, "outage", None)
    runner, sharers = _sharing(store)
    states = _states(runtime)
    while True:
        states[label] = STANDBY
        try:
            # The lock is named by the task's public name (``chamber: purge``), the one the
            # log shows, the same on every node: a SQLite file's lock file bears it.
            lock = await store.try_singleton(label)
        except StoreError as exc:  # the database is away (restarting?): try again later
            if outage is not None:
                outage.failed(f"the cluster lock of {label}", exc)
            else:
                log.warning(
                    "cannot take the cluster lock of %s (%s); retrying", label, one_line(exc)
                )
            lock = None
        else:
            if outage is not None:  # the database answered (whoever holds the lock)
                outage.answered(f"the cluster lock of {label}")
        if lock is None:
            await trio.sleep(SINGLETON_RETRY)
            continue
        log.info("%s runs background task %s for %s (%s)", runner, label, sharers, node_name())
        states[label] = RUNNING
        finished = False
        try:
            async with trio.open_nursery() as nursery:
                watch = functools.partial(_watch_lock, store, lock, label, runner, sharers)
                nursery.start_soon(watch, nursery.cancel_scope)
                await task(runtime)
                finished = True
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await store.blocking(lock.release)
        if finished:
            return


async def _watch_lock(
    store: Any, lock: Any, name: str, runner: str, sharers: str, scope: trio.CancelScope
) -> None:
    while True:
        await trio.sleep(SINGLETON_RETRY)
        if not await store.blocking(lock.alive):
            outage = getattr(store, "outage", None)
            if outage is not None:  # (the database went away, most likely: told once)
                outage.failed(f"the cluster lock of {name}", "its connection was lost")
            log.info(
                "%s no longer runs background task %s for %s (%s): its lock's connection was"
                " lost; another takes it, or this one once it gets the lock again",
                runner, name, sharers, node_name(),
            )  # fmt: skip
            scope.cancel()
            return


def _name(fn: Callable[..., object]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
