"""The version guard's bookkeeping on a shared store: how often it reruns, and when.

`settle` commits a command's writes under the guard, or confirms that a read-only reply's copy
is current; `Reruns` decides whether a command another node's change overtook runs again,
after a short random pause; `busy` is the answer when it may not. `stamp` orders a command's
arrival against the moments a cached copy of its entity was known current, with no clock;
`GuardCounts` is what the guard cost this node's commands (`Runtime.guard`, shown by
``/healthz``). Kept apart from `agora.runtime.handling`, which uses them, so that the
parking and polling modules can stamp without importing it.
"""

from __future__ import annotations

import itertools
import logging
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from agora.store.neutral import Busy, Conflict, Guard

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.runtime.entity import Effects
    from agora.runtime.handling import Handling

#: Reruns a command always gets, however long they take.
RETRIES = 3
#: Seconds after its first conflict during which a command keeps rerunning past `RETRIES`.
RERUN_BUDGET = 5.0
#: The longest random pause before the first rerun, in seconds; it doubles with each rerun
#: up to `LONGEST_PAUSE`.
FIRST_PAUSE = 0.002
LONGEST_PAUSE = 0.1

log = logging.getLogger(__name__)


class Reruns:
    """The reruns left to one command whose entity keeps changing on other nodes.

    A fixed count of immediate reruns lost about one post in eight when three nodes wrote
    one debate topic at once: the nodes kept overtaking each other in step. A pause drawn
    at random below a ceiling that doubles with each rerun (full jitter) puts them out of
    step, so one wins at a time and the others follow; the time budget, not a count, bounds
    how long a command may wait for its turn before it is told `Busy`.
    """

    __slots__ = ("_ceiling", "_deadline", "done")

    def __init__(self) -> None:
        self.done = 0
        self._deadline: float | None = None
        self._ceiling = FIRST_PAUSE

    async def another(self) -> bool:
        """After a conflict: pause a random moment and say True (run again), or say False
        (the budget is spent: answer `Busy`)."""
        now = trio.current_time()
        if self._deadline is None:
            self._deadline = now + RERUN_BUDGET
        if self.done >= RETRIES and now >= self._deadline:
            return False
        self.done += 1
        await trio.sleep(random.uniform(0, self._ceiling))
        self._ceiling = min(self._ceiling * 2, LONGEST_PAUSE)
        return True


#: Seconds during which further `Busy` answers about one entity are counted, not logged.
BUSY_SAID_EVERY = 60.0


def busy(where: str, counts: GuardCounts) -> Busy:
    """What a command on ``where`` (one entity's name, or "the entities") answers when it
    kept conflicting past its `Reruns`: retryable, and nothing was changed. (The server adds
    the advice to retry.) Counted in ``counts``; logged once a minute per entity (a WARNING:
    an operator saw one line per refused call while nodes contended for one topic), so the
    call's own failure is not logged again."""
    counts.busy += 1
    now, said = trio.current_time(), counts.said
    if now - said.get(where, -BUSY_SAID_EVERY) >= BUSY_SAID_EVERY:
        for name in [n for n, at in said.items() if now - at >= BUSY_SAID_EVERY]:
            del said[name]  # (entities not refused within the minute: the map stays small)
        said[where] = now
        log.warning(
            "%s kept changing on other nodes: commands on it ran out of reruns and were"
            " answered Busy (said once a minute per entity; /healthz's guard busy counts"
            " every one)",
            where,
        )
    return Busy(f"{where} kept changing elsewhere; nothing was changed", told=True)


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
        busy: Commands answered `Busy`: their entity kept changing elsewhere for longer
            than their reruns' time budget (`Reruns`).
    """

    retried: int = 0
    stale_reads: int = 0
    busy: int = 0
    #: When `busy` last logged each entity's refusals (Trio's clock), by name.
    said: dict[str, float] = field(default_factory=dict)


async def settle(actor: Handling, effects: Effects, fresh: bool, since: int) -> bool:
    """Commit ``effects``' writes under the version guard, or (none) confirm that the copy of
    ``actor``'s entity a read-only reply came from is current; False when another node's
    change overtook it (the entity is then dropped, to reload for the rerun).

    ``fresh``: the copy was loaded for this run; ``since``: the command's arrival
    (`agora.runtime.park.Slot.since`): a copy shown current after it needs no probe.

    Raises:
        StoreError: the store failed to commit or to probe.
    """
    runtime = actor.runtime
    kind, key = actor.kind.kind, actor.key
    try:
        if effects.writes:
            at = stamp()
            await runtime.store.write(
                effects.writes, [Guard(kind, key, actor.version)], effects.updated
            )
            actor.version += 1
            actor.confirmed = at
        elif (
            not fresh
            and actor.confirmed <= since
            and not getattr(actor.kind, "lagging_reads", False)
        ):
            at = stamp()
            versions = await runtime.store.probe([(kind, key)])
            if versions[(kind, key)] != actor.version:
                actor.forget_entity()
                runtime.guard.stale_reads += 1
                return False
            actor.confirmed = at
    except Conflict:
        actor.forget_entity()
        runtime.guard.retried += 1
        return False
    return True
