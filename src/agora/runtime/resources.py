"""Who subscribed to which resource URI, and telling them after a commit changed it.

A session that subscribes to a resource registers itself here with the set of URIs it
watches; an entity names the URIs a command changed in `Effects.updated` and the actor
calls `ResourceHub.updated` once the commit is durable (so does `Runtime.resources_updated`
for changes made outside actors). `updated` never awaits: each subscriber queues the URI
and sends ``notifications/resources/updated`` from its own task, so a slow client cannot
hold up the committing actor. Subscribers are held weakly: a session that goes away
without unsubscribing leaves nothing behind. Knows nothing of MCP or transports.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable


class Subscriber(Protocol):
    """A session that wants to hear of changed resources (the server's `Connection`)."""

    def resource_changed(self, uri: str) -> None:
        """Queue a notification for ``uri``; must not block or raise."""
        ...


class ResourceHub:
    """Subscriptions by URI, for one runtime."""

    def __init__(self) -> None:
        self._by_uri: dict[str, weakref.WeakSet[Subscriber]] = {}
        self._watched: weakref.WeakKeyDictionary[Subscriber, frozenset[str]] = (
            weakref.WeakKeyDictionary()
        )

    def watch(self, subscriber: Subscriber, uris: Iterable[str]) -> None:
        """Make ``uris`` the set of URIs ``subscriber`` hears about (replacing the last set)."""
        new = frozenset(uris)
        old = self._watched.get(subscriber, frozenset())
        for uri in old - new:
            self._drop(uri, subscriber)
        for uri in new - old:
            self._by_uri.setdefault(uri, weakref.WeakSet()).add(subscriber)
        if new:
            self._watched[subscriber] = new
        else:
            self._watched.pop(subscriber, None)

    def forget(self, subscriber: Subscriber) -> None:
        """Stop telling ``subscriber`` anything (its session ended)."""
        self.watch(subscriber, ())

    def subscribers(self, uri: str) -> int:
        """How many sessions watch ``uri`` now."""
        return len(self._by_uri.get(uri, ()))

    def updated(self, *uris: str) -> None:
        """Tell every subscriber of each of ``uris`` that it changed. Never awaits."""
        for uri in uris:
            watchers = self._by_uri.get(uri)
            if watchers:
                for subscriber in list(watchers):
                    subscriber.resource_changed(uri)

    def _drop(self, uri: str, subscriber: Subscriber) -> None:
        watchers = self._by_uri.get(uri)
        if watchers is not None:
            watchers.discard(subscriber)
            if not watchers:
                del self._by_uri[uri]
