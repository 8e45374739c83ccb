"""`agora.store.diskfault`: SQLite's refusals named for what they are, without root.

A database capped with ``max_page_count`` answers ``SQLITE_FULL`` as a full disk does, and one
opened ``mode=ro`` answers ``SQLITE_READONLY``; the store then fails the write with a
`StoreError` whose ``cause`` and message say so, and takes writes again once the cap is lifted.
The disk tests (tests/faults/test_disk.py) do the same on real full and read-only disks.
"""

from __future__ import annotations

import errno
import logging
import sqlite3

import pytest
import trio

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.diskfault import DiskDoctor, errno_cause, name_pg, named, pg_cause, sqlite_cause
from agora.store.episode import Episode
from agora.store.migrations import Migration
from agora.store.neutral import Conflict
from agora.store.refusals import WriteRefusals

pytestmark = pytest.mark.sqlite_only("SQLite's own result codes (and the PostgreSQL mapping)")

ITEMS = Migration("items", 1, lambda db: db.execute("CREATE TABLE items (body TEXT)"))


def _full(path: str) -> sqlite3.Error:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA max_page_count=3")
    try:
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 20000,))
    except sqlite3.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the capped database took the row")


def test_sqlite_result_codes_name_full_and_read_only(tmp_path):
    assert sqlite_cause(_full(str(tmp_path / "full.db"))) == "disk_full"
    conn = sqlite3.connect(f"file:{tmp_path / 'full.db'}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as refused:
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    assert sqlite_cause(refused.value) == "read_only"
    assert sqlite_cause(sqlite3.IntegrityError("not the disk")) is None
    assert sqlite_cause(ValueError("not SQLite")) is None


def test_operating_system_refusals_are_named_by_errno():
    assert errno_cause(OSError(errno.ENOSPC, "full")) == "disk_full"
    assert errno_cause(OSError(errno.EROFS, "read-only")) == "read_only"
    assert errno_cause(OSError(errno.EPERM, "immutable")) == "read_only"
    assert errno_cause(OSError(errno.EIO, "bad sector")) == "io_error"


def test_the_probe_passes_on_a_writable_disk_and_names_a_missing_directory(tmp_path):
    assert DiskDoctor(str(tmp_path / "agora.db")).probe() is None
    assert not list(tmp_path.iterdir())  # it left nothing behind
    assert DiskDoctor(str(tmp_path / "gone" / "agora.db")).probe() == "io_error"


def test_naming_keeps_other_failures_and_names_each_disk_one(tmp_path):
    full = _full(str(tmp_path / "full.db"))
    other = sqlite3.IntegrityError("UNIQUE constraint failed")
    named = DiskDoctor(str(tmp_path / "full.db")).name([None, full, other, full])
    assert named[0] is None
    assert named[2] is other
    for error in (named[1], named[3]):
        assert isinstance(error, StoreError)
        assert error.cause == "disk_full"
        assert "disk is full" in str(error)
        assert error.__cause__ is full
    assert named[1] is not named[3]  # each waiter raises its own


async def _fill(store) -> StoreError:
    """Write 4 KB rows until the store refuses one; the refusal."""
    for _ in range(20):
        try:
            await store.write([("INSERT INTO items VALUES (?)", ("x" * 4000,))])
        except StoreError as exc:
            return exc
    raise AssertionError("the capped database took every row")


async def test_a_store_refuses_writes_naming_a_full_disk_and_recovers(tmp_path):
    path = tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        with trio.fail_after(10):
            await store.write([("PRAGMA max_page_count=8", ())])
            refused = await _fill(store)
            assert "the database's disk is full" in str(refused)
            assert refused.cause == "disk_full"
            assert not refused.outcome_unknown
            await store.write([("PRAGMA max_page_count=100000", ())])
            await store.write([("INSERT INTO items VALUES (?)", ("after",))])
            rows = await store.read(lambda c: c.execute("SELECT body FROM items").fetchall())
    assert rows[-1][0] == "after"


async def test_a_full_disk_is_logged_once_per_episode_and_its_end_once(tmp_path, caplog):
    """Every refused batch used to log a line of its own; now the first of an episode does,
    at WARNING, and its end one INFO line with how many were refused. A disk at its limit
    that takes one commit and refuses the next is still one episode (an operator saw four
    WARNINGs and three INFOs in 55 ms): it ends once writes have gone on for SETTLE_SECONDS,
    or, as here, when the store closes after they resumed."""
    caplog.set_level(logging.INFO, logger="agora.store")
    async with open_store(tmp_path / "agora.db", [ITEMS]) as store:
        with trio.fail_after(10):
            await store.write([("PRAGMA max_page_count=8", ())])
            await _fill(store)
            for _ in range(4):
                with pytest.raises(StoreError):
                    await store.write([("INSERT INTO items VALUES (?)", ("x" * 4000,))])
            await store.write([("PRAGMA max_page_count=100000", ())])
            await store.write([("INSERT INTO items VALUES (?)", ("after",))])
            await _fill_again(store)  # at once: the same episode
            await store.write([("PRAGMA max_page_count=100000", ())])
            await store.write([("INSERT INTO items VALUES (?)", ("after",))])
    told = [r for r in caplog.records if r.name == "agora.store.diskfault"]
    assert [(r.levelname, r.getMessage().split(" ")[3]) for r in told] == [
        ("WARNING", "refused:"),
        ("INFO", "succeed"),  # at the close: writes had resumed
    ], caplog.text
    assert "the database's disk is full" in told[0].getMessage()
    assert "6 writes refused" in told[1].getMessage()


def test_refusals_at_a_disks_limit_are_one_episode_until_writes_settle(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="agora.store")
    now = [0.0]
    doctor = DiskDoctor(str(tmp_path / "agora.db"))
    doctor._refusals = Episode(lambda: now[0])
    full = named(sqlite3.OperationalError("database or disk is full"), "disk_full")

    def at(t: float, refused: bool) -> None:
        now[0] = t
        if refused:
            doctor.told([full])
        else:
            doctor.wrote()

    for t, refused in [(0, True), (1, False), (2, True), (3, False), (7, False)]:
        at(t, refused)  # the small commits go through, the next is refused: one episode
    assert [r.levelname for r in caplog.records] == ["WARNING"], caplog.text
    at(8, False)  # 5 s of commits since they resumed at 3: over
    at(20, True)  # a new one
    at(30, False)
    at(40, True)  # 10 s after writes resumed, with no commit between: that one was over
    told = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in told] == ["WARNING", "INFO", "WARNING", "INFO", "WARNING"]
    assert "after 3.0 s of refusals (the database's disk is full): 2 writes refused" in told[1][1]
    assert "after 10.0 s of refusals" in told[3][1]
    assert "1 write refused" in told[3][1]


