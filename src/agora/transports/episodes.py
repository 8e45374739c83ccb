"""Refusals said once per episode: a WARNING when a cap starts refusing, an INFO when it ends.

A server at ``max_connections`` or ``max_sessions`` refuses every newcomer with a 503; a line
per refusal would flood the log just when the operator reads it, and none would hide why
clients fail. Like the EMFILE episodes of `agora.transports.accept`, an `Episode` says the
first refusal (WARNING) and, once the cap lets one in again, how many it refused and for how
long (INFO). `Evictions` says the same way, per principal, the idle sessions a principal at its
session cap has evicted for new ones. `Refusals` says requests refused for their token (401)
or for the Host or Origin they name (403), once a minute per cause with a count, so that token
guessing, a misconfigured client or a balancer the Host check blocks shows in the log without
flooding it; a task says each count as its minute ends, so that refusals that stop within the
minute are counted too. `UnknownSessions` says the requests naming a session this node does
not hold (404), once per episode, then a count each minute it goes on. Nothing here refuses
or evicts: the caller says what happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from agora.logsafe import loggable

if TYPE_CHECKING:
    import logging


class Episode:
    """The refusals of one cap since it last let a newcomer in.

    Args:
        log: The logger of the module that refuses.
        what: What is refused, plural ("connections", "sessions").
    """

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what
        #: Refused since the episode began (0: none is going on).
        self.refused = 0
        self._since = 0.0

    def refuse(self, cap: int) -> None:
        """A newcomer is refused at ``cap``; the first of an episode is logged (WARNING)."""
        if not self.refused:
            self._since = trio.current_time()
            self.log.warning(
                "server full: %d %s; refusing new ones (said once until one is accepted again)",
                cap,
                self.what,
            )
        self.refused += 1

    def accept(self) -> None:
        """A newcomer is let in: an episode going on ends, with its count (INFO)."""
        if self.refused:
            self.log.info(
                "accepting %s again: %d refused in %.1f s",
                self.what,
                self.refused,
                trio.current_time() - self._since,
            )
            self.refused = 0


class Evictions:
    """Idle sessions evicted for their principal's new ones, said once per principal and
    episode: a WARNING at the first (a client, or clients sharing one principal, opening
    sessions they do not delete), an INFO with the count when one is let in without."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        #: Per principal name evicting now: how many so far, since when.
        self._going: dict[str, tuple[int, float]] = {}

    def evicted(self, name: str, cap: str) -> None:
        """An idle session of ``name``'s was evicted at ``cap`` for a new one."""
        count, since = self._going.get(name, (0, 0.0))
        if not count:
            since = trio.current_time()
            self.log.warning(
                "sessions of %s at %s: each new one evicts its least recently used idle one"
                " (said once until one is let in without)",
                name,
                cap,
            )
        self._going[name] = (count + 1, since)

    def ended(self, name: str) -> None:
        """A new session of ``name``'s was let in without evicting one."""
        going = self._going.pop(name, None)
        if going is not None:
            self.log.info(
                "sessions of %s let in again without evicting: %d evicted in %.1f s",
                name,
                going[0],
                trio.current_time() - going[1],
            )


