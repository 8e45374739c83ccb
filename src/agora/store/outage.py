"""A database that stopped answering, as the log tells it: once, then seldom, then once more.

While PostgreSQL is away, every part of a node that needs it retries on its own clock: the
change listener every half second, each background task's cluster lock every two seconds,
the periodic steps, the sweep for missed changes. Logged one line per failed attempt, an
idle node wrote about nine lines a second for as long as the database was down, burying the
one line that said why. `Outage` is the node's one account of it, shared by those parts
(`agora.store.pg.PgStore.outage`):

- the second failure in a row is logged at WARNING, with the first one's cause (libpq's own
  words): a single failure that the next attempt cures is no outage (a node's idle
  connection that PostgreSQL closed as it restarted, found broken at its next use), told in
  one INFO line when that attempt succeeds, the same part's or another's (an operator's
  finding: the writer's idle connection broken by a restart already told as over, then a
  read answering first, gave a WARNING promising a summary and its end in the same
  millisecond); but a part cured by another's success that fails again at its own next try
  (within `FIRST_SUMMARY` seconds) was failing all along (the listener refused every 0.5 s
  while reads succeeded between): that second failure is the WARNING, at once;
- further failures are counted, and a summary line (how long, how many failures since the
  last line, the latest cause) is logged `FIRST_SUMMARY` seconds later, then at intervals
  that double up to `MAX_INTERVAL`;
- the first success after that is logged once, at INFO, with the outage's length and count,
  and how many reads and writes it refused (the calls they were for were each answered
  retryable with a correlation id, which the server logs at DEBUG only: one WARNING per
  refused call buried this account again).

Failures a retry cannot cure (`agora.errors.StoreError.permanent`) are no outage: their
callers log them as the bugs they are. Time is Trio's clock; call from the Trio thread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import trio

from agora.logsafe import one_line
from agora.store.episode import Episode

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

#: Seconds from the first failure to the first summary line.
FIRST_SUMMARY: Final = 10.0
#: The longest interval between two summary lines (the interval doubles up to it).
MAX_INTERVAL: Final = 300.0


#: What the parts of a node say of themselves beyond their name (`part`).
_SAID = (" lost its connection", " reconnected")
#: Parts named otherwise when they fail than when they answer: a write past its deadline is
#: the writer's (`agora.store.sqlite.Store._give_up`).
_SAME = {"a write": "the writer"}


def part(what: str) -> str:
    """The part of the node ``what`` names ("the change listener reconnected": "the change
    listener"), to tell whether a failure and a success are the same part's."""
    for said in _SAID:
        what = what.removesuffix(said)
    return _SAME.get(what, what)


class Outage:
    """Whether the database answers, told once per change and seldom in between."""

    def __init__(self, name: str = "PostgreSQL") -> None:
        """Args: name: how the log names the database."""
        self.name = name
        self._episode = Episode(trio.current_time)  # its strikes: the failures
        self._unsaid = 0  # failures since the last line
        self._interval = FIRST_SUMMARY
        self._next = 0.0
        self._last = ""
        self._first = ""  # the outage's first failure, said at its second
        self._first_part = ""  # the part that failed first (`part`)
        self._said = False  # whether the outage under way was told
        self._refused = 0  # reads and writes refused since the outage began
        self._probation = ""  # a part whose single failure another part's success ended
        self._probation_ends = 0.0  # when its next try is no longer awaited (Trio's clock)

    @property
    def away(self) -> bool:
        """Whether an outage is under way."""
        return self._episode.under_way

    @property
    def failures(self) -> int:
        """Failures counted since the outage under way began (0 while the database answers)."""
        return self._episode.count if self._episode.under_way else 0

    def failed(self, what: str, error: object, refused: int = 0) -> None:
        """``what`` (a part of the node: "the change listener") could not reach the
        database because of ``error``: the first failure is held, said at the second (or
        at INFO if the next try answers), then summaries when due; counted.
        ``refused``: the reads and writes this failure refused (told at the end)."""
        self._last = f"{what}: {one_line(error)}"
        self._unsaid += 1
        if self._episode.strike():  # said at the next failure, unless the next try answers
            now = trio.current_time()
            self._interval, self._next, self._unsaid = FIRST_SUMMARY, now + FIRST_SUMMARY, 0
            self._refused = refused
            self._first, self._first_part, self._said = self._last, part(what), False
            if self._probation == self._first_part and now < self._probation_ends:
                self._probation = ""  # its own try failed again: an outage after all
                self._tell_first()
            return
        self._refused += refused
        if not self._said:
            self._tell_first()
            return  # (counted: the first summary counts the failures after the first)
        now, since = trio.current_time(), self._episode.since
        if now < self._next or since is None:
            return
        log.warning(
            "%s still unreachable after %.0f s: %d failed attempts in the last %.0f s "
            "(latest: %s); next summary in %g s",
            self.name, now - since, self._unsaid, now - self._next + self._interval,
            self._last, min(self._interval * 2, MAX_INTERVAL),
        )  # fmt: skip
        self._interval = min(self._interval * 2, MAX_INTERVAL)
        self._next, self._unsaid = now + self._interval, 0

    def _tell_first(self) -> None:
        self._said = True
        log.warning(
            "%s is unreachable (%s); retrying: a summary follows in %g s, and a line "
            "once it is back",
            self.name, self._first, FIRST_SUMMARY,
        )  # fmt: skip

    def answered(self, what: str) -> None:
        """``what`` reached the database: if an outage was under way, it ends (one line)."""
        if self._probation == part(what):
            self._probation = ""  # the part cured by another's success answers itself
        if (length := self._episode.end()) is None:
            return
        self._unsaid = 0
        refused = (
            f"; {self._refused} reads and writes refused meanwhile (their calls' correlation"
            " ids are logged at DEBUG)"
            if self._refused
            else ""
        )
        same = part(what) == self._first_part
        if not same:  # the part that failed first has not answered: watched at its next try
            self._probation = self._first_part
            self._probation_ends = trio.current_time() + FIRST_SUMMARY
        if not self._said:  # a single failure, cured by the next try
            log.info(
                "%s failed once (%s) and answered %s next try %.1f s later (%s): no outage%s",
                self.name, self._first, "the same part's" if same else "another part's",
                length, what, refused,
            )  # fmt: skip
            return
        log.info(
            "%s answers again (%s), after %.0f s unreachable and %d failed attempts%s",
            self.name, what, length, self._episode.count, refused,
        )  # fmt: skip


class Teller:
    """An `Outage` told from another thread (the PostgreSQL writer's), in the Trio thread,
    where it reads Trio's clock; an outage ends only if this teller had told of a failure.

    Attributes:
        outage: The node's account, set by its store; None: nothing is told (the caller
            logs the failure itself).
    """

    def __init__(self, deliver: Callable[[Callable[[], None]], None] | None) -> None:
        """Args: deliver: runs a function in the Trio thread (None: this is the Trio
        thread, as for an inline store)."""
        self.outage: Outage | None = None
        self._deliver = deliver
        self._told = False  # of a failure, not yet of the end

    def failed(self, what: str, error: BaseException, refused: int = 0) -> bool:
        """Tell the outage ``what`` failed with ``error``, refusing ``refused`` writes;
        whether there is one to tell."""
        outage = self.outage
        if outage is None:
            return False
        self._told = True
        self._run(lambda: outage.failed(what, error, refused))
        return True

    def answered(self, what: str) -> None:
        """``what`` reached the database again: told if this teller had told a failure."""
        outage = self.outage
        if self._told and outage is not None:
            self._told = False
            self._run(lambda: outage.answered(what))

    def _run(self, report: Callable[[], None]) -> None:
        if self._deliver is None:
            report()
        else:
            self._deliver(report)
