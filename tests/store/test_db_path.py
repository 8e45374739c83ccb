"""A database path that cannot be opened is refused in words, before anything is made.

Real paths on a real file system: each problem (a directory, a path through a regular file,
a directory that is not there, a file that cannot be read) must say what is wrong, not
SQLite's or the OS's numbers (``[Errno 17] File exists``), and leave the disk as it was.
"""

from __future__ import annotations

import pytest
from _items import ITEMS

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.db_path import check_database_path


def test_a_path_through_a_regular_file_names_that_file(tmp_path):
    (tmp_path / "notes").write_text("x")
    for path in (tmp_path / "notes" / "x.db", tmp_path / "notes" / "a" / "x.db"):
        with pytest.raises(StoreError) as refused:
            check_database_path(str(path))
        assert str(refused.value) == (
            f"cannot open database {path}: {tmp_path / 'notes'} is a file, not a directory"
        )


def test_a_missing_directory_is_named_and_not_made(tmp_path):
    path = tmp_path / "agroa" / "data" / "agora.db"
    with pytest.raises(StoreError) as refused:
        check_database_path(str(path))
    parent = tmp_path / "agroa" / "data"
    assert str(refused.value) == (
        f"cannot open database {path}: its directory {parent} does not exist"
        f" (create it first: mkdir -p {parent})"
    )
    assert list(tmp_path.iterdir()) == []


async def test_the_store_refuses_a_missing_directory_before_making_anything(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        async with open_store(tmp_path / "gone" / "agora.db", [ITEMS]):
            pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.sqlite_only("the default database is a SQLite file")
async def test_the_default_path_in_a_fresh_working_directory_opens(tmp_path, monkeypatch):
    # ./agora.db: its directory is the working directory, which is always there.
    monkeypatch.chdir(tmp_path)
    check_database_path("./agora.db")
    check_database_path("agora.db")
    async with open_store("./agora.db", [ITEMS]):
        pass
    assert (tmp_path / "agora.db").is_file()