async def _fill_again(store) -> None:
    await store.write([("PRAGMA max_page_count=1", ())])
    with pytest.raises(StoreError):
        await store.write([("INSERT INTO items VALUES (?)", ("x" * 4000,))])


def test_postgresql_sqlstates_name_full_and_read_only():
    errors = pytest.importorskip("psycopg.errors")
    assert pg_cause(errors.DiskFull("no space")) == "disk_full"
    assert pg_cause(errors.ReadOnlySqlTransaction("read-only")) == "read_only"
    assert pg_cause(errors.UniqueViolation("not the disk")) is None
    other = errors.UniqueViolation("duplicate")
    named = name_pg([None, errors.DiskFull("no space"), other])
    assert named[0] is None
    assert named[2] is other
    assert isinstance(named[1], StoreError)
    assert named[1].cause == "disk_full"
    assert "disk is full" in str(named[1])


def test_a_change_of_cause_is_not_told_as_writes_succeeding(tmp_path, caplog):
    """An operator's finding: refusals that went on for another cause (an I/O error, then
    read-only, once the file system was remounted) were told "writes to ... succeed again"
    between the two, when nothing had succeeded."""
    caplog.set_level(logging.INFO, logger="agora.store")
    doctor = DiskDoctor(str(tmp_path / "agora.db"))
    failure = sqlite3.OperationalError("disk I/O error")
    assert doctor.told([named(failure, "io_error"), named(failure, "io_error")])
    assert doctor.told([named(sqlite3.OperationalError("readonly"), "read_only")])
    doctor.wrote()
    doctor.close()  # (the end of an episode is told once writes settle, or at the close)
    told = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in told] == ["WARNING", "INFO", "WARNING", "INFO"], told
    assert "succeed again" not in told[1][1]
    assert told[1][1].startswith(
        f"writes to {tmp_path / 'agora.db'} still refused, no longer because the database's"
        " disk reported an I/O error: 2 writes refused in "
    ), told[1][1]
    assert "succeed again" in told[3][1]
    assert "1 write refused" in told[3][1]


async def test_healthz_counters_show_the_refused_writes(tmp_path):
    """An operator's finding: nothing a monitor polls showed a node whose disk refused every
    write (``commits`` merely stopped rising, as on an idle node)."""
    async with open_store(tmp_path / "agora.db", [ITEMS]) as store:
        assert store.counters()["writes_refused"] == 0
        assert store.counters()["last_write_error"] is None
        with trio.fail_after(10):
            await store.write([("PRAGMA max_page_count=8", ())])
            await _fill(store)
            for _ in range(2):
                with pytest.raises(StoreError):
                    await store.write([("INSERT INTO items VALUES (?)", ("x" * 4000,))])
            with pytest.raises(StoreError):
                await store.write([("INSERT INTO nowhere VALUES (1)", ())])  # a bad statement
            counters = store.counters()
    assert counters["writes_refused"] == 4
    last = counters["last_write_error"]
    assert (last["cause"], last["reason"]) == (
        None,
        "a statement failed (a defect: the log has it)",
    )
    assert "nowhere" not in str(last)  # fixed words: never the driver's
    assert counters["checkpoint_failures"] == 0


def test_a_version_conflict_is_not_a_refused_write():
    refusals = WriteRefusals()
    refusals.note(Conflict([("kind", "key")]))
    assert refusals.counters() == {
        "writes_refused": 0,
        "loads_refused": 0,
        "last_write_error": None,
    }
    refusals.note(named(sqlite3.OperationalError("database or disk is full"), "disk_full"))
    counters = refusals.counters()
    assert counters["writes_refused"] == 1
    assert counters["last_write_error"]["cause"] == "disk_full"
    assert counters["last_write_error"]["reason"] == "the database's disk is full"
