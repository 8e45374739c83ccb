"""Connections past ``max_connections``: each gets its 503, a probe its real answer, and
the refusals in progress stay within `MAX_REFUSING` however many connections arrive.

A refusal waits up to `REFUSE_TIMEOUT` for the request head, to tell a liveness or
readiness probe (`PROBES`) from the rest, and holds a descriptor meanwhile. If those waits
kept their slots, connections that send nothing would fill them all, and a probe arriving
behind them would get the bare 503: a burst of 34 silent connections had a full node fail
its probes for two seconds. So when every slot is taken, a newcomer takes the slot of the
oldest refusal still waiting for its head, which is sent the bare 503 and closed at once;
only when every refusal is answering or lingering is the newcomer itself sent the bare 503
and closed. A probe sends its head at once, so it is answered unless `MAX_REFUSING`
newer connections arrive before its head does. The descriptors held never exceed
`MAX_REFUSING` but for an instant (an evicted refusal closes at its next turn, without
waiting for anything). Nothing here reads a request: `HttpConnection.refuse` does.
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import TYPE_CHECKING

from agora.server import start
from agora.server.descriptors import MAX_REFUSING

if TYPE_CHECKING:
    from agora.transports.http import HttpConnection
    from agora.transports.http1 import Head

#: Seconds a client over the connection cap has to send its head before the 503.
REFUSE_TIMEOUT = 1.0
#: What a client over the connection cap is still answered: liveness and readiness probes.
PROBES = frozenset(path for path, _title in start.PROBES)
#: What a refusal evicted for a newer one, or a newcomer with no slot, gets.
SHORT_503 = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nretry-after: 1\r\n"
    b"connection: close\r\n\r\n"
)
FULL = "server full: too many connections; retry later"


class Overflow:
    """The refusals of the connections past the cap, oldest first."""

    def __init__(self) -> None:
        #: Refusals in progress (``/healthz`` `refusing`).
        self.refusing = 0
        #: Those not yet known to be past their head's wait, oldest first.
        self._waiting: dict[HttpConnection, None] = {}

    async def refuse(self, conn: HttpConnection) -> None:
        """Refuse ``conn`` (`HttpConnection.refuse`) in a slot of its own, else at once."""
        if self.refusing >= MAX_REFUSING and not self._evict():
            shut_out(conn.fd)
            return
        self.refusing += 1
        self._waiting[conn] = None
        try:
            await conn.refuse(503, FULL)
        finally:
            self.refusing -= 1
            self._waiting.pop(conn, None)
        if conn.evicted:
            shut_out(conn.fd)

    def _evict(self) -> bool:
        """End the oldest refusal still waiting for its peer's head; False if none is."""
        while self._waiting:
            conn = next(iter(self._waiting))
            del self._waiting[conn]
            if conn.deadline != math.inf:  # (else answering or lingering: never again waiting)
                conn.evicted = True
                conn.timer.cancel()
                return True
        return False


def is_probe(head: Head) -> bool:
    """``GET /healthz`` or ``GET /readyz`` (any query), without a body to wait for."""
    return head.method == "GET" and head.target.partition("?")[0] in PROBES and not head.has_body


def shut_out(fd: int) -> None:
    """Write `SHORT_503` if the kernel takes it at once, never waiting (the caller closes)."""
    with contextlib.suppress(OSError):
        os.write(fd, SHORT_503)
