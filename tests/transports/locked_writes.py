"""A server shut down while another process holds its SQLite file's write lock.

Shared by the tests of what a call whose write waits for that lock answers at shutdown,
whatever its transport: the lock taken by a second connection (``BEGIN EXCLUSIVE``, as a
backup or an operator's shell would), a chamber entry sent, the server left once the entry
waits for its commit, and the lock given back ``release_after`` seconds later (never: None).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import trio
from http_support import serve

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

#: A chamber entry's arguments (an anonymous participant's claims).
ENTRY: dict[str, Any] = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}
TIMEOUT = 30


async def shut_down_while_locked(
    db: Path,
    enter: Callable[[int], Awaitable[None]],
    *,
    commit_timeout: float,
    release_after: float | None,
    grace: float = 0.3,
) -> None:
    """Serve the chamber on ``db`` (the writer in a thread: a child process would outlive
    the test by its stuck BEGIN), run ``enter(port)`` while the lock is held, and shut the
    server down once the entry waits for its commit."""
    other = sqlite3.connect(db, isolation_level=None)

    async def release(after: float) -> None:
        await trio.sleep(after)
        other.execute("ROLLBACK")

    config = {"db": str(db), "grace_seconds": grace, "commit_timeout": commit_timeout}
    try:
        with trio.fail_after(TIMEOUT):
            async with (
                trio.open_nursery() as nursery,
                serve(toolsets=["chamber"], writer_process=False, **config) as server,
            ):
                other.execute("BEGIN EXCLUSIVE")  # another process writes: the entry waits
                nursery.start_soon(enter, server.port)
                while server.app.in_flight == 0:  # noqa: ASYNC110 - counted, as a call is
                    await trio.sleep(0.01)
                await trio.sleep(0.1)  # on to its commit, which waits for the lock
                if release_after is not None:
                    nursery.start_soon(release, release_after)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def entries_stored(db: Path) -> int:
    """The chamber attempts ``db`` holds."""
    with sqlite3.connect(db) as conn:
        count: int = conn.execute("SELECT count(*) FROM chamber_attempts").fetchone()[0]
    return count
