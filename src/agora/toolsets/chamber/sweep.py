"""The expiry sweep: an attempt abandoned past its TTL is published as an expired card.

Without it an agent could keep its good runs and drop the bad ones by never sealing them.
`sweep_expired` finds unsealed attempts whose TTL has passed (committed rows, in expiry
order, with a cursor so every pass makes progress) and sends each one `Expire` through its
actor, which seals the card with outcome ``expired`` (``solved`` for a room solved in time)
and ``sealed_by: expiry`` (signed when a key is configured); a ``seal_attempt`` that
comes first makes the same card. The server runs it as a background task every
`SWEEP_EVERY` seconds. Nothing here builds SQL or cards itself.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

from agora.toolsets.chamber import store
from agora.toolsets.chamber.commands import Expire

if TYPE_CHECKING:
    import datetime as dt

    from agora.runtime.registry import Runtime
    from agora.store.neutral import ReadConn
    from agora.toolsets.chamber.service import Chamber

#: Seconds between two sweeps: an abandoned attempt's card appears at most this late.
SWEEP_EVERY: Final = 60.0
#: Attempts read per query.
BATCH: Final = 500

Row = tuple[str, str]


def _due(conn: ReadConn, *, now: dt.datetime, after: tuple[str, str]) -> list[Row]:
    return store.expired_unsealed(conn, now, after, BATCH)


async def sweep_expired(runtime: Runtime, chamber: Chamber) -> int:
    """Publish the card of every attempt that expired unsealed; return how many were sealed.

    Args:
        runtime: The server runtime.
        chamber: The chamber handlers (attempt kind and signing key).

    Returns:
        The number of attempts handed to their actors.
    """
    signer, _ = await chamber.signer(runtime)
    now = runtime.clock.wall()
    after = ("", "")
    done = 0
    while True:
        rows = await runtime.read(functools.partial(_due, now=now, after=after))
        for _expires, handle in rows:
            await runtime.call(chamber.kind, handle, Expire(signer=signer))
        done += len(rows)
        if len(rows) < BATCH:
            return done
        after = rows[-1]
