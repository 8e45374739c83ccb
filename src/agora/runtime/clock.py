"""The injectable clock: monotonic time from Trio, wall time from a replaceable source.

Timeouts use `Clock.monotonic` (Trio's clock, so `MockClock` drives them in tests); TTLs,
expiry, dates and cut-offs use `Clock.wall`, which tests replace with `FakeWall`.
This module must not sleep or touch the system clock except through `SystemWall`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import trio


class WallSource(Protocol):
    """Anything that tells the current UTC time."""

    def now(self) -> dt.datetime:
        """Return the current time, timezone-aware, in UTC."""
        ...


class SystemWall:
    """The real wall clock."""

    def now(self) -> dt.datetime:
        """Return the system's current UTC time."""
        return dt.datetime.now(dt.UTC)


@dataclass
class FakeWall:
    """A wall clock that tests set and advance by hand."""

    current: dt.datetime = field(default_factory=lambda: dt.datetime(2026, 11, 30, tzinfo=dt.UTC))

    def now(self) -> dt.datetime:
        """Return the fake current time."""
        return self.current

    def advance(self, seconds: float) -> None:
        """Move the fake time forward."""
        self.current += dt.timedelta(seconds=seconds)


class Now(NamedTuple):
    """One reading of both clocks, handed to pure entity code (a tuple: cheap to make, and
    every command of every entity gets one)."""

    mono: float
    wall: dt.datetime


_new_tuple = tuple.__new__


@dataclass
class Clock:
    """Where agora reads time."""

    wall_source: WallSource = field(default_factory=SystemWall)

    def monotonic(self) -> float:
        """Trio's current time (seconds, arbitrary origin)."""
        return trio.current_time()

    def wall(self) -> dt.datetime:
        """The current UTC time from the wall source."""
        return self.wall_source.now()

    def now(self) -> Now:
        """Both readings at once."""
        # tuple.__new__, not the NamedTuple's own __new__ (a Python function): every command
        # of every entity gets a reading, and the tuple is the same.
        return _new_tuple(Now, (trio.current_time(), self.wall_source.now()))
