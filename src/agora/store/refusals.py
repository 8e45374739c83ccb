"""The writes and entity loads a store refused since open, for ``/healthz``.

An operator's finding: while a full disk refused 15,533 writes in 30 s, nothing an operator
can poll said so: ``/readyz`` checks that the database answers a read (a full disk, a
read-only file system or a malformed file leave reads working), and ``/healthz``'s ``commits``
merely stopped rising, as on an idle node. So the store counts its refusals as it raises them
(`agora.store.sqlite.Store.write`), and ``/healthz`` carries the count and the last one's time
and reason. The reason is in fixed words, never the driver's (a PostgreSQL error names the
server's address; the log has those). Trio thread only; keeps no exception (its traceback
would keep the writer's frames).

A second finding: during a PostgreSQL outage 39 write calls were refused and
``writes_refused`` rose by 1. Most write calls fail before their commit, while their entity
is loaded (or its cached copy's version probed), and the runtime cannot tell a write call
from a read one before the entity has handled it. So those refusals are counted apart
(``loads_refused``, `WriteRefusals.load_refused`, by `agora.runtime.failures`), and a write
refused for a database that was away or late says ``cause`` ``unavailable`` (`UNAVAILABLE`),
not null, which told an outage from a bad statement no better than "the log says why".
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Final

from agora.errors import STORE_CAUSES, StoreError
from agora.store.neutral import Conflict

__all__ = ["UNAVAILABLE", "WriteRefusals"]

#: ``last_write_error.cause`` of a write refused for a database that was unreachable or did
#: not answer in time (a retry may cure it), where the disk's causes do not apply.
UNAVAILABLE: Final = "unavailable"


def reason(error: StoreError) -> str:
    """Why ``error`` refused a write, in fixed words."""
    if error.cause is not None:
        return STORE_CAUSES[error.cause]
    if error.outcome_unknown:
        return "a commit did not finish or its outcome was lost; it may or may not have been saved"
    if error.permanent:
        return "a statement failed (a defect: the log has it)"
    return "the database was unavailable or did not answer in time; nothing was saved"


def cause(error: StoreError) -> str | None:
    """``last_write_error.cause`` of ``error``: the disk's (`agora.errors.StoreCause`),
    `UNAVAILABLE` for any other failure a retry may cure, None for a defect."""
    if error.cause is not None:
        return error.cause
    return None if error.permanent else UNAVAILABLE


class WriteRefusals:
    """How many writes failed, nothing saved or unknown, and the last one's time and reason;
    and how many calls failed loading their entity.

    A version conflict on a shared database (another node changed the entity first) is not
    one: the caller reruns its command, as designed.
    """

    __slots__ = ("_at", "_cause", "_reason", "count", "loads")

    def __init__(self) -> None:
        self.count = 0
        self.loads = 0
        self._at: float | None = None  # `time.time` of the last
        self._reason = ""
        self._cause: str | None = None

    def note(self, error: StoreError) -> None:
        """The store raises ``error`` for a write."""
        if isinstance(error, Conflict):
            return
        self.count += 1
        self._at, self._cause, self._reason = time.time(), cause(error), reason(error)

    def load_refused(self) -> None:
        """A call failed because its entity could not be loaded or its version probed (a
        write call among them: it never reached its commit)."""
        self.loads += 1

    def counters(self) -> dict[str, Any]:
        """``writes_refused``, ``loads_refused`` and ``last_write_error`` (None, or its
        ``at``, UTC ISO 8601 as the log's stamps, ``cause``: ``disk_full``, ``read_only``,
        ``io_error`` as in a refusal's ``cause``, ``unavailable`` (the database away or
        late), or None (a defect), and ``reason``)."""
        last = None
        if self._at is not None:
            stamp = datetime.fromtimestamp(self._at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
            last = {"at": f"{stamp[:-3]}Z", "cause": self._cause, "reason": self._reason}
        return {
            "writes_refused": self.count,
            "loads_refused": self.loads,
            "last_write_error": last,
        }
