"""The signals that stop ``agora serve`` and ``agora stdio``, and what each one says.

The first of `stop_signals` begins the graceful shutdown (logged at INFO, naming it). One
that follows while the shutdown runs is said too (WARNING, with the time the grace has left
and what the next SIGINT would do; "again" only after one of its own kind), and changes
nothing, but for ``agora serve``'s SIGINT (Ctrl-C pressed again at a terminal, or once after
a SIGTERM): the first during the shutdown ends the grace at once (the calls still running
are cancelled, each client told that its call may or may not have taken effect, and the
server stops as when the grace runs out); the next exits the process at once, as ``kill
-9`` would (what was committed is kept; the calls still running get no answer, and a child
process of theirs, a router adapter, may be left running), exit status 130. A second
SIGTERM changes nothing: a service manager that sends one more means the same stop, and its
own timeout ends with SIGKILL.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.server.app import App

log = logging.getLogger("agora.cli")

#: The exit status of a process a third SIGINT stopped at once (a shell's for SIGINT).
STOPPED_AT_ONCE = 128 + signal.SIGINT


def stop_signals() -> tuple[int, ...]:
    """The signals that begin the graceful shutdown. SIGHUP's default would end the process at
    once, with no drain and no log line (a closed terminal, a service manager's reload), but
    not if it is ignored already: ``nohup agora serve`` asked that a hang-up not stop it."""
    kept = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    return (signal.SIGINT, signal.SIGTERM, *(() if kept else (signal.SIGHUP,)))


def received(signum: int) -> None:
    """Log the signal that begins the graceful shutdown (INFO)."""
    name = signal.Signals(signum).name
    # SIGHUP: a closed terminal, or a service manager's reload with no command of its own.
    aside = " (agora reads its settings at start only: restart it to change them)"
    log.info("received %s: shutting down%s", name, aside if signum == signal.SIGHUP else "")


async def stop_on_signal(signals: Any, stop: Callable[[], None], grace: float | None) -> None:
    """The first of `stop_signals` ends the session's input (``stop``): the calls in flight
    are answered within the grace (``--db``: long-polls at once, the rest within
    ``grace_seconds``; ``--connect``: the server's reply, or an error past the bridge's), as
    when the host closes stdin; later ones are said (`while_stopping`)."""
    async for signum in signals:
        received(signum)
        stop()
        await while_stopping(signals, grace, first=signum)
        return


async def while_stopping(
    signals: Any, grace: float | None, app: App | None = None, *, first: int
) -> None:
    """Say each signal that comes while the shutdown runs (until cancelled), with what is
    left of the ``grace`` (seconds, from now; None: no grace of the process's own) and what
    the next signal would do. ``first`` is the signal that began the shutdown: a signal is
    said to come "again" only after one of its own kind. With the server's ``app`` (``agora
    serve``), the first SIGINT that comes during the shutdown ends the grace (a Ctrl-C after
    a SIGTERM as a second Ctrl-C), and the SIGINT after that exits at once."""
    end = None if grace is None else trio.current_time() + grace
    seen = {first: 1}
    interrupted = False
    async for signum in signals:
        seen[signum] = seen.get(signum, 0) + 1
        said = f"received {_counted(signum, seen[signum])}"
        if signum == signal.SIGINT and app is not None:
            if interrupted:
                log.warning(
                    "%s: exiting at once (what was committed is kept); cut off without an"
                    " answer: %s",
                    said,
                    "; ".join(app.running()) or "no call",
                )
                sys.stderr.flush()
                os._exit(STOPPED_AT_ONCE)
            interrupted = True
            log.warning(
                "%s: ending the grace now, the calls still running are cancelled (another"
                " SIGINT exits at once)",
                said,
            )
            app.end_grace()
            continue
        if end is None:
            left = "it ends once the calls in flight have answered"
        elif (seconds := end - trio.current_time()) > 0 and not interrupted:
            left = f"{seconds:.1f} s left (grace_seconds) for the calls in flight to answer"
        else:
            left = "the grace is over: it ends once the writes still committing are answered"
        log.warning("%s: already shutting down, %s%s", said, left, _next(app, interrupted))


def _counted(signum: int, times: int) -> str:
    """A signal as the log says it, counting only its own kind: ``SIGINT during the
    shutdown`` when a signal of another kind began it, ``SIGINT again`` after one, ``SIGINT
    a third time`` after two."""
    name = signal.Signals(signum).name
    return f"{name} {_TIMES.get(times, f'({times} times now)')}"


_TIMES = {1: "during the shutdown", 2: "again", 3: "a third time"}


def _next(app: App | None, interrupted: bool) -> str:
    """What a SIGINT would do next, for ``agora serve`` (``app``); nothing otherwise, where a
    SIGINT is said as the others are."""
    if app is None:
        return ""
    return " (SIGINT: exit at once)" if interrupted else " (SIGINT: end the grace now)"
