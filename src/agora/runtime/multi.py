"""Operations over several entities: a long-poll over many keys, and one atomic change.

`poll_many` is `Runtime.poll` over a set of keys: it waits outside the actors and wakes when
any of them commits a change (or stops, or shutdown begins), re-running only the commands of
the keys that changed. `call_atomic` takes the turns of several actors in one fixed order
(sorted by kind, then key, so two overlapping operations can never deadlock), runs their
pure `handle`s with one clock reading, commits every write in one transaction and only
then releases the replies. If any `handle` raises or answers with an exception, or the
commit fails or is cancelled, nothing is committed and every entity of the operation is
dropped from memory, so no actor keeps a copy the store does not have.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from agora.errors import ActorStopped, StoreError
from agora.runtime.actor import InternalError, commit_failed
from agora.runtime.entity import Effects
from agora.runtime.failures import (
    entity_name,
    handle_raised,
    load_refused,
    not_effects,
    read_failed,
    store_away,
    unsaved,
)
from agora.runtime.guarding import Reruns, busy
from agora.store.neutral import Conflict, Guard

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from agora.runtime.actor import Actor
    from agora.runtime.entity import EntityKind, Write
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)


async def poll_many(
    runtime: Runtime,
    kind: EntityKind,
    commands: Mapping[str, Any],
    *,
    ready: Callable[[dict[str, Any]], bool],
    timeout: float,  # noqa: ASYNC109 - the long-poll deadline is part of the request
) -> dict[str, Any]:
    """See `Runtime.poll_many`."""
    deadline = trio.current_time() + timeout
    replies: dict[str, Any] = {}
    changes: dict[str, trio.Event] = {}
    actors: dict[str, Actor] = {}
    todo = list(commands)
    try:
        while True:
            for key in todo:
                actor, slot = await runtime._submit(kind, key, commands[key])
                if slot.error is not None:
                    raise slot.error
                if isinstance(slot.value, BaseException):
                    raise slot.value
                assert slot.change is not None
                replies[key], changes[key], actors[key] = slot.value, slot.change, actor
            if ready(dict(replies)) or runtime.closing or trio.current_time() >= deadline:
                return dict(replies)
            # A key that changed while the others were being asked is re-run at once.
            todo = [key for key, change in changes.items() if change.is_set()]
            if todo:
                continue
            parked = list(actors.values())
            for actor in parked:
                actor.waiters += 1  # an actor with waiters is never evicted
            try:
                # `Timers.park` inlined: a parked poll keeps one coroutine frame fewer.
                watched = [actor.listeners for actor in parked]
                sleeper = runtime.timers.enter(watched, deadline)
                if sleeper is None:  # shutting down: the latest replies
                    await trio.lowlevel.checkpoint()
                else:
                    try:
                        await trio.lowlevel.wait_task_rescheduled(sleeper.abort)
                    finally:
                        runtime.timers.leave(watched, sleeper)
            finally:
                for actor in parked:
                    actor.waiters -= 1
            todo = [key for key, change in changes.items() if change.is_set()]
            if runtime.closing or not todo:
                return dict(replies)
    finally:
        # Keys nothing was created under leave no actor behind (`Registry.settle`).
        runtime.registry.settle_keys(kind, commands)


async def call_atomic(
    runtime: Runtime, operations: Sequence[tuple[EntityKind, str, Any]]
) -> list[Any]:
    """See `Runtime.call_atomic`."""
    await trio.lowlevel.checkpoint_if_cancelled()
    order = sorted(range(len(operations)), key=lambda i: _ident(operations[i]))
    idents = [_ident(operations[i]) for i in order]
    if len(set(idents)) != len(idents):
        raise ValueError("call_atomic: each (kind, key) may appear once")
    held: list[Actor] = []
    try:
        for i in order:
            kind, key, _ = operations[i]
            held.append(await _take_turn(runtime, kind, key))
        return await _run_held(runtime, operations, order, held)
    finally:
        for actor in reversed(held):
            actor.release_turn()
        for actor in held:  # one that found nothing (a LookupError) stays no longer
            runtime.registry.settle(actor)


def _ident(operation: tuple[EntityKind, str, Any]) -> tuple[str, str]:
    return (operation[0].kind, operation[1])


async def _take_turn(runtime: Runtime, kind: EntityKind, key: str) -> Actor:
    for _ in range(3):
        actor = runtime.registry.get(kind, key)
        if await actor.acquire_turn():
            return actor
        # It stopped while we waited for its turn: a fresh actor, loaded from the store.
    raise ActorStopped(f"{kind.kind} {key} is not accepting commands")


async def _run_held(
    runtime: Runtime,
    operations: Sequence[tuple[EntityKind, str, Any]],
    order: list[int],
    held: list[Actor],
) -> list[Any]:
    # On a guarded store the commit also checks every entity's version: if another node
    # changed one, all are reloaded and the handles re-run, as a single actor does, within
    # the same bounds (`Reruns`).
    reruns = Reruns()
    wrote = False  # the attempt overtaken last had writes: the operation is a write
    while True:
        replies, wrote = await _attempt(runtime, operations, order, held, wrote)
        if replies is not None:
            return replies
        runtime.guard.retried += 1
        if not await reruns.another():
            raise busy("the entities", runtime.guard)


def _handled(
    operations: Sequence[tuple[EntityKind, str, Any]],
    order: list[int],
    held: list[Actor],
    entities: list[Any],
    now: Any,
) -> list[Effects]:
    """Each entity's `Effects` of its command, in ``order``, at one ``now``.

    Raises:
        ToolError: a ``handle`` raised one: the refusal it is.
        InternalError: a ``handle`` raised (logged: `handle_raised`), or returned something
            other than `Effects` (`not_effects`: a bug, logged once by its reporter); every
            held entity then reloads on its next command.
    """
    effects: list[Effects] = []
    try:
        for i, entity in zip(order, entities, strict=True):
            done: object = entity.handle(operations[i][2], now)
            if not isinstance(done, Effects):
                break
            effects.append(done)
        else:
            return effects
    except Exception as exc:  # a refusal raised (as itself), or a bug
        failed = held[len(effects)]
        _forget(held)
        where = " in an atomic operation"
        failure = handle_raised(log, failed.kind.kind, failed.key, operations[i][2], exc, where)
        if failure is exc:
            raise
        raise failure from exc
    failed = held[len(effects)]
    _forget(held)
    raise not_effects(entity_name(failed.kind.kind, failed.key), operations[i][2], done)


async def _attempt(
    runtime: Runtime,
    operations: Sequence[tuple[EntityKind, str, Any]],
    order: list[int],
    held: list[Actor],
    wrote: bool,
) -> tuple[list[Any] | None, bool]:
    """One run of the operation: its replies (None: another node's change overtook it, to
    rerun) and whether it had writes. ``wrote``: the run overtaken before this one had
    (a failed reload then says the change could not be saved, not that it could not be
    read)."""
    try:
        entities = [await actor.loaded() for actor in held]
    except InternalError as exc:
        if wrote:
            raise unsaved(exc) from exc.__cause__
        raise
    effects = _handled(operations, order, held, entities, runtime.clock.now())
    for done in effects:
        if isinstance(done.reply, BaseException):
            _forget(held)  # a refusal vetoes the whole operation
            raise done.reply
    writes: list[Write] = [w for done in effects for w in done.writes]
    try:
        await _commit(runtime, held, writes, [u for done in effects for u in done.updated])
    except Conflict:
        _forget(held)
        return None, bool(writes)
    except StoreError as exc:
        _forget(held)
        raise _store_failed(runtime, held, bool(writes), exc) from exc
    except BaseException:
        _forget(held)  # cancelled before the commit: memory may be ahead of the store
        raise
    replies: list[Any] = [None] * len(operations)
    for i, actor, done in zip(order, held, effects, strict=True):
        actor.committed(done.changed)
        replies[i] = done.reply
        if done.updated:
            runtime.resources.updated(*done.updated)
    return replies, bool(writes)


def _store_failed(runtime: Runtime, held: list[Actor], wrote: bool, exc: StoreError) -> Exception:
    """What the caller of an atomic operation over ``held`` learns when its commit failed
    (``wrote``), or the probe that was to confirm its read-only replies (a read)."""
    where = "atomic operation over " + ", ".join(entity_name(a.kind.kind, a.key) for a in held)
    if not wrote:
        load_refused(runtime.store)
    if exc.permanent:  # (logged once, by its reporter)
        return commit_failed(exc, where)
    doing = "committing" if wrote else "probing"
    detail = store_away(runtime.store, where, doing, exc)
    return commit_failed(exc, where, detail) if wrote else read_failed("the entities", exc, detail)


async def _commit(
    runtime: Runtime, held: list[Actor], writes: list[Write], updated: list[str]
) -> None:
    """Commit ``writes``; on a guarded store only if no entity of ``held`` moved (`Conflict`)."""
    store = runtime.store
    if not store.guarded:
        await store.write(writes)
    elif writes:
        await store.write(writes, [Guard(a.kind.kind, a.key, a.version) for a in held], updated)
        for actor in held:
            actor.version += 1
    else:  # nothing to write: the replies stand if nothing moved
        found = await store.probe([(a.kind.kind, a.key) for a in held])
        if any(found[(a.kind.kind, a.key)] != a.version for a in held):
            raise Conflict([(a.kind.kind, a.key) for a in held])


def _forget(actors: list[Actor]) -> None:
    for actor in actors:
        actor.forget_entity()
