"""The version guard's bookkeeping on a shared store: how often it reruns, and when.

`stamp` orders a command's arrival against the moments a cached copy of its entity was
known current, with no clock; `GuardCounts` is what the guard cost this node's commands
(`Runtime.guard`, shown by ``/healthz``). Kept apart from `agora.runtime.handling`, which
uses both, so that the parking and polling modules can stamp without importing it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

#: Times a command is re-run on a fresh copy when its entity changed on another node.
RETRIES = 3

#: ``stamp()``: a number greater than every one before in this process, ordering a command's
#: arrival (`agora.runtime.actor.Slot.since`) against the moments a cached copy was known
#: current (`Handling.confirmed`) with no clock; the counter's own ``__next__`` (per call).
stamp: Callable[[], int] = itertools.count(1).__next__


@dataclass(slots=True)
class GuardCounts:
    """What the version guard cost this node's commands (`Runtime.guard`).

    Attributes:
        retried: Writes rejected by the guard (their entity changed on another node);
            each reran its command on a fresh copy, or answered `Busy` if it was the last try.
        stale_reads: Read-only replies held back because a probe found a newer version.
        busy: Commands answered `Busy` after `RETRIES` reruns.
    """

    retried: int = 0
    stale_reads: int = 0
    busy: int = 0
