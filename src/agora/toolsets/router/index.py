"""Which workflow runs may exist in the store: a Bloom filter over their ids.

A new run's first command (its ``plan_work``) would otherwise read the store, in a worker
thread, only to learn there is nothing there, and go through the actor's mailbox and task
because an actor with no entity loaded cannot run a command inline. With the filter, the run
entity's kind answers ``create`` for a run id the filter has never seen: the store cannot
hold it, so the command runs at once on an empty run (see `agora.runtime.handling`).

The filter has no false negatives, which is what makes that safe. Runs are never deleted,
and on an unguarded store (SQLite: one process per database file) every run is inserted by
this process's run entities, which add its id here when they build the insert, before the
commit (a commit that then fails leaves a harmless false positive). The runs already stored
are added by one scan (`index_runs`, a background task started with the server); until it
has finished the filter says "may exist" for every id, so every run is loaded as before. A
false positive only costs that read. Guarded stores (PostgreSQL, several nodes) never ask:
another node may have inserted the run. One filter per store, whatever the runtimes on it.
"""

from __future__ import annotations

import hashlib
import logging
import weakref
from typing import TYPE_CHECKING, Any, Final

from agora.runtime.background import node_local
from agora.toolsets.router.sql import run_ids

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime
    from agora.store.neutral import ReadConn

log = logging.getLogger(__name__)

#: Bits of the filter (2 MiB). With 3 probes, about 0.5% of new ids read the store anyway
#: once a million runs are stored, 20% at five million: never wrong, only slower.
BITS: Final = 1 << 24
_MASK: Final = BITS - 1


def _probes(run_id: str) -> tuple[int, int, int]:
    h = int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=12).digest(), "big")
    return h & _MASK, (h >> 32) & _MASK, (h >> 64) & _MASK


def _set(bits: bytearray, run_id: str) -> None:
    for p in _probes(run_id):
        bits[p >> 3] |= 1 << (p & 7)


class RunIndex:
    """The filter of one store. Used from the Trio thread only (the scan fills its own)."""

    def __init__(self) -> None:
        self._bits = bytearray(BITS // 8)
        #: The runs stored before this process began are in (`merge` was called).
        self.complete = False

    def add(self, run_id: str) -> None:
        """Note that ``run_id`` may be stored from now on."""
        _set(self._bits, run_id)

    def absent(self, run_id: str) -> bool:
        """Whether the store certainly holds no run ``run_id`` (False while incomplete)."""
        if not self.complete:
            return False
        bits = self._bits
        return any(not bits[p >> 3] & (1 << (p & 7)) for p in _probes(run_id))

    def merge(self, scanned: bytes) -> None:
        """Add the filter of the runs a scan found, and call the index complete."""
        width = len(self._bits)
        both = int.from_bytes(self._bits, "little") | int.from_bytes(scanned, "little")
        self._bits = bytearray(both.to_bytes(width, "little"))
        self.complete = True


def scan(conn: ReadConn) -> bytes:
    """The filter of every run stored now (runs in a worker thread)."""
    bits = bytearray(BITS // 8)
    for run_id in run_ids(conn):
        _set(bits, run_id)
    return bytes(bits)


_INDEXES: weakref.WeakKeyDictionary[Any, RunIndex] = weakref.WeakKeyDictionary()


def index_of(store: Any) -> RunIndex:
    """The filter of ``store`` (made empty and incomplete on first use)."""
    index = _INDEXES.get(store)
    if index is None:
        index = _INDEXES[store] = RunIndex()
    return index


@node_local
async def index_runs(runtime: Runtime) -> None:
    """Fill the store's filter with the runs stored so far, once (a background task).

    Nothing to do on a guarded store, which never asks the filter.
    """
    store = runtime.store
    if store.guarded:
        return
    index = index_of(store)
    if not index.complete:
        index.merge(await runtime.read(scan))
        log.debug("router run index complete")
