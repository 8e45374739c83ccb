"""Bounds on the PostgreSQL round trips a caller waits on: a deadline, then the connection cut.

A PostgreSQL that stops answering without closing its sockets (SIGSTOP on the postmaster, a
paused VM, storage that hangs) leaves libpq waiting on its socket for ever: the server's
kernel still takes the bytes and answers TCP keepalives, and a server-side
``statement_timeout`` needs the server to run. So the store keeps the deadline itself (its
``commit_timeout``) and, once it passes, gives up on the worker thread that waits and cuts
that thread's connection, so the thread fails at once as on a lost connection and ends.

`Cutter` keeps a duplicate of a connection's socket so that any thread can cut it
(``shutdown`` both ways) while another waits on it inside libpq. A duplicate, not the
descriptor's number: libpq closes its own descriptor when it notices the connection lost,
and that number may by then name another socket. The duplicate is closed with the
connection (`agora.store.pg_sql.PgConn.close`).

`Lease` is the connections one worker thread uses for a piece of work (a read, a cluster
lock's session) that the Trio side may give up on. Giving up (`Lease.end`) while the thread
is inside cuts them, and the thread closes them as it leaves; a thread that starts after it
was given up on runs nothing. Only then may a connection go back to a pool: never while an
abandoned thread may still use it. `in_thread` runs such work with the deadline. This
module knows nothing of entities or statements.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import TYPE_CHECKING, Protocol, TypeVar

import trio

from agora.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")
L = TypeVar("L", bound="Link")


class Link(Protocol):
    """A connection a `Lease` can cut and close."""

    def cut(self) -> None:
        """Make every wait on the connection fail at once (any thread)."""

    def close(self) -> None:
        """Close the connection (the thread that uses it, or when nothing does)."""


class GivenUp(StoreError):
    """The work's `Lease` was given up on before its thread started: nothing ran."""


class Cutter:
    """A duplicate of one connection's socket, to cut the connection from any thread."""

    def __init__(self, fd: int) -> None:
        """Args: fd: the connection's socket (libpq's ``PQsocket``), duplicated here."""
        self._sock: socket.socket | None = socket.socket(fileno=os.dup(fd)) if fd >= 0 else None
        self._lock = threading.Lock()
        #: `cut` was called: the connection's next failure is this node's doing, not the
        #: server's, and the connection is replaced before its next use.
        self.used = False

    def cut(self) -> None:
        """Shut the socket down both ways: libpq's waits on it end as for a lost peer."""
        self.used = True
        with self._lock:
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Let go of the duplicate (after the connection itself is closed)."""
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()


class Lease:
    """Connections one worker thread uses, which the Trio side may give up on."""

    def __init__(self, links: list[Link] | None = None) -> None:
        self.links: list[Link] = links if links is not None else []
        self._lock = threading.Lock()
        self._busy = False
        self._over = False

    @property
    def given_up(self) -> bool:
        """Whether the Trio side gave up on the work (`end`)."""
        return self._over

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the calling (worker) thread, unless the lease was given up on.

        Raises:
            GivenUp: it was, before ``fn`` could start.
        """
        with self._lock:
            if self._over:
                raise GivenUp("read failed: given up on before it started")
            self._busy = True
        try:
            return fn()
        finally:
            with self._lock:
                self._busy = False
                left: list[Link] = self.links if self._over else []
            for link in left:
                link.close()

    def adopt(self, link: T) -> T:
        """Add ``link`` (a `Link` the thread just opened) to the lease; cut at once if the
        lease was given up on meanwhile."""
        with self._lock:
            self.links.append(link)  # type: ignore[arg-type]
            if self._over:
                link.cut()  # type: ignore[attr-defined]
        return link

    def end(self) -> list[Link]:
        """Give the lease up; the connections no thread uses any more (to close or pool):
        none while its thread is still inside, whose connections are cut and then closed
        by that thread."""
        with self._lock:
            self._over = True
            if self._busy:
                for link in self.links:
                    link.cut()
                return []
            links, self.links = self.links, []
        return links


async def in_thread(lease: Lease, fn: Callable[[], T], seconds: float, what: str) -> T:
    """``lease.run(fn)`` in a worker thread, for at most ``seconds``.

    The thread is abandoned if the caller is cancelled or the deadline passes; the caller
    then ends the lease (`Lease.end`), which cuts the thread's connections.

    Raises:
        StoreError: the deadline passed (retryable: nothing the thread did is kept).
    """
    with trio.move_on_after(seconds):
        return await trio.to_thread.run_sync(lease.run, fn, abandon_on_cancel=True)
    raise unanswered(what, seconds)


def unanswered(what: str, seconds: float) -> StoreError:
    """The error of a round trip (``what``: "read failed") whose deadline of ``seconds``
    passed. The deadline runs on this node's clock, which also runs while the node itself
    is stopped (SIGSTOP, a paused VM, a starved CPU): an operator's paused node blamed a
    healthy PostgreSQL, so the words leave room for that."""
    return StoreError(
        f"{what}: PostgreSQL did not answer within {seconds:g} s (or this node was paused)"
    )


async def opened(open_: Callable[[Lease], L]) -> L:
    """``open_(lease)`` (a connection, adopted by the lease) in a worker thread, left behind
    if the caller is cancelled: the thread then closes what it opens."""
    lease = Lease()
    try:
        link = await trio.to_thread.run_sync(
            lease.run, lambda: open_(lease), abandon_on_cancel=True
        )
    except BaseException:
        for left in lease.end():  # the thread's, if it finished: its caller is gone
            left.close()
        raise
    lease.end()
    return link
