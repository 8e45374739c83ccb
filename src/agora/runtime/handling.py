"""Running commands on an actor's entity: load it, `handle`, commit, release the replies.

A base class of `agora.runtime.actor.Actor`, holding the part of it that turns a command into
a committed change: alone or as a group under one commit on an unguarded store
(`_handle_group`), or under the version guard on a shared one (`_handle_guarded`, rerun on a
fresh copy when the entity changed on another node), and the errors a caller gets when that
fails. Only the holder of the actor's turn calls these; the mailbox, the turn, inline runs and
the change signal are the actor's own (`agora.runtime.actor`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agora.errors import StoreError
from agora.runtime.entity import Effects, reader
from agora.runtime.failures import (
    InternalError,
    entity_failed_here,
    entity_name,
    entity_store_failed,
    handle_raised,
    not_effects,
    unsaved,
)
from agora.runtime.guarding import Reruns, busy, settle, stamp

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    import trio

    from agora.runtime.clock import Now
    from agora.runtime.entity import Entity, EntityKind
    from agora.runtime.park import Parked, Slot
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)


class Handling:
    """How an `Actor` runs commands on its entity (see the module docstring)."""

    runtime: Runtime
    kind: EntityKind
    key: str
    #: The store's version of the entity this copy was loaded at (guarded stores only).
    version: int
    #: A `stamp` taken before the latest load, commit or probe that showed this copy to be
    #: the database's current version (guarded stores only; 0: never).
    confirmed: int
    handled: int
    epoch: int
    #: The latest load raised `LookupError` ("no such entity"): nothing is held for the key.
    missing: bool
    _entity: Entity | None
    _now: Now | None
    #: The copy last loaded, kept when the kind has ``reload`` (`entity.reader`).
    previous: Entity | None = None
    #: The long-polls parked on this actor (`agora.runtime.polls`).
    parked: dict[Parked, None]

    #: `Actor._fold` (`agora.runtime.polls.fold`, which imports this module).
    _fold: Callable[
        [Entity, Effects, Slot, list[tuple[Effects, Slot]], list[Parked], dict[Slot, Any], Now],
        bool,
    ]

    if TYPE_CHECKING:

        @property
        def change(self) -> trio.Event:
            """`Actor.change`."""

        def signal(self, *, replace: bool = True, keys: Collection[str] | None = None) -> None:
            """`Actor.signal`."""

        def forget_entity(self) -> None:
            """`Actor.forget_entity`."""

    async def _load(self, group: list[tuple[Any, Slot]]) -> bool:
        """Load the entity if needed (unguarded stores); on failure fail the slots of
        ``group``, say False."""
        runtime = self.runtime
        try:
            if self._entity is None:
                self._entity = self._created()
            if self._entity is None:
                loaded_at = runtime.clock.now()  # read here: the loader runs in a thread
                self._entity = await runtime.store.read(reader(self, loaded_at))
            self.missing = False
        except LookupError as exc:  # "no such entity", as `EntityKind.load` documents
            self.missing = True
            for _, slot in group:
                slot.fail(exc)
            return False
        except StoreError as exc:
            failure = self._load_failed(exc)
            for _, slot in group:
                slot.fail(failure)
            return False
        except Exception:
            what = "failed to load"
            failure = entity_failed_here(log, self.kind.kind, self.key, what, bug=False)
            for _, slot in group:
                slot.fail(failure)
            return False
        return True

    async def _handle(self, command: Any, slot: Slot) -> None:
        runtime = self.runtime
        if runtime.store.guarded:
            await self._handle_guarded(command, slot)
            return
        entity = self._entity
        if entity is None:  # to load: as a group of one
            await self._handle_group([(command, slot)])
            return
        # `_handle_group` for one loaded entity's command, without its lists (one clock
        # reading if `Actor.can_run_inline` just made the entity).
        now, self._now = self._now, None
        if now is None:
            now = runtime.clock.now()
        try:
            # `object`: an entity written outside agora may not keep its Protocol's word.
            effects: object = entity.handle(command, now)
        except Exception as exc:
            self._entity = None  # maybe half-mutated: reload
            slot.fail(handle_raised(log, self.kind.kind, self.key, command, exc))
            return
        # (The identity test is all a command pays: subclasses of Effects are rare.)
        if type(effects) is not Effects and not isinstance(effects, Effects):
            self._entity = None  # maybe mutated before it returned: reload
            slot.fail(not_effects(entity_name(self.kind.kind, self.key), command, effects))
            return
        done = [(effects, slot)]
        if not self.parked:  # the usual case: no poll to fold, no list for them
            return await self._commit(done)
        folded: list[Parked] = []  # the polls this change answers in its turn
        intact = self._fold(entity, effects, slot, done, folded, {}, now)
        await self._commit(done, folded, intact)

    async def _handle_group(self, group: list[tuple[Any, Slot]]) -> None:
        """Run several queued commands in order and commit all their writes at once.

        Each `handle` sees the changes of those before it, as one at a time would; the
        replies are released only after the one commit, each with the change event that
        follows it (a read-only reply parked on it still wakes for a later command of the
        group). All or nothing, as one command: if the commit fails none is saved and
        every caller is told. A `handle` that raises fails its own command alone: the ones
        before it are committed, the entity reloads, the ones after it run as a group of
        their own. The polls a command wakes run right after it (`_fold`), those parked
        and those whose own command ran earlier in the group and was not ready."""
        runtime = self.runtime
        while group:
            if self._entity is None and not await self._load(group):
                return  # (loaded: no list of the slots, no coroutine)
            entity = self._entity
            assert entity is not None
            done: list[tuple[Effects, Slot]] = []
            folded: list[Parked] = []
            pending: dict[Slot, Any] = {}  # the polls' own commands run so far
            rest: list[tuple[Any, Slot]] = []
            intact = True
            # One clock reading: the group's commands run back to back in this one step.
            now = runtime.clock.now()
            for i, (command, slot) in enumerate(group):
                try:
                    # A LookupError from `handle` (say a KeyError) is a bug like any other:
                    # the entity may be half-mutated, so it is reloaded, not trusted.
                    effects: object = entity.handle(command, now)
                except Exception as exc:  # a refusal raised, or a bug
                    slot.fail(handle_raised(log, self.kind.kind, self.key, command, exc))
                    intact = False
                else:
                    if type(effects) is not Effects and not isinstance(effects, Effects):
                        where = entity_name(self.kind.kind, self.key)
                        slot.fail(not_effects(where, command, effects))
                        intact = False  # as when it raises: reload, run the rest apart
                        rest = group[i + 1 :]
                        break
                    done.append((effects, slot))
                    if (effects.changed and (self.parked or pending)) or slot.waiting is not None:
                        intact = self._fold(entity, effects, slot, done, folded, pending, now)
                if not intact:
                    rest = group[i + 1 :]
                    break
            group = rest
            await self._commit(done, folded, intact)

    async def _commit(
        self, done: list[tuple[Effects, Slot]], folded: Sequence[Parked] = (), intact: bool = True
    ) -> None:
        """Commit ``done``'s writes at once and release its replies in order (or fail them
        all), then answer the ``folded`` polls. Not ``intact``: the entity then reloads."""
        try:
            try:
                writes = (
                    done[0][0].writes if len(done) == 1 else [w for e, _ in done for w in e.writes]
                )
                await self.runtime.store.write(writes)
            except StoreError as exc:
                failure = self._commit_failed(exc)
                for _, slot in done:
                    slot.fail(failure)
                return
            except BaseException:
                # Cancelled (or worse) before the commit: memory may be ahead of the store,
                # so the next command reloads. (Once submitted, a commit cannot be
                # interrupted.)
                self._entity = None
                raise
            if not intact:
                self._entity = None  # half-mutated by the failed handle: reload
            for effects, slot in done:
                self._released(effects, slot)
        finally:
            for poll in folded:  # with their outcome, or (none came) to re-run themselves
                poll.answer()

    def _released(self, effects: Effects, slot: Slot, seen: trio.Event | None = None) -> None:
        """Count the command, wake waiters if it changed the entity, answer its caller.

        ``seen`` is the change event as it was when the command began. If it was set since
        (another node's change noticed while this command awaited its load or probe), the
        reply may predate that change: the caller gets that set event, so a long-poll re-runs
        at once instead of parking on a fresh event and missing the change.
        """
        missed = seen is not None and seen.is_set()
        self.handled += 1
        if isinstance(effects.reply, BaseException):
            # A refusal the entity raised and caught: its traceback holds the frames that
            # hold these effects, a reference cycle that `agora serve`'s collector policy
            # (`agora.server.heap`) would keep frozen until its next thaw. Raised again for
            # the caller, it gets a traceback of its own.
            effects.reply.__traceback__ = None
        if effects.changed:
            self.signal(keys=effects.wakes)
        if effects.updated:
            self.runtime.resources.updated(*effects.updated)
        if missed and seen is not None:
            slot.set(effects.reply, seen)
        else:
            slot.set(effects.reply, None, self.epoch, self)

    async def _handle_guarded(self, command: Any, slot: Slot) -> None:
        """`_handle` on a shared store: the database's version of the entity has the final say.

        A write commits only if the entity is still at the version this node loaded; a
        read-only reply from a cached entity is released only once a version probe confirms
        it is current (unless its kind says ``lagging_reads = True``: a copy at most one
        notification old is good enough for it), or if the copy was already shown current
        after the command arrived (``slot.since``): loaded, committed or probed since, as
        when a long-poll re-runs after this node's own commit woke it. The reply then
        reflects the database at that moment, which lies within the call, so no write
        acknowledged elsewhere before the call began can be missing. A stale copy is reloaded
        and `handle` re-run unseen, after a short random pause, for as long as `Reruns`
        allows, then `Busy` (retryable).
        """
        runtime = self.runtime
        kind, key = self.kind.kind, self.key
        reruns: Reruns | None = None  # made at the first conflict: most commands have none
        wrote = False  # the run overtaken last had writes: the command is a write
        while True:
            seen = self.change
            fresh = self._entity is None
            try:
                entity = await self.loaded()
            except LookupError as exc:
                slot.fail(exc)
                return
            except InternalError as exc:
                slot.fail(unsaved(exc) if wrote else exc)
                return
            try:
                effects: object = entity.handle(command, runtime.clock.now())
            except Exception as exc:
                self._entity = None
                slot.fail(handle_raised(log, kind, key, command, exc))
                return
            if type(effects) is not Effects and not isinstance(effects, Effects):
                self._entity = None
                slot.fail(not_effects(entity_name(kind, key), command, effects))
                return
            wrote = bool(effects.writes)
            try:
                current = await settle(self, effects, fresh, slot.since)
            except StoreError as exc:  # a failed commit is told as one, a failed probe as a read
                slot.fail(self._commit_failed(exc, "committing" if wrote else "probing"))
                return
            except BaseException:
                self._entity = None
                raise
            if current:
                self._released(effects, slot, seen)
                return
            reruns = reruns or Reruns()
            if not await reruns.another():
                break
        slot.fail(busy(entity_name(kind, key), runtime.guard))

    @property
    def in_memory(self) -> bool:
        """The entity is loaded: a command on it reads no rows."""
        return self._entity is not None

    async def loaded(self) -> Entity:
        """The entity, loaded from the store if needed; call while holding the turn.

        On a guarded store the version is read in the same snapshot (0 for one `_created`).

        Raises:
            LookupError: the entity does not exist ("no such entity", as `EntityKind.load`).
            InternalError: loading failed for another reason.
        """
        if self._entity is None:
            runtime = self.runtime
            loaded_at = runtime.clock.now()
            try:
                if runtime.store.guarded:
                    at = stamp()
                    entity: Entity | None = self._created()
                    self.version = 0  # (new everywhere, `_created`: never written)
                    if entity is None:
                        loaded, self.version = await runtime.store.read_versioned(
                            self.kind.kind, self.key, reader(self, loaded_at)
                        )
                        entity = loaded
                    self._entity, self.confirmed, self.missing = entity, at, False
                    return entity
                created = self._created()
                self._entity = (
                    created
                    if created is not None
                    else await runtime.store.read(reader(self, loaded_at))
                )
                self.missing = False
            except LookupError:
                self.missing = True
                raise
            except StoreError as exc:
                raise self._load_failed(exc) from exc
            except Exception as exc:
                what = "failed to load"
                raise entity_failed_here(log, self.kind.kind, self.key, what, bug=False) from exc
        return self._entity

    def vacant(self) -> bool:
        """Whether this actor holds nothing for its key, so dropping it loses nothing: its
        load raised `LookupError`, or its entity's ``vacant`` attribute is true (a key
        nothing was created under; see `agora.runtime.entity.Entity`)."""
        entity = self._entity
        if entity is None:
            return self.missing
        return getattr(entity, "vacant", False) is True

    def _commit_failed(self, exc: StoreError, doing: str = "committing") -> InternalError:
        """Forget the entity (memory may be ahead of the store); what its callers learn of
        the failed commit (or, ``doing`` "probing", of a failed version probe: a read;
        `entity_store_failed`)."""
        self._entity = None
        return entity_store_failed(self.runtime.store, self.kind.kind, self.key, doing, exc)

    def _load_failed(self, exc: StoreError) -> InternalError:
        """What the caller learns when the store failed to load the entity."""
        return entity_store_failed(self.runtime.store, self.kind.kind, self.key, "loading", exc)

    def _created(self, now: Now | None = None) -> Any:
        """The entity the kind's optional ``create(key, now)`` knows to be new, else None.

        A kind that knows a key names nothing stored yet (say, a handle it just drew at
        random) spares the load its worker-thread hop. A guarded store asks only a kind whose
        ``create_on_shared`` is true: its new keys no other process can have written, so the
        entity is at version 0 unread; another kind's "new" may be this process's knowledge
        alone (the router's index of the runs it has seen).
        """
        create = getattr(self.kind, "create", None)
        if create is None:
            return None
        if self.runtime.store.guarded and getattr(self.kind, "create_on_shared", False) is not True:
            return None
        return create(self.key, self.runtime.clock.now() if now is None else now)
