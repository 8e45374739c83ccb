"""What a node answers a balancer or a monitor: ``/healthz`` (alive, with its counters) and
``/readyz`` (ready: its database answers).

``/healthz`` is liveness: the process serves HTTP, whatever its database does, and it
carries the counters an operator reads. It kept answering ``ok: true`` while PostgreSQL was
stopped or stalled, so a balancer pointed at it sent agents to nodes that could only fail
their calls. ``/readyz`` is readiness: 200 once the store answered a trivial read within
`READY_SECONDS`, else 503 with a fixed reason (never the database's address or the driver's
words; the log has those), and 503 once shutdown began (on a connection already open: the
listener closes as shutdown begins, so a new one is refused). No I/O here but that read.
It checks reads only: a disk that refuses writes (full, read-only) or a malformed file leaves
reads working and ``/readyz`` at 200, by choice (a node out of rotation gets no writes, so none
would show the disk took them again); ``/healthz``'s store counters ``writes_refused`` and
``last_write_error`` (`agora.store.refusals`) and ``checkpoint_failures`` show it, and
``loads_refused`` the calls refused at their entity's load (most of them during an outage).

The log tells a change of readiness, not each probe (balancers probe every second or so): the
first probe that fails is one WARNING with the reason, the probes that fail after it are
DEBUG, and the first that succeeds again is one INFO line with how long the node was not
ready and how many probes it refused (`Readiness`).
"""

from __future__ import annotations

import logging
import sys
import weakref
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.server import heap
from agora.server.process import resident_bytes
from agora.store.episode import Episode
from agora.web.http import Response

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)

#: Seconds ``/readyz`` waits for the database's answer.
READY_SECONDS: Final = 2.0


def health(runtime: Runtime, **front: Any) -> Response:
    """The ``/healthz`` answer: alive, with the node's counters (``front``: the transport's
    own, such as ``in_flight``, ``connections`` and ``sessions``)."""
    return Response.json(
        {
            "ok": True,
            **front,
            "actors": len(runtime.registry),
            "parked": runtime.registry.parked(),
            "background_tasks": dict(sorted(runtime.background.items())),
            "store": runtime.counters(),
            "switch_interval_ms": round(sys.getswitchinterval() * 1e3, 3),
            "rss_bytes": resident_bytes(),
            "collector": keeper.counters() if (keeper := heap.installed()) else None,
        }
    )


class Readiness:
    """What the probes of one runtime said last: the log tells its changes only."""

    __slots__ = ("_episode",)

    def __init__(self) -> None:
        self._episode = Episode()  # its strikes: the probes refused

    def refused(self, why: str) -> None:
        """A probe answered 503 for ``why``: the first since ready is a WARNING."""
        if not self._episode.strike():
            log.debug("still not ready: %s", why)
            return
        log.warning("not ready: %s; /readyz answers 503 until the database answers again", why)

    def answered(self) -> None:
        """A probe answered 200: after refused ones, one INFO line."""
        if (length := self._episode.end()) is None:
            return
        log.info(
            "ready again, after %.1f s not ready (%d probes answered 503)",
            length, self._episode.count,
        )  # fmt: skip


_told: weakref.WeakKeyDictionary[Runtime, Readiness] = weakref.WeakKeyDictionary()


async def readiness(runtime: Runtime, *, draining: bool = False) -> Response:
    """The ``/readyz`` answer: ``{"ok": true}`` (200) if the database answered a trivial read
    within `READY_SECONDS` (not queued behind the tool reads: `Store.answers`), else
    ``{"ok": false, "reason": ...}`` (503), as while the server shuts down (``draining``:
    it refuses new calls, so a balancer must stop sending them; the shutdown logs itself)."""
    if draining:
        return Response.json({"ok": False, "reason": "the server is shutting down"}, 503)
    told = _told.get(runtime)
    if told is None:
        told = _told[runtime] = Readiness()
    with trio.move_on_after(READY_SECONDS):
        try:
            await runtime.store.answers()
        except StoreError as exc:
            told.refused(one_line(exc))
            return Response.json({"ok": False, "reason": "the database is unavailable"}, 503)
        told.answered()
        return Response.json({"ok": True}, 200)
    reason = f"the database did not answer within {READY_SECONDS:g} s"
    told.refused(reason)
    return Response.json({"ok": False, "reason": reason}, 503)
