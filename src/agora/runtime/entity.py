"""What an entity is: a pure behaviour object the actor loop drives.

An entity owns one thing's state (a chess table, a chamber attempt, ...). Its `handle` is
synchronous and does no I/O: it mutates its own state and returns `Effects`: the reply, the
SQL writes that make the change durable, and whether waiters should wake. The actor loop in
`agora.runtime.actor` is the only code that awaits: it commits the writes, then replies.
If `handle` raises, or the commit fails, the actor reloads the entity from the store, so a
half-applied mutation never survives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agora.store.jobs import Write

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from agora.runtime.clock import Now
    from agora.store.neutral import ReadConn

__all__ = ["Effects", "Entity", "EntityKind", "Write", "reader"]


@dataclass(slots=True)
class Effects:
    """What handling one command produced.

    Attributes:
        reply: The value handed back to the caller once `writes` are committed. If it is an
            exception instance, the caller gets it raised (after the commit).
        writes: SQL statements, committed atomically before the reply is released.
        changed: True when waiters (long-polls) should wake and re-read.
        updated: URIs of resources this command changed; sessions subscribed to them get
            ``notifications/resources/updated`` once the writes are committed.
        wakes: With ``changed``, the keys of the long-polls the change concerns (see
            ``wait_key`` of `Runtime.poll`); None (the default) wakes them all. Long-polls
            without a key wake on every change.
    """

    reply: Any = None
    writes: list[Write] = field(default_factory=list)
    changed: bool = False
    updated: Sequence[str] = ()
    wakes: Collection[str] | None = None


class Entity(Protocol):
    """A pure state machine for one keyed thing.

    An entity may have a ``vacant`` attribute (read with ``getattr``, default False): true
    while it stands for a key nothing was created under (a "not yet created" entity that
    `EntityKind.load` returned for a missing row). The runtime then drops its actor as soon
    as its callers are done with it, rather than after ``actor_idle_seconds``, so looking up
    made-up keys holds no memory; the next command on the key loads it again. It must be
    true only when nothing in memory would be lost, and a command that creates the entity
    must leave it false.
    """

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply one command; return its effects. Must not do I/O."""
        ...


class EntityKind(Protocol):
    """Loads entities of one kind from committed rows.

    A kind may set ``lagging_reads = True`` (read with ``getattr``, default False): on a
    shared PostgreSQL store its read-only replies from a cached entity are then released
    without a version probe, so they may lag a change made on another node by as long as
    that node's notification takes. For listings that tolerate it.

    A kind may also have ``reload(conn, key, now, previous) -> Entity``: `load` for an
    entity whose copy ``previous`` (the one it last loaded, since dropped: changed by
    another node, or by a command that failed) is at hand. It may reuse what ``previous``
    read from the store and the store never changes (a topic's messages, which are only
    ever added), and read only the rest; never what its commands changed in memory, which
    may never have been committed. On a guarded store it reads in the same snapshot as the
    version.
    """

    kind: str

    def load(self, conn: ReadConn, key: str, now: Now) -> Entity:
        """Build the entity for ``key`` from the store (runs in a worker thread).

        ``conn`` is the neutral connection (`agora.store.neutral.ReadConn`): ``?``
        statements, rows by position or name; on PostgreSQL it reads one snapshot.

        Raises:
            LookupError: if the entity does not exist and cannot be created on demand.
        """
        ...


class Loading(Protocol):
    """What `reader` needs of an actor: its kind and key, and the copy it last loaded."""

    kind: EntityKind
    key: str
    previous: Entity | None


def reader(actor: Loading, at: Now) -> Callable[[ReadConn], Entity]:
    """The load of ``actor``'s entity, to run in a worker thread: the kind's ``reload`` of
    the copy last loaded if it has one (and a copy was), else its ``load``. What a kind with
    ``reload`` loads is kept as ``actor.previous``, for the next."""
    kind, key, previous = actor.kind, actor.key, actor.previous
    reload = getattr(kind, "reload", None)
    if reload is None:
        return lambda conn: kind.load(conn, key, at)

    def read(conn: ReadConn) -> Entity:
        entity: Entity = (
            kind.load(conn, key, at) if previous is None else reload(conn, key, at, previous)
        )
        actor.previous = entity
        return entity

    return read
