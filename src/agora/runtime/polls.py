"""Long-polls on one entity, and how a change answers them in its own turn.

A parked `Runtime.poll` waits outside its actor, behind a `agora.runtime.park.Parked` that
the actor lists in `Actor.parked`. When a command changes the entity, the polls that change
concerns (``wait_key`` among its `Effects.wakes`, or every poll when it names no keys) would
wake, submit their command again, queue behind the writer for a second transaction, and
only then answer. Instead the actor *folds* them (`fold`): right after the waking command,
in the same turn, it runs each such poll's command on the entity (so it sees exactly the
state the change left, as if it had run right after it), adds its writes to the same atomic
batch, and once that one commit is done hands each poll its outcome directly (`answer`).

The same holds inside a group of queued commands (`Handling._handle_group`): a poll whose own
command ran earlier in the group with a reply that is not ready would park only to find the
entity changed and re-run; a later command of the group that concerns it runs its command
again right after itself, and the poll's slot gets that newer outcome after the first.

The poll then judges the reply as it would have: ready, it returns; not ready, it parks
again (its command's writes, if any, are committed like any re-run's). A keyed poll whose
entity changed before it parked re-runs only if a change concerned its key. A fold that raises
fails that poll alone with an internal error, as a re-run would have; the batch before it
commits and the entity reloads. A failed commit fails every command of the batch, folded
polls included, and applies nothing. A change cancelled before its commit gives its claims
up: those polls wake and re-run their command themselves, on the reloaded entity.

Only unguarded stores fold: on a shared store (`Handling._handle_guarded`) a change wakes
its polls and they re-run their commands under the version guard, one transaction each.
Waits over several keys (`agora.runtime.multi.poll_many`) re-run as before too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from agora.runtime.entity import Effects
from agora.runtime.failures import entity_name, handle_raised, not_effects
from agora.runtime.guarding import stamp
from agora.runtime.park import Parked, Waiting

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.runtime.actor import Actor
    from agora.runtime.clock import Now
    from agora.runtime.entity import Entity, EntityKind
    from agora.runtime.park import Slot
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PollCounts:
    """How parked polls came back to life (`Runtime.polls`, in ``/healthz``).

    Attributes:
        answered: Polls answered by the change that woke them, in its own turn (`fold`).
        rerun: Polls that woke and submitted their command again themselves (a shared
            store, a change from outside the actor's turn, a claim given up, ...).
    """

    answered: int = 0
    rerun: int = 0


def fold(
    actor: Actor,
    entity: Entity,
    effects: Effects,
    slot: Slot,
    done: list[tuple[Effects, Slot]],
    folded: list[Parked],
    pending: dict[Slot, Any],
    now: Now,
) -> bool:
    """After the command whose ``effects`` these are (its ``slot`` last in ``done``, the batch
    to commit, in order): if it changed the entity, run the commands of the polls it wakes,
    each parked on ``actor`` (claimed, added to ``folded`` to `answer` once the batch's fate
    is known) or ``pending`` (slot -> latest reply of the polls whose own command ran earlier
    in this group: one whose reply is not ready gets the new outcome after the first); each
    outcome joins ``done``; each runs at ``now``, the waking command's reading (right after
    it, in the same step). Then, if ``slot`` is a poll's own command, add it to ``pending``
    (its ``ready`` is asked only if a later change concerns it).

    Returns:
        False if a poll's command raised (that poll's slot is failed; the entity may be
        half-mutated: commit what ``done`` holds, then reload it), else True.
    """
    if effects.changed and (actor.parked or pending):
        wakes = effects.wakes
        for poll in list(actor.parked):
            if wakes is not None and poll.key is not None and poll.key not in wakes:
                continue
            claimed = poll.claim()
            if claimed is None:
                continue
            folded.append(poll)
            if not _run(actor, entity, poll.command, claimed, done, now):
                return False
        for queued, reply in list(pending.items()):
            waiting = queued.waiting
            assert waiting is not None
            if wakes is not None and waiting.key is not None and waiting.key not in wakes:
                continue
            if not waiting.waits(reply):  # ready: the poll returns with it
                del pending[queued]
                continue
            if not _run(actor, entity, waiting.command, queued, done, now):
                return False
            pending[queued] = done[-1][0].reply
    if slot.waiting is not None:
        pending[slot] = effects.reply
    return True


def _run(
    actor: Actor,
    entity: Entity,
    command: Any,
    slot: Slot,
    done: list[tuple[Effects, Slot]],
    now: Now,
) -> bool:
    """Run a poll's ``command`` for the batch ``done``; False (``slot`` failed) if it raised
    or returned something other than `Effects`."""
    actor.runtime.polls.answered += 1
    try:
        effects: object = entity.handle(command, now)
    except Exception as exc:  # a refusal raised, or a bug: the entity then reloads
        slot.fail(handle_raised(log, actor.kind.kind, actor.key, command, exc))
        return False
    if type(effects) is not Effects and not isinstance(effects, Effects):
        slot.fail(not_effects(entity_name(actor.kind.kind, actor.key), command, effects))
        return False
    done.append((effects, slot))
    return True


def answer(folded: list[Parked]) -> None:
    """Wake every folded poll with its outcome (or, if none came, to re-run itself)."""
    for poll in folded:
        poll.answer()


def _reply(slot: Slot) -> Any:
    """The reply; raises what the command failed with or answered as an exception."""
    if slot.error is not None:
        raise slot.error
    reply = slot.value
    if isinstance(reply, BaseException):
        raise reply
    return reply


async def poll(
    runtime: Runtime,
    kind: EntityKind,
    key: str,
    command: Any,
    *,
    ready: Callable[[Any], bool],
    timeout: float,  # noqa: ASYNC109 - the long-poll deadline is part of the command
    wait_key: str | None = None,
) -> Any:
    """See `Runtime.poll`."""
    deadline = trio.current_time() + timeout
    since = stamp()  # re-runs belong to this one call: a copy current since needs no probe
    slot: Slot | None = None
    waiting = Waiting(command, wait_key, ready)
    try:
        while True:
            if slot is None:
                actor, slot = await runtime._submit(kind, key, command, since, waiting)
            reply = _reply(slot)
            if ready(reply) or runtime.closing or trio.current_time() >= deadline:
                return reply
            # The change event after the reply, only now that the poll may park: a ready reply
            # (most, under load) makes its actor no event (`Slot.change` makes it on first use).
            change, epoch = slot.change, slot.epoch
            slot = None  # a parked poll keeps only what it needs (a slot may hold an Event)
            if change is None:
                return reply
            # Park on the actor that answered (a lookup now could spawn a new one), and
            # count ourselves so that it is not evicted under us.
            actor.waiters += 1
            try:
                while True:
                    if change.is_set():  # changed since the reply
                        if wait_key is None or runtime.closing or actor.concerns(epoch, wait_key):
                            break
                        epoch, change = actor.epoch, actor.change  # other keys': sleep on
                    # `Timers.park` inlined: a parked poll keeps one coroutine frame fewer.
                    watched = (actor.listeners,)
                    parked = Parked(
                        trio.lowlevel.current_task(), deadline, command, wait_key, since
                    )
                    if runtime.timers.enter(watched, deadline, parked) is None:
                        await trio.lowlevel.checkpoint()  # shutting down: the latest reply
                        break
                    actor.parked[parked] = None
                    try:
                        woke = await trio.lowlevel.wait_task_rescheduled(parked.abort)
                    finally:
                        runtime.timers.leave(watched, parked)
                        actor.parked.pop(parked, None)
                    slot = parked.slot  # a change ran the command for us: its outcome
                    if slot is not None or not woke:
                        break  # answered, or the deadline passed
            finally:
                actor.waiters -= 1
            if slot is None:
                if runtime.closing or not change.is_set():
                    return reply
                runtime.polls.rerun += 1
    finally:
        # A poll that ends (ready, timed out, refused) on a key nothing was created under
        # leaves no actor behind, as a call does (`Registry.settle`).
        runtime.registry.settle_keys(kind, (key,))