class Refusals:
    """Requests refused for who sent them or the name they were sent to, said per cause: a
    WARNING at the first, with the peer and the path; the ones that follow within a minute
    are counted, and a minute after the first their count is said (INFO, with the latest
    peer and path) whether or not another refusal comes, and the next minute begins. A
    cause a minute has not seen again begins anew with a WARNING. Counts still unsaid when
    the server stops are said then. No token is ever said: the caller gives the cause, not
    the header.

    Args:
        log: The logger of the module that refuses.
        nursery: Where the task that says the counts runs (started by a cause's first
            repeat, ended once every count is said); cancelled when the server stops.
    """

    #: Seconds during which the repeats of a cause are counted, not said.
    WINDOW = 60.0

    def __init__(self, log: logging.Logger, nursery: trio.Nursery) -> None:
        self.log = log
        self._nursery = nursery
        #: Per cause (a fixed phrase, so a handful): the minute under way.
        self._going: dict[str, _Minute] = {}
        self._running = False
        #: The task's wait for the next minute to end (its deadline moved by `refused`).
        self._sleep = trio.CancelScope()

    def refused(self, cause: str | None, peer: str, path: str, detail: str = "") -> None:
        """A request from ``peer`` for ``path`` was refused for ``cause`` (``"401 unknown
        bearer token"``; None: a refusal not said); ``detail``, said at the first, tells the
        operator what to change."""
        if cause is None:
            return
        now = trio.current_time()
        minute = self._going.get(cause)
        if minute is not None and (now < minute.since + self.WINDOW or minute.unsaid):
            minute.repeat(peer, path)
            ends = minute.since + self.WINDOW
            if now >= ends:  # the minute is over and its count not said yet
                self._say(cause, minute, now)
            elif not self._running:
                self._running = True
                self._nursery.start_soon(self._say_when_due)
            else:  # the task may wait for a later minute's end
                self._sleep.deadline = min(self._sleep.deadline, ends)
            return
        self._going[cause] = _Minute(now)
        self.log.warning(
            "refused %s: from %s for %s%s (said once a minute per cause, with a count)",
            cause,
            peer,
            loggable(path),
            f"; {detail}" if detail else "",
        )

    async def _say_when_due(self) -> None:
        """Say each count as its minute ends, while there are counts to say; at shutdown
        (cancelled), the ones left."""
        try:
            while due := [m.since for m in self._going.values() if m.unsaid]:
                with trio.CancelScope(deadline=min(due) + self.WINDOW) as self._sleep:
                    await trio.sleep_forever()
                now = trio.current_time()
                for cause, minute in self._going.items():
                    if minute.unsaid and now >= minute.since + self.WINDOW:
                        self._say(cause, minute, now)
        finally:
            self._running = False
            for cause, minute in self._going.items():
                if minute.unsaid:
                    self._say(cause, minute, trio.current_time())

    def _say(self, cause: str, minute: _Minute, now: float) -> None:
        """Say the count of ``cause``'s minute; the next minute begins ``now``."""
        self.log.info(
            "refused %s: %d more in %.0f s, the latest from %s for %s",
            cause,
            minute.unsaid,
            now - minute.since,
            minute.peer,
            loggable(minute.path),
        )
        minute.unsaid, minute.since = 0, now


class _Minute:
    """The minute under way of one cause of refusals: when it began, its repeats not said
    yet, and the latest's peer and path."""

    __slots__ = ("path", "peer", "since", "unsaid")

    def __init__(self, since: float) -> None:
        self.since = since
        self.unsaid = 0
        self.peer = ""
        self.path = ""

    def repeat(self, peer: str, path: str) -> None:
        """One more refusal, from ``peer`` for ``path``."""
        self.unsaid += 1
        self.peer, self.path = peer, path


#: The 404's message for an unknown ``Mcp-Session-Id`` (`UnknownSessions`): every cause the
#: server cannot tell apart, true on a single server too (an operator's finding: "it may live
#: on another node" was said to a client on one SQLite server whose session had ended, or
#: belonged to another endpoint or token).
UNKNOWN_SESSION = (
    "Session not found: it is unknown, expired or ended, or another endpoint's or token's, or"
    " another node holds it or a restart lost it; initialize a new session"
)


class UnknownSessions:
    """Requests naming an ``Mcp-Session-Id`` this node does not hold (answered 404), said at
    INFO once per episode, then a count every `QUIET` seconds while it goes on (an episode
    ends after `QUIET` seconds without one; what it had not said is said as the next one
    begins), counted for ``/healthz`` (``unknown_sessions``). An operator's finding: a
    balancer without affinity on the header sent a session's requests to other nodes, which
    answered a bare 404 and logged nothing, so nothing on the nodes showed the
    misconfiguration. Expired, ended, evicted sessions, another principal's and another
    endpoint's count too (the client is told the same), and the line says so."""

    #: Seconds without an unknown session id that end an episode; also the interval of its
    #: counts while it goes on.
    QUIET = 60.0

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        #: Requests with an unknown session id since start.
        self.count = 0
        self._latest: float | None = None
        self._said = 0.0  # when the episode's latest line was said
        self._unsaid = 0  # the episode's requests after its latest line

    def unknown(self, method: str) -> None:
        """A ``method`` request named a session this node does not hold."""
        now = trio.current_time()
        self.count += 1
        if self._latest is not None and now - self._latest < self.QUIET:
            self._latest = now
            self._unsaid += 1
            if now - self._said >= self.QUIET:
                self.log.info(
                    "%d more requests named an unknown Mcp-Session-Id (answered 404) in the"
                    " last %.0f s; the episode goes on (counted in /healthz unknown_sessions)",
                    self._unsaid, now - self._said,
                )  # fmt: skip
                self._said, self._unsaid = now, 0
            return
        before = f"; {self._unsaid} more in the episode before" if self._unsaid else ""
        self._latest, self._said, self._unsaid = now, now, 0
        self.log.info(
            "a %s request named an unknown Mcp-Session-Id (answered 404): the session"
            " expired, was evicted or ended (DELETE) here, belongs to another endpoint or"
            " token, was lost as this node restarted, or lives on another node (behind a"
            " balancer: give it affinity on Mcp-Session-Id); said once, then a count every"
            " %.0f s while they go on, counted in /healthz unknown_sessions%s",
            method, self.QUIET, before,
        )  # fmt: skip
