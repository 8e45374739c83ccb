"""A periodic step that keeps failing, as the log tells it: once in full, then seldom.

A background step runs every few seconds or less; one that fails the same way on every tick
(a bug, a table gone) wrote its traceback on every tick, forever: 24 identical tracebacks in
five seconds for a step of half a second, burying every other line. `StepFailures` tells
such a run of failures as an episode, in the style of `agora.store.outage`:

- the first failure is logged in full (its traceback, if it has one);
- the same failure again (same exception type, raised at the same line) is counted, and a
  summary line (how many since the last line, the latest message) is logged at most once
  every `SUMMARY_EVERY` seconds while it lasts;
- a different failure ends the run (its count told) and begins its own, logged in full;
- the first success after failures is one INFO line with the run's length and count.

Nothing here runs or retries a step (`agora.runtime.background.periodic` does). Time is
Trio's clock; call from the Trio thread.
"""

from __future__ import annotations

import logging
from typing import Final

import trio

from agora.logsafe import one_line
from agora.store.episode import Episode, counted

log = logging.getLogger("agora.runtime.background")  # the one `periodic` logs on

#: Seconds between two summary lines of the same failure repeated.
SUMMARY_EVERY: Final = 60.0

#: What makes two failures the same: the exception's type and where it was raised.
Signature = tuple[str, str, int]


def signature(exc: BaseException) -> Signature:
    """The type of ``exc`` and the file and line that raised it (its innermost frame):
    a message may differ from tick to tick (an id, a count) for what is one fault."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return (type(exc).__qualname__, "", 0)
    return (type(exc).__qualname__, tb.tb_frame.f_code.co_filename, tb.tb_lineno)


class StepFailures:
    """The failures of one periodic step since it last succeeded, told once, then seldom.

    Args:
        what: How the log names the step (``background step mynotes: tick``).
        seconds: The step's period, as the log lines say it.
    """

    def __init__(self, what: str, seconds: float) -> None:
        self.what = what
        self.seconds = seconds
        self._episode = Episode(trio.current_time)  # its strikes: the failures in a row
        self._same: Signature | None = None  # the failure repeating
        self._level = logging.ERROR
        self._unsaid = 0  # repeats since the last line
        self._next = 0.0  # when a summary is due next
        self._latest = ""

    def failed(self, exc: Exception, level: int = logging.ERROR, trace: bool = True) -> None:
        """The step raised ``exc``: logged at ``level`` (with its traceback if ``trace``)
        if it begins a run, else counted and summarised when one is due."""
        same = signature(exc)
        self._latest = f"{type(exc).__name__}: {one_line(exc)}"
        if self._episode.under_way and same == self._same:
            self._episode.strike()
            self._unsaid += 1
            if trio.current_time() >= self._next:
                self._summary()
            return
        if self._episode.under_way:
            self._ended("then failed another way")
        self._episode.strike()
        self._same, self._level, self._unsaid = same, level, 0
        self._next = trio.current_time() + SUMMARY_EVERY
        log.log(
            level,
            "%s failed%s; it runs again in %s s (the same failure again is counted and told"
            " at most every %g s)",
            self.what,
            "" if trace else f": {self._latest}",
            self.seconds,
            SUMMARY_EVERY,
            exc_info=exc if trace else None,
        )

    def succeeded(self) -> None:
        """The step ran through: a run of failures under way ends (one INFO line)."""
        if self._episode.under_way:
            self._ended("succeeded again")

    def _summary(self) -> None:
        since = self._episode.since or 0.0
        now = trio.current_time()
        log.log(
            self._level,
            "%s still fails the same way after %.0f s: %s in the last %.0f s (latest: %s);"
            " it runs again every %s s",
            self.what,
            now - since,
            counted(self._unsaid, "failure"),
            now - self._next + SUMMARY_EVERY,
            self._latest,
            self.seconds,
        )
        self._unsaid, self._next = 0, now + SUMMARY_EVERY

    def _ended(self, how: str) -> None:
        length = self._episode.end() or 0.0
        log.info(
            "%s %s after %s in a row over %.1f s",
            self.what,
            how,
            self._episode.told("failure"),
            length,
        )
        self._same = None
