"""Shared pieces of the store tests: an items table and a gate that holds the writer thread.

The gate is a SQLite function registered on the writer's connection (a migration step gets
that connection). A job that runs ``SELECT gate()`` parks the writer thread inside its
transaction until the test opens the gate, so batching and commit order become exact.
Not a test module.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import trio

from agora.toolsets.base import Migration

if TYPE_CHECKING:
    import sqlite3

    import pytest
    import sqlite_utils


def _create_items(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")


ITEMS = Migration("items", 1, _create_items)

#: A write that parks the writer thread until the gate opens.
GATE = ("SELECT gate()", ())


def insert(item_id: int, name: str | None = None) -> tuple[str, tuple[Any, ...]]:
    """One INSERT into items (the name defaults to ``item-<id>``)."""
    return ("INSERT INTO items (id, name) VALUES (?, ?)", (item_id, name or f"item-{item_id}"))


def ids(conn: sqlite3.Connection) -> list[int]:
    """Every committed item id, ascending."""
    return [r[0] for r in conn.execute("SELECT id FROM items ORDER BY id")]


class Gate:
    """Holds the writer thread until `open` (or 10 s, so a failing test cannot hang)."""

    def __init__(self) -> None:
        self._entered = threading.Event()
        self._release = threading.Event()

    @property
    def migration(self) -> Migration:
        """A migration step that installs the gate on the writer's connection."""

        def install(db: sqlite_utils.Database) -> None:
            db.conn.create_function("gate", 0, self._hold)

        return Migration("gate", 1, install)

    def _hold(self) -> int:
        self._entered.set()
        self._release.wait(10)
        return 1

    async def wait_entered(self) -> None:
        """Return once the writer thread is parked in the gate."""
        entered = await trio.to_thread.run_sync(self._entered.wait, 10)
        assert entered, "the writer never reached the gate"

    def open(self) -> None:
        """Let the writer thread go on."""
        self._release.set()


def checkpoints_run(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set after each checkpoint a store's checkpointer runs (clear it to wait for
    the next)."""
    from agora.store.checkpoint import Checkpointer

    ran = threading.Event()
    original = Checkpointer.checkpoint

    def counted(self: Checkpointer, conn: sqlite3.Connection) -> bool:
        done = original(self, conn)
        ran.set()
        return done

    monkeypatch.setattr(Checkpointer, "checkpoint", counted)
    return ran
