"""Refusals said once per episode: a WARNING when a cap starts refusing, an INFO when it ends.

A server at ``max_connections`` or ``max_sessions`` refuses every newcomer with a 503; a line
per refusal would flood the log just when the operator reads it, and none would hide why
clients fail. Like the EMFILE episodes of `agora.transports.accept`, an `Episode` says the
first refusal (WARNING) and, once the cap lets one in again, how many it refused and for how
long (INFO). `Evictions` says the same way, per principal, the idle sessions a principal at its
session cap has evicted for new ones. Nothing here refuses or evicts: the caller says what happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

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
