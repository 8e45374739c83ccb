"""Accepting TCP connections: `trio.serve_listeners`, minus its log storm at capacity.

When ``accept`` fails because the process or the system is out of descriptors or memory
(EMFILE, ENFILE, ENOMEM, ENOBUFS), trio's loop logs it at ERROR with a full traceback
and retries in 0.1 s: ten tracebacks a second for as long as it lasts (85 of them, 70 KB,
in one test under ``ulimit -n 256``). Here such an episode is one WARNING line, without
a traceback, when it begins, and one INFO line saying how long it lasted when ``accept``
works again; meanwhile the loop retries every `RETRY_SECONDS`, new clients waiting in the
listen queue. The connection cap (`agora.server.descriptors`) keeps this rare: past it, a
client is accepted and answered 503. Nothing here reads or writes a connection.
"""

from __future__ import annotations

import errno
import logging
import os
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

log = logging.getLogger(__name__)

#: ``accept`` errors that say the process or the system is full, not that the listener broke.
CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: Seconds between two tries of ``accept`` while it fails for capacity.
RETRY_SECONDS = 0.1


async def serve_listeners(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    listeners: Sequence[trio.abc.Listener[trio.SocketStream]],
    *,
    handler_nursery: trio.Nursery,
) -> None:
    """Accept on every listener, running ``handler(stream)`` for each connection in
    ``handler_nursery``; the stream is closed (forcefully) once the handler returns.
    Runs until cancelled; closes the listeners on the way out.

    Raises:
        OSError: ``accept`` failed for a reason other than capacity.
    """
    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(_serve_one, listener, handler, handler_nursery)


async def _serve_one(
    listener: trio.abc.Listener[trio.SocketStream],
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    handler_nursery: trio.Nursery,
) -> None:
    async with listener:
        full_since: float | None = None  # when the current capacity episode began
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in CAPACITY_ERRNOS:
                    raise
                if full_since is None:
                    full_since = trio.current_time()
                    log.warning(
                        "accept failed: %s (%s); new connections wait in the listen queue,"
                        " retried every %g s (said once until accept works again)",
                        errno.errorcode[exc.errno],
                        os.strerror(exc.errno),
                        RETRY_SECONDS,
                    )
                await trio.sleep(RETRY_SECONDS)
                continue
            if full_since is not None:
                log.info("accepting again after %.1f s", trio.current_time() - full_since)
                full_since = None
            handler_nursery.start_soon(_run, handler, stream)


async def _run(
    handler: Callable[[trio.SocketStream], Awaitable[None]], stream: trio.SocketStream
) -> None:
    try:
        await handler(stream)
    finally:
        await trio.aclose_forcefully(stream)
