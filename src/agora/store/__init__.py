"""SQLite storage: one writer thread with group commit, read connections, migrations."""

from agora.store.db import Store, open_store

__all__ = ["Store", "open_store"]
