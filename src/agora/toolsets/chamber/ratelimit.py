"""Entry limits: how fast one principal, or one connection, may enter the chamber.

Token buckets on the monotonic clock: a bucket holds up to a minute's worth of entries (one at
least, so that a rate below one a minute still admits an entry now and then) and refills
continuously, so a client may enter in a burst and then at the steady rate. Named
principals have a bucket each; anonymous callers share one (they are one principal); each
connection (MCP session) has its own, kept only as long as the connection lives. An entry
needs a token from both its principal's and its connection's bucket and takes both or
neither. Settings (``[options.chamber]``, per minute, 0 = no limit): `Limits.from_options`.
Pure: no clock of its own, no I/O.

The buckets live in one server's memory: nodes sharing a database (docs/scale-out.md) each
keep their own, so N nodes admit up to N times a principal's rate, and N times the anonymous
callers' (a connection lives on one node: its limit holds as set). A cluster-wide rate R is
R / N on each node (docs/options.md).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Final

from agora.toolsets.options import bounded

#: Defaults, in entries per minute.
PRINCIPAL_PER_MINUTE: Final = 60
ANONYMOUS_PER_MINUTE: Final = 600
CONNECTION_PER_MINUTE: Final = 30
#: The settings, in the order of `Limits`' fields, and their defaults.
LIMIT_SETTINGS: Final = (
    "enter_per_minute",
    "anonymous_enter_per_minute",
    "connection_enter_per_minute",
)
DEFAULTS: Final = (PRINCIPAL_PER_MINUTE, ANONYMOUS_PER_MINUTE, CONNECTION_PER_MINUTE)


@dataclass(frozen=True, slots=True)
class Limits:
    """Entries per minute: per named principal, for all anonymous callers, per connection.

    Per node: N nodes on one database admit up to N times ``principal`` and ``anonymous``
    (each node has its own buckets); ``connection`` holds as set, a connection living on one
    node. For a cluster-wide rate R, give each node R / N.
    """

    principal: float = PRINCIPAL_PER_MINUTE
    anonymous: float = ANONYMOUS_PER_MINUTE
    connection: float = CONNECTION_PER_MINUTE

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Limits:
        """Read ``enter_per_minute``, ``anonymous_enter_per_minute`` and
        ``connection_enter_per_minute`` from the chamber's options (missing: the defaults);
        run at start too (the chamber's `Toolset.options_check`), so that a server never
        starts with limits its first entry would refuse.

        Raises:
            OptionsError: if a setting is below 0 (a `ValueError`).
        """
        values = [
            float(bounded("chamber", options, name, default, 0))
            for name, default in zip(LIMIT_SETTINGS, DEFAULTS, strict=True)
        ]
        return cls(*values)


def refusal(which: str, *, anonymous: bool) -> tuple[str, str]:
    """The words of an entry refused by limit ``which`` (`EntryLimiter.take`): the error, and
    what the recovery hint adds after its wait. Anonymous callers share one bucket, so others'
    entries empty it too, and a bearer token has its own: the refusal says both."""
    per = "a limited number per minute"
    if which == "connection":
        return f"Too many entries on this connection: the chamber admits {per}.", ""
    if not anonymous:
        return f"Too many entries for this principal: the chamber admits {per}.", ""
    return (
        f"Too many anonymous entries: the chamber admits {per}, shared by all anonymous callers"
        " (other clients' entries count too).",
        " (a named principal of the server's [[principals]], calling with its bearer token,"
        " has a limit of its own; a server without principals has only this shared one)",
    )


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float

    def level(self, rate: float, now: float) -> float:
        return min(_capacity(rate), self.tokens + (now - self.at) * rate / 60.0)


def _capacity(rate: float) -> float:
    """What a bucket of ``rate`` entries a minute holds when full: an entry takes one."""
    return rate if rate >= 1.0 else 1.0


@dataclass
class EntryLimiter:
    """The buckets of one server."""

    _principals: dict[str, _Bucket] = field(default_factory=dict)
    _connections: weakref.WeakKeyDictionary[object, _Bucket] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    def take(
        self, limits: Limits, principal: str, connection: object | None, now: float
    ) -> tuple[str, float] | None:
        """Take one entry for ``principal`` on ``connection`` at monotonic time ``now``.

        Returns:
            None if admitted (both tokens taken), else (which limit, seconds until a token)
            with nothing taken.
        """
        # Every entry passes here: two named buckets, no list of them made per call, and
        # each bucket's level worked out once (the check's level is the one taken from).
        rate = limits.anonymous if principal == "anonymous" else limits.principal
        mine = theirs = None
        mine_level = their_level = 0.0
        if rate:
            mine = self._principals.get(principal)  # no bucket made when known
            if mine is None:
                mine = self._principals[principal] = _Bucket(_capacity(rate), now)
            if (mine_level := mine.level(rate, now)) < 1.0:
                return "principal", (1.0 - mine_level) * 60.0 / rate
        per = limits.connection
        if per and connection is not None:
            theirs = self._connections.get(connection)  # no weak reference made when known
            if theirs is None:
                theirs = self._connections[connection] = _Bucket(_capacity(per), now)
            if (their_level := theirs.level(per, now)) < 1.0:
                return "connection", (1.0 - their_level) * 60.0 / per
        if mine is not None:
            mine.tokens, mine.at = mine_level - 1.0, now
        if theirs is not None:
            theirs.tokens, theirs.at = their_level - 1.0, now
        return None
