"""Clients that close their connection while a request is pending, noticed by one task.

Streamable HTTP must know when a client hangs up before its answer
(`agora.transports.hangup_policy` says what that does to the call). A watch task per request
cost every HTTP call about a fifth of its server CPU (`bench/peer.py`: the task, its cancel
scope, an epoll re-arm and its removal). Here the pending requests' sockets sit in one epoll set
of this module's own, registered for the peer's close alone (``EPOLLRDHUP``, once): a request
costs two system calls (`add`, `discard`), a client that sends the next request early
(pipelined) wakes nothing, and one task waits on the set for every connection. The event loop
watches the set's descriptor like a socket's.

Where the system has no epoll (Trio's other backends), `add` answers False and the caller
watches with a task of its own. Nothing here reads a socket or knows about HTTP.
"""

from __future__ import annotations

import select
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

#: The peer's close (or half-close), its reset or an error; reported once, then re-armed by
#: the next `add`.
CLOSED = getattr(select, "EPOLLRDHUP", 0) | getattr(select, "EPOLLONESHOT", 0)


class HangupWatch:
    """The sockets of requests still to be answered, watched for their client's close.

    Args:
        nursery: Runs the one watching task, started by the first `add`; it must be
            cancelled when its owner shuts down.
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._epoll: select.epoll | None = None
        self._waiting: dict[int, Callable[[], None]] = {}

    def add(self, fd: int, hung_up: Callable[[], None]) -> bool:
        """Call ``hung_up`` once if the client of socket ``fd`` closes it before `discard`;
        False (nothing watched) where the system has no epoll, or the watching task cannot
        start (its nursery is closed: shutting down)."""
        if self._epoll is None:
            if not hasattr(select, "epoll"):
                return False
            epoll = select.epoll()
            try:
                self._nursery.start_soon(self._run, epoll)
            except RuntimeError:
                epoll.close()
                return False
            self._epoll = epoll
        self._epoll.register(fd, CLOSED)
        self._waiting[fd] = hung_up
        return True

    def discard(self, fd: int, hung_up: Callable[[], None]) -> None:
        """Stop watching ``fd`` for ``hung_up`` (its request is answered). A socket whose
        client hung up is closed at once, so its number may already be another connection's:
        only the watch ``hung_up`` made is ended."""
        if self._waiting.get(fd) is hung_up and self._epoll is not None:
            del self._waiting[fd]
            self._epoll.unregister(fd)

    async def _run(self, epoll: select.epoll) -> None:
        try:
            while True:
                await trio.lowlevel.wait_readable(epoll.fileno())
                for fd, _ in epoll.poll(0):
                    hung_up = self._waiting.pop(fd, None)
                    if hung_up is not None:
                        epoll.unregister(fd)
                        hung_up()
        finally:
            self._epoll = None
            self._waiting.clear()
            epoll.close()
