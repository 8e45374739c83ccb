"""What the single writer commits: `Job`s of `Write`s, and how each learns its outcome.

A `Job` is one caller's writes, committed together with the other jobs of its batch, and the
callback that hears the outcome. Its `state` settles who may still give it up: a job is
pending until the writer takes it into a transaction, and a waiter that gives up on a pending
job drops it (it never runs). The writers (`agora.store.writer`, the guarded
`agora.store.sqlite_guard` and `agora.store.pg_writer`) share these, and the SQLite ones the
statements' runners below. This module must not import trio.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.store.writer_child import run_job, run_together

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agora.store.neutral import Guard

#: One SQL statement and its parameters, executed inside the group-commit transaction.
Write = tuple[str, tuple[Any, ...] | dict[str, Any]]

#: A job's states: waiting for a transaction, inside one (it may commit), given up (never runs).
PENDING, TAKEN, DROPPED = 0, 1, 2

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class Job:
    """Writes to commit together, and where to report the outcome (None = committed).

    `complete` calls ``callback``, or a subclass overrides it (`agora.store.sqlite`'s waiter).

    Attributes:
        state: `PENDING`, `TAKEN` into a transaction (it may commit), or `DROPPED` (its
            waiter gave up before that: it never runs). Changed only under the writer's lock.
    """

    writes: list[Write]
    callback: Callable[[BaseException | None], None] | None = None
    state: int = PENDING
    guards: tuple[Guard, ...] = ()
    updated: tuple[str, ...] = ()
    queued: float = 0.0  # `time.perf_counter` when submitted (0: run inline)

    def complete(self, outcome: BaseException | None) -> None:
        """Report ``outcome`` (None: committed); runs where the writer's ``deliver`` says."""
        if self.callback is not None:
            self.callback(outcome)


def untraced(outcomes: Iterable[BaseException | None]) -> None:
    """Drop the tracebacks of a batch's failures and of their causes, once logged.

    A traceback holds the frame the failure was raised or caught in, and through it the
    writer's frames, whose locals (the batch's outcomes, the reply's closure) hold the failure:
    a reference cycle per failed batch, which only the collector frees (and `agora serve`
    freezes what survives a collection until its thaw). A full disk under load refused
    hundreds a second. The caller learns the failure and its cause, not the writer's frames.
    """
    seen: set[int] = set()
    for outcome in outcomes:
        while outcome is not None and id(outcome) not in seen:
            seen.add(id(outcome))
            outcome.__traceback__ = None
            outcome = outcome.__cause__ or outcome.__context__


def complete(outcomes: Iterable[tuple[Job, BaseException | None]]) -> None:
    """Tell each job its outcome; one broken callback must not strand the others."""
    for job, outcome in outcomes:
        try:
            job.complete(outcome)
        except Exception:
            log.exception("could not report a write's outcome")


class WriterStopped(Exception):
    """A job was submitted after the writer stopped."""


def run_jobs(conn: sqlite3.Connection, batch: list[Job]) -> list[BaseException | None]:
    """In an open transaction: every job of ``batch`` back to back (a failure reruns them in
    savepoints, so only the failing job fails); each one's outcome. Raises if SQLite rolled
    the transaction back itself (`run_together`)."""
    return run_together(conn, [job.writes for job in batch])


def run_alone(conn: sqlite3.Connection, job: Job) -> BaseException | None:
    """In an open transaction: ``job`` in a savepoint of its own; its outcome."""
    return run_job(conn, job.writes)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if any (logged, never raised: the writer's thread
    must outlive a broken transaction)."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        log.exception("rollback failed")
