"""Following changes made by other nodes of a shared store: stale copies dropped, waiters woken.

On a guarded store (PostgreSQL) every commit that bumps entity versions sends a NOTIFY with
``kind\\tkey\\tversion`` lines inside its transaction (a shared SQLite file is polled
instead). `follow` listens for them: a live actor holding an older copy drops it and wakes
its waiters (`Runtime.poll`, `poll_many`), which re-run their command on a fresh load.
Notes sent by this node's own writer are skipped.

PostgreSQL keeps no notification for an absent listener, so two safety nets bound what a
lost one can cost: after the listener reconnects, every actor drops its copy and every
waiter re-checks; and a sweep every `SWEEP_SECONDS` probes the versions of the entities that
have parked waiters. Reads never depend on this (a cached read is confirmed by a version
probe, a write by its guard): only wake-up latency does. Knows nothing of any toolset.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.neutral import parse_payload, parse_uris

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)

#: Seconds between two sweeps over the entities with parked waiters.
SWEEP_SECONDS = 2.0


class Follower:
    """What a node learned from other nodes' commits (counters for benches and tests)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.notes = 0
        self.dropped = 0
        self.connections = 0

    def on_note(self, payload: str, pid: int) -> None:
        """One notification: drop the older copies it names and wake their waiters."""
        store = self.runtime.store
        if pid == getattr(store, "writer_pid", None):
            return  # our own commit: our actors already hold what it wrote
        self.notes += 1
        self.on_changes(parse_payload(payload), parse_uris(payload))

    def on_changes(self, changes: list[tuple[str, str, int]], uris: list[str]) -> None:
        """Entities (kind, key, version) and resource URIs another node or process changed."""
        registry = self.runtime.registry
        for kind, key, version in changes:
            actor = registry.named(kind, key)
            if actor is not None and actor.changed_elsewhere(version):
                self.dropped += 1
        if uris:  # sessions subscribed here hear of changes committed on other nodes
            self.runtime.resources.updated(*uris)

    def on_connect(self, _pid: int) -> None:
        """A (re)connected listener: whatever was missed meanwhile, every copy re-checks."""
        self.connections += 1
        if self.connections > 1:
            self.recheck_all()

    def recheck_all(self) -> None:
        """Drop every cached copy and wake every waiter (after a listener gap)."""
        for actor in self.runtime.registry.actors():
            actor.forget_entity()
            actor.signal()

    async def sweep_once(self) -> int:
        """Probe the versions of the entities with waiters; wake the stale ones; how many."""
        parked = [a for a in self.runtime.registry.actors() if a.waiters]
        if not parked:
            return 0
        found = await self.runtime.store.probe([(a.kind.kind, a.key) for a in parked])
        woken = 0
        for actor in parked:
            if actor.changed_elsewhere(found.get((actor.kind.kind, actor.key), 0)):
                woken += 1
        return woken


async def follow(
    runtime: Runtime,
    follower: Follower,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen for other nodes' changes and sweep for missed ones, until cancelled.

    A shared SQLite file has no NOTIFY: its store's ``watch`` polls for other processes'
    commits instead (`agora.store.sqlite_shared`).
    """
    store = runtime.store
    watch = getattr(store, "watch", None)
    if watch is not None:
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: watch(follower.on_changes, task_status=task_status)
            )
            follower.on_connect(0)
            nursery.start_soon(_sweep, follower)
            task_status.started()
        return
    from agora.store.listen import listen

    url: str = getattr(store, "url", "")
    channel: str = getattr(store, "channel", "")
    inline: bool = getattr(store, "inline", False)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: listen(
                url,
                channel,
                follower.on_note,
                follower.on_connect,
                inline=inline,
                outage=store.outage,
                task_status=task_status,
            )
        )
        nursery.start_soon(_sweep, follower)
        task_status.started()


async def _sweep(follower: Follower) -> None:
    outage = follower.runtime.store.outage
    while True:
        await trio.sleep(SWEEP_SECONDS)
        try:
            await follower.sweep_once()
        except StoreError as exc:  # the database is away: an event, told once (`Outage`)
            if outage is not None and not exc.permanent:
                outage.failed("the sweep for missed changes", exc)
            else:
                what = one_line(exc)
                log.warning("the sweep for missed changes failed (%s); it runs again", what)
        except Exception:
            log.exception("the sweep for missed changes failed; it runs again shortly")
