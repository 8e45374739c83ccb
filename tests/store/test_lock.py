"""One process per database file: the sidecar lock, what it says, and values never opened.

A second open of a held file is refused at once with the file and the holder's pid; the lock
goes with its holder, even one killed with SIGKILL; URL-shaped values create nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import trio
from _items import ITEMS

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.lock import (
    DatabaseInUse,
    database_lock,
    database_problem,
    lock_path,
    shown_database,
)

pytestmark = pytest.mark.sqlite_only(
    "the SQLite file lock (one process per file); PostgreSQL is shared by design"
)

HOLDER = """
import sys
from agora.store.lock import database_lock, shown_database
with database_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()
"""


async def test_a_second_open_of_a_held_file_is_refused_with_the_holder(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS]):
        with pytest.raises(DatabaseInUse) as refused:
            async with open_store(db, [ITEMS]):
                pass
        assert refused.value.pid == os.getpid()
        assert str(db) in str(refused.value)
        assert f"pid {os.getpid()}" in str(refused.value)
        # Its own process holds it: not "another agora process", which sent a reviewer
        # looking for one (two embedded servers of one program on one file).
        assert "already open in this process" in str(refused.value)
        assert "another" not in str(refused.value)
        assert lock_path(db).read_text() == f"{os.getpid()}\n"
    async with open_store(db, [ITEMS]) as store:  # released on close
        assert store.versions == {"items": 1}


async def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    db = tmp_path / "agora.db"
    command = [sys.executable, "-c", HOLDER, str(db)]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
    with subprocess.Popen(command, **pipes) as holder:  # noqa: ASYNC220 - killed below
        try:
            with trio.fail_after(30):
                line = await trio.to_thread.run_sync(holder.stdout.readline)  # type: ignore[union-attr]
            assert line == b"locked\n"
            with pytest.raises(DatabaseInUse) as refused, database_lock(db):
                pass
            assert refused.value.pid == holder.pid
            assert refused.value.command.startswith("-c")  # python's own name is left out
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
    with database_lock(db):  # the OS dropped the dead process's lock
        assert lock_path(db).read_text() == f"{os.getpid()}\n"


@pytest.mark.parametrize(
    "value",
    [
        "mysql://user@host:3306/db",
        "sqlite:///tmp/agora.db",
        "file:agora.db?mode=memory",
        "postgresql:/db.internal/agora",
        "postgres:/db.internal/agora",
        "postgresql:db.internal/agora",
        "",
        "   ",
    ],
)
async def test_a_value_that_is_no_file_path_is_refused_and_creates_nothing(
    tmp_path, monkeypatch, value
):
    monkeypatch.chdir(tmp_path)
    assert database_problem(value) is not None
    with pytest.raises(StoreError, match="cannot open database"):
        async with open_store(value, [ITEMS]):
            pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "value",
    [
        ":memory:",
        "agora.db",
        "./data/agora.db",
        "/var/lib/agora/a.db",
        "C:\\agora.db",
        "postgresql://user@host:5432/db",
        "postgres://host/db",
    ],
)
def test_paths_and_memory_are_accepted(value):
    assert database_problem(value) is None


def test_a_postgresql_url_missing_its_slashes_is_refused_as_such_without_its_password():
    """An operator's finding: ``postgresql:/host/db`` was taken for a SQLite path under a
    ``postgresql:`` directory, and the refusal said to mkdir it."""
    said = database_problem("postgresql:/agora:s3cret@db.internal/agora")
    assert said == (
        "it looks like a PostgreSQL URL missing the // after postgresql: (write"
        " postgresql://HOST/DATABASE, or ./postgresql:... for a SQLite file of that name)"
    )
    assert "postgres://" in (database_problem("postgres:/db.internal/agora") or "")


def test_a_postgresql_url_missing_its_colon_is_refused_as_such():
    """An operator's finding: ``postgresql//host/db`` was taken for a SQLite path, and the
    refusal said to mkdir ``postgresql/host``."""
    said = database_problem("postgresql//127.0.0.1/postgres")
    assert said == (
        "it looks like a PostgreSQL URL missing the : after postgresql (write"
        " postgresql://HOST/DATABASE, or ./postgresql//... for a SQLite file of that name)"
    )


@pytest.mark.parametrize("value", ["./postgresql:/agora.db", "postgresql-data/agora.db"])
def test_a_file_path_that_only_starts_like_postgresql_is_a_path(value):
    assert database_problem(value) is None


async def test_two_names_of_one_file_share_its_lock(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "data")
    async with open_store(tmp_path / "data" / "agora.db", [ITEMS]):
        with pytest.raises(DatabaseInUse):
            async with open_store(tmp_path / "alias" / "agora.db", [ITEMS]):
                pass


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("postgresql://agora:secret@db:5432/agora", "postgresql://agora:***@db:5432/agora"),
        ("postgres://u:p%40ss@h/d?x=1", "postgres://u:***@h/d?x=1"),
        ("postgresql://agora@db/agora", "postgresql://agora@db/agora"),
        ("postgresql://agora@db/agora?password=secret", "postgresql://agora@db/agora?password=***"),
        (
            "postgresql://a:b@db/agora?sslmode=require&password=secret&x=1",
            "postgresql://a:***@db/agora?sslmode=require&password=***&x=1",
        ),
        ("./agora.db", "./agora.db"),
    ],
)
def test_a_database_url_is_shown_without_its_password(value, shown):
    assert shown_database(value) == shown
