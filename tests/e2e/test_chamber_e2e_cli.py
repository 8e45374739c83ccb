"""The operator's ``agora cards sign`` on files that are, and are not, agora databases.

``sign`` must never create a database or print a traceback: a missing file, a file that is not
SQLite and a SQLite file without chamber tables each get exit status 2 and one line saying
why. Signing commits in batches (so a running server's writer is never held off for long),
and every card of every batch ends up signed and verifiable.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from typing import TYPE_CHECKING

import pytest
import trio
from chamber_server import agora_cli, write_key
from harness import Session, commit_writes

from agora.store.migrations import apply_migrations
from agora.toolsets.chamber import cards_cli, store, verify
from disks import fill

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("kind", ["missing", "text", "empty-sqlite"])
async def test_sign_refuses_a_file_that_is_not_an_agora_database(tmp_path: Path, kind: str) -> None:
    key, _ = write_key(tmp_path / "key.pem")
    db = tmp_path / "agora.db"
    if kind == "text":
        db.write_text("not a database, but long enough to have a header " * 4)
    elif kind == "empty-sqlite":
        sqlite3.connect(db).close()
    with trio.fail_after(30):
        status, out = await agora_cli("cards", "sign", "--db", str(db), "--key", str(key))
    assert status == 2, out
    assert out.startswith("agora: cannot sign: "), out
    assert len(out.splitlines()) == 1, out
    assert "Traceback" not in out
    assert db.exists() is (kind != "missing")  # never creates a database


async def test_sign_refuses_a_database_damaged_by_the_wal_beside_it(tmp_path: Path) -> None:
    """A tester's finding: ``cards sign`` (run with the server stopped, as after a restore)
    wrote into a restored file through the crashed server's -wal, which ``agora serve``
    refuses; it now runs the same check first."""
    key, _ = write_key(tmp_path / "key.pem")
    live = tmp_path / "live.db"
    with contextlib.closing(sqlite3.connect(live, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE junk (a, b)")
        conn.execute("CREATE INDEX junk_a ON junk (a)")
        conn.executemany("INSERT INTO junk VALUES (?, ?)", [(n, -n) for n in range(1, 50)])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA writable_schema = ON")  # the -wal's index no longer fits its table
        conn.execute("UPDATE sqlite_schema SET sql = 'CREATE INDEX junk_a ON junk (b)'")
        for suffix in ("", "-wal"):  # as a crash leaves them
            shutil.copy(f"{live}{suffix}", tmp_path / f"agora.db{suffix}")
    db = tmp_path / "agora.db"
    before = db.read_bytes()
    with trio.fail_after(30):
        status, out = await agora_cli("cards", "sign", "--db", str(db), "--key", str(key))
    assert status == 2, out
    said = out.splitlines()[-1]  # after the INFO line that the check runs
    assert said.startswith(f"agora: cannot open database {db}: it is damaged once the "), out
    assert f"rm -f {db}-wal {db}-shm" in out
    assert db.read_bytes() == before


def test_sign_commits_in_batches_and_signs_every_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "agora.db"
    conn = sqlite3.connect(db, isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS)
    ids = []
    for n in range(5):
        session = Session(seed=f"batch-{n}", handle=f"chl-{n:016x}")
        ids.append(session.seal().card.card_id)
        conn.execute("BEGIN")
        for sql, params in session.writes:
            conn.execute(sql, params)
        conn.execute("COMMIT")
    conn.close()
    key, public = write_key(tmp_path / "key.pem")
    monkeypatch.setattr(cards_cli, "SIGN_BATCH", 2)
    lines: list[str] = []
    assert cards_cli.cmd_sign(db, key, out=lines.append) == 0
    assert lines[0].startswith("signed 5 card(s) with ed25519:")
    assert [line.strip() for line in lines[1:]] == sorted(ids)

    conn = sqlite3.connect(db)
    try:
        assert store.pending_cards(conn) == []
        for card_id in ids:
            document = store.card_document(conn, card_id)
            assert document is not None
            assert json.loads(document)["signature"]["public_key"] == public
            assert verify.verify_document(document, [public]).ok
    finally:
        conn.close()
    assert cards_cli.cmd_sign(db, key, out=lines.append) == 0
    assert lines[-1].startswith("signed 0 card(s)")


@pytest.mark.sqlite_only("a SQLite file on a full tmpfs")
async def test_sign_on_a_full_disk_says_the_disk_is_full(small_disk: Path) -> None:
    """A tester's recheck: on a full disk, ``cards sign`` called a sound database "not a usable
    agora database (disk I/O error)", while ``agora serve`` on the same file said its disk
    was full."""
    key, _ = write_key(small_disk.parent / "key.pem")
    db = small_disk / "agora.db"
    conn = sqlite3.connect(db, isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS)
    conn.close()
    with trio.fail_after(30):  # once while there is room: its lock file stays, as a server's
        status, out = await agora_cli("cards", "sign", "--db", str(db), "--key", str(key))
        assert status == 0, out
        conn = sqlite3.connect(db, isolation_level=None)
        session = Session(seed="full-disk", handle="chl-00000000000000f1")
        session.act("look")
        session.seal()
        commit_writes(conn, session.writes)  # a card to sign
        conn.close()
        fill(small_disk)
        status, out = await agora_cli("cards", "sign", "--db", str(db), "--key", str(key))
    assert status == 2, out
    assert out.startswith(f"agora: cannot sign: {db}: its disk is full ("), out
    assert "not a usable agora database" not in out
    assert f"the file system at {small_disk}, 0 KiB free." in out, out
