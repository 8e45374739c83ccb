"""The database's disk full or turned read-only mid-load: clear retryable errors, nothing lost.

The tests need root (CI has it; elsewhere they skip with the reason). A client posts debate
messages of 4 KB; every refused post must say it can be retried (``retryable``) and name the
cause (disk full, read-only), a router plan and a chamber entry are refused naming it in their
own vocabularies, the server must stay up and keep answering reads, and once the server stops
every acknowledged post is in the file with the body acknowledged.

- Full: the database lives on a small tmpfs until it fills; then the tmpfs grows
  (``remount,size=...``) and posts are acknowledged again by the same server.
- Read-only: Linux refuses ``remount,ro`` (EBUSY) of a file system on which a file is open
  for writing, as the database always is, so the directory cannot be made read-only under a
  running server by an operator. It happens when the kernel forces it: an ext4 file system
  mounted ``errors=remount-ro`` turns read-only on its first error (here set off through
  ``/sys/fs/ext4/<dev>/trigger_fs_error``). The kernel (6.x, ``emergency_ro``) keeps it
  read-only until it is unmounted, even after ``remount,rw``: the operator detaches it
  (``umount -l``), checks it (``e2fsck``) and mounts the image again; the same server, which
  reopens its database after such an error, acknowledges posts on it, and the acknowledged
  posts are there.
- Immutable: the database, its WAL and its directory made immutable (``chattr +i``, which
  stops root's writes on open files too) on ext4, then writable again: the same server takes
  writes again without a restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mixed
import pytest
import trio
from faults_support import TIMEOUT, TOOLSETS, drain, reap, start
from wsload import lean_connect

from agora.store.diskfault import REOPEN_SECONDS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

pytestmark = pytest.mark.sqlite_only(
    "a SQLite file on a small tmpfs, filled or remounted read-only"
)

BODY = "x" * 4000
SMALL, LARGE = "3m", "64m"


def _run(*argv: str) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def _mount(path: Any, size: str, remount: bool = False) -> bool:
    options = f"remount,size={size}" if remount else f"size={size}"
    return _run("mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path))


def _umount(path: Any) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False)


#: How each toolset names a cause (`agora.errors.STORE_CAUSES`, the router's own messages).
NAMED = {
    "disk_full": re.compile(r"disk is full|out of disk space"),
    "read_only": re.compile(r"is read-only"),
}


def _retryable(result: dict[str, Any]) -> bool:
    body = result.get("structuredContent") or {}
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    return bool(body.get("retryable")) or "retry" in text


def _names(cause: str, result: dict[str, Any]) -> bool:
    """Whether a refusal names ``cause``, in its text and in any structured body."""
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    body = result.get("structuredContent")
    said = [text] + ([json.dumps(body)] if body else [])
    return all(NAMED[cause].search(part) for part in said)


async def _each_toolset_names(url: str, cause: str) -> None:
    """A router plan and a chamber entry are refused too, each naming ``cause`` in its
    toolset's vocabulary. A write may still fit a good many times first: the frames of a failed
    larger write are space the WAL file already holds, and after a checkpoint the whole WAL
    file is rewritten from its start, so small writes go on until they outgrow it."""
    mix = mixed.Mix(url, [], mixed.Acks())
    async with lean_connect(url, mixed.TOKEN) as client:
        for role, fn in (("router", mixed.router), ("chamber", mixed.chamber)):
            actor = mixed.Actor(1, role)
            for _ in range(500):
                actor.state.update(run_id="", handle="")  # a new run or attempt (a new key)
                try:
                    await fn(mix, client, actor)
                except mixed.Refused as refused:
                    said = json.dumps(refused.body)
                    assert NAMED[cause].search(said), f"{role} does not say {cause}: {said}"
                    break
            else:
                raise AssertionError(f"{role} writes still succeed")


class Poster:
    """Posts numbered 4 KB debate messages to one topic; keeps the acknowledged ones."""

    def __init__(self, client: Any, url: str, topic: str, acked: dict[str, str]) -> None:
        self.client = client
        self.url = url
        self.topic = topic
        self.acked = acked
        self.sent = 0
        self.log: list[str] = []  # the server's log lines so far (`serving`)

    async def post(self) -> dict[str, Any]:
        body = f"{self.sent} {BODY}"
        self.sent += 1
        args = {"topic_id": self.topic, "role": "ROLE_A", "priority": "M", "kind": "STATUS",
                "addressed_to_csv": "ROLE_B", "body": body}  # fmt: skip
        result = await self.client.call_tool("debate_post_with_recipients", args)
        if not result.get("isError"):
            self.acked[result["structuredContent"]["msg_id"]] = body
        return result  # type: ignore[no-any-return]

    async def refusals(self, count: int) -> list[dict[str, Any]]:
        """Post until ``count`` posts are refused (at most 5000 tries); the refusals."""
        refused: list[dict[str, Any]] = []
        while len(refused) < count and self.sent < 5000:
            result = await self.post()
            if result.get("isError"):
                refused.append(result)
        return refused

    async def recovered(self, wanted: int = 4) -> bool:
        """Whether ``wanted`` posts are acknowledged within 200 tries, retried as a client
        would: 50 ms after a refusal (the server may hold a reopen back `REOPEN_SECONDS`)."""
        before = len(self.acked)
        for _ in range(200):
            if (await self.post()).get("isError"):
                await trio.sleep(0.05)
            if len(self.acked) >= before + wanted:
                return True
        return False

    async def read(self) -> dict[str, Any]:
        args = {"topic_id": self.topic, "role": "ROLE_A", "limit": 1}
        return await self.client.call_tool("debate_read", args)  # type: ignore[no-any-return]

    async def reopens(self) -> int:
        """The times the server reopened its database after a disk error (``/healthz``)."""
        base = self.url.replace("ws://", "http://").removesuffix("/mcp")
        host, port = base.removeprefix("http://").rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Connection: close\r\n\r\n")  # fmt: skip
            raw = b""
            while chunk := await stream.receive_some():
                raw += chunk
        return int(json.loads(raw.split(b"\r\n\r\n", 1)[1])["store"]["reopens"])


@asynccontextmanager
async def serving(db: Path, config: Path, acked: dict[str, str]) -> AsyncIterator[Poster]:
    """Run agora on ``db`` with a debate topic; a `Poster` on it; stop the server at the end."""
    log: list[str] = []
    process, url = await start(db, config)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain, process, log)
            mix = mixed.Mix(url, [], mixed.Acks())
            with trio.fail_after(TIMEOUT):
                topic = await _topic(db, mix)
            async with lean_connect(url, mixed.TOKEN) as client:
                poster = Poster(client, url, topic, acked)
                poster.log = log
                yield poster
            process.terminate()
            with trio.fail_after(TIMEOUT):
                await process.wait()
    except BaseException:
        # What the server said, shown with the failure (pytest prints a failed test's stderr).
        print("\n".join(["agora's last log lines:", *log[-40:]]), file=sys.stderr)
        raise
    finally:
        reap([process])
    assert process.returncode == 0, "\n".join(log[-30:])


async def _topic(db: Path, mix: mixed.Mix) -> str:
    """The topic of an earlier run on ``db``, or a new one."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT topic_id FROM debate_topics LIMIT 1").fetchone()
    finally:
        conn.close()
    if row is not None:
        return str(row[0])
    await mixed.setup_topics(mix, 1)
    return str(mix.topics[0]["topic_id"])


def _fill(disk: Path) -> None:
    """Take the free bytes left on ``disk`` with a file of zeros (a page at a time, then bytes)."""
    with (disk / "filler").open("wb", buffering=0) as out:
        for size in (4096, 1):
            with contextlib.suppress(OSError):
                while out.write(b"\0" * size):
                    pass


def _lost(db: Path, acked: dict[str, str]) -> set[str]:
    """The acknowledged posts missing from ``db`` or stored with another body."""
    conn = sqlite3.connect(db)
    try:
        stored = dict(conn.execute("SELECT msg_id, body FROM debate_messages").fetchall())
    finally:
        conn.close()
    return {m for m, body in acked.items() if stored.get(m) != body}


async def test_a_full_disk_refuses_writes_retryably_and_recovers(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not _mount(disk, SMALL):
        pytest.skip("cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)")
    acked: dict[str, str] = {}
    try:
        async with serving(disk / "full.db", mixed.write_config(tmp_path), acked) as poster:
            with trio.fail_after(TIMEOUT * 2):
                refusals = await poster.refusals(5)
                assert len(refusals) == 5, "the disk never filled"
                assert all(_retryable(r) for r in refusals), refusals[0]
                assert all(_names("disk_full", r) for r in refusals), refusals[0]
                _fill(disk)  # the bytes a 4 KB post did not fit in, which a smaller write might
                await _each_toolset_names(poster.url, "disk_full")
                assert not (await poster.read()).get("isError")
                assert _mount(disk, LARGE, remount=True)
                assert await poster.recovered(), "no write succeeded after space returned"
        assert not _lost(disk / "full.db", acked), "acknowledged posts lost"
    finally:
        _umount(disk)


def _ext4(image: Path, mount: Path) -> Path | None:
    """Mount a fresh 32 MiB ext4 image ``errors=remount-ro``; its error trigger, or None."""
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
        return None
    with image.open("wb") as f:
        f.truncate(32 * 2**20)
    if not _run("mkfs.ext4", "-q", "-F", "-O", "^has_journal", str(image)):
        return None
    if not _mount_ext4(image, mount):
        return None
    with open("/proc/mounts") as mounts:
        device = next(line.split()[0] for line in mounts if line.split()[1] == str(mount))
    trigger = Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
    return trigger if trigger.exists() else None


def _mount_ext4(image: Path, mount: Path) -> bool:
    return _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mount))


@asynccontextmanager
async def _read_only_then_mounted_again(
    tmp_path: Path,
    acked: dict[str, str],
    change: Callable[[Poster, Path], Awaitable[None]] | None = None,
) -> AsyncIterator[tuple[Poster, Path]]:
    """A server posting to a database on an ext4 image the kernel then turns read-only (the
    refusals checked), detached, checked and mounted again: the poster and the mount point,
    before any post on the mounted-again disk. ``change`` gets the poster and the checked
    file system mounted elsewhere first, out of the server's sight (nothing is mounted at the
    database's directory meanwhile). Every acknowledged post is checked in the file once the
    server has stopped."""
    disk, image = tmp_path / "disk", tmp_path / "disk.img"
    disk.mkdir()
    trigger = _ext4(image, disk)
    if trigger is None or shutil.which("e2fsck") is None:
        _umount(disk)
        pytest.skip("needs: root, mkfs.ext4, e2fsck, a loop device and ext4's trigger_fs_error")
    config = mixed.write_config(tmp_path)
    db = disk / "ro.db"
    device = ""
    try:
        async with serving(db, config, acked) as poster:
            with trio.fail_after(TIMEOUT * 2):
                assert await poster.recovered(20)  # mid-load: 20 posts acknowledged first
                trigger.write_text("agora fault test\n")  # the kernel turns it read-only
                refusals = await poster.refusals(5)
                assert len(refusals) == 5, "writes still succeed on a read-only file system"
                assert all(_retryable(r) for r in refusals), refusals[0]
                assert all(_names("read_only", r) for r in refusals), refusals[0]
                assert not (await poster.read()).get("isError")
                # The operator detaches the failed file system, checks it and mounts the image
                # again through a new loop device (the old one stays pinned by the server's
                # open files until it lets go of them).
                _umount(disk)
                device = _attach(image)
                assert device, "no free loop device"
                _check(device)
                if change is not None:
                    aside = tmp_path / "aside"
                    aside.mkdir()
                    assert _run("mount", device, str(aside)), "the image does not mount aside"
                    try:
                        await change(poster, aside)
                    finally:
                        _run("umount", str(aside))
                assert _run("mount", device, str(disk)), "the image does not mount again"
                yield poster, disk
        assert not _lost(db, acked), "acknowledged posts lost"
    finally:
        _umount(disk)
        if device:
            _run("losetup", "-d", device)


async def _reopen_tried_unmounted(poster: Poster, _aside: Path) -> None:
    """Post until the server has tried to reopen the database while its directory has no file
    system mounted (clients go on posting while the operator checks the disk; the debate's
    background step writes too): that reopen fails, and the next is a second later."""
    with trio.fail_after(TIMEOUT):
        while not any("could not reopen the database" in line for line in poster.log):
            assert await poster.refusals(1), "a post was acknowledged with no disk mounted"
            await trio.sleep(0.05)


async def test_a_disk_turned_read_only_refuses_writes_retryably_and_loses_nothing(tmp_path):
    # A reopen tried before the disk is mounted again holds the next one back a second:
    # posts are refused that long after the mount, then acknowledged (a client retrying every
    # 50 ms as `Poster.recovered` does; 200 quick refusals once fitted in that second).
    acked: dict[str, str] = {}
    change = _reopen_tried_unmounted
    async with _read_only_then_mounted_again(tmp_path, acked, change) as (poster, _disk):
        # The same server writes through the mounted-again disk.
        assert await poster.recovered(), "no write succeeded on the mounted-again disk"
        assert not (await poster.read()).get("isError")


#: The database's files, the main one last: put back in this order, the path names either no
#: file, the main file alone (no tables: its pages are all in the WAL), or all of it.
DB_FILES = ("ro.db-wal", "ro.db-shm", "ro.db")


def _plain_sqlite_file(path: Path) -> None:
    """Another SQLite file at ``path``, agora's tables nowhere in it."""
    other = sqlite3.connect(path)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("CREATE TABLE notes (body TEXT)")
    other.close()


def _another_agora_database(path: Path) -> None:
    """Another agora database at ``path``: the server's toolsets, each at the server's
    version (only its id tells it from the one the server opened)."""
    from agora.server.app import load_toolsets
    from agora.store.sqlite_open import migrated

    steps = [m for t in load_toolsets(TOOLSETS.split(",")) for m in t.migrations]
    conn = migrated(str(path), steps, "FULL", False)[0]
    conn.close()


def _contents(path: Path) -> list[str]:
    """Every row of the SQLite file at ``path``, read without writing."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def _swap_in(make: Callable[[Path], None]) -> Callable[[Poster, Path], Awaitable[None]]:
    """A ``change`` that posts until the server has tried to reopen the database while its
    directory has no file system mounted (no file at its path: a reason given in the log),
    then moves the database's files to ``kept/`` and makes another file at its path."""

    async def swap(poster: Poster, disk: Path) -> None:
        with trio.fail_after(TIMEOUT):
            while not any("could not reopen the database" in line for line in poster.log):
                assert await poster.refusals(1), "a post was acknowledged with no disk mounted"
                await trio.sleep(0.05)
        (disk / "kept").mkdir()
        for name in DB_FILES:
            if (disk / name).exists():
                (disk / name).rename(disk / "kept" / name)
        make(disk / "ro.db")
        (disk / "other.dump").write_text("\n".join(_contents(disk / "ro.db")))

    return swap


@pytest.mark.parametrize(
    ("make", "told"),
    [
        pytest.param(_plain_sqlite_file, "(it has no agora_schema table)", id="sqlite-file"),
        pytest.param(_another_agora_database, "(it is another agora database", id="agora-db"),
    ],
)
async def test_another_file_at_the_database_s_path_is_not_written_to(tmp_path, make, told):
    # The disk mounted again holds another SQLite file at the database's path (the wrong
    # disk, or one whose damage left the WAL unreadable: see `_check`). The writer, which
    # reopens the database after the read-only error, answered every post "internal error"
    # (no such table) on it; it now keeps refusing, retryably, says why in its log, and
    # writes again once the right file is back. The log says why, though a reopen tried
    # while no file was at the path already had its WARNING (later failures since the last
    # commit were logged at DEBUG only, whatever their reason: now a new reason is logged
    # at WARNING again).
    acked: dict[str, str] = {}
    async with _read_only_then_mounted_again(tmp_path, acked, _swap_in(make)) as (
        poster,
        disk,
    ):
        before = set(acked)
        # Posts are refused until a reopen has looked at the file (a reopen that found no
        # file, tried while the disk was not mounted yet, waits a second for the next).
        told = "is not the database this server opened " + told
        with trio.fail_after(TIMEOUT):
            while not any(told in line for line in poster.log):
                refusals = await poster.refusals(1)
                assert refusals, "posts were acknowledged on another database"
                assert _retryable(refusals[0]), refusals[0]
                await trio.sleep(0.05)
        assert not acked.keys() - before, "posts were acknowledged on another database"
        made = (disk / "other.dump").read_text()
        assert "\n".join(_contents(disk / "ro.db")) == made, "the server wrote into it"
        (disk / "ro.db").rename(disk / "other.db")
        (disk / "other.dump").unlink()
        for name in DB_FILES:
            (disk / f"other.db{name.removeprefix('ro.db')}").unlink(missing_ok=True)
            if (disk / "kept" / name).exists():
                (disk / "kept" / name).rename(disk / name)
        await trio.sleep(REOPEN_SECONDS)  # the next reopen is tried a second after the last
        assert await poster.recovered(), "no write succeeded once the right file was back"


def _check(device: str) -> None:
    """Write out what the failed file system still held dirty, then ``e2fsck`` it, as an
    operator must before mounting it again. The kernel stopped its writes with its block and
    inode bitmaps and group descriptors unwritten (no journal to replay them), so the image
    said the database's inodes and blocks were free: mounted unchecked, the next new file (the
    server's probe beside the database) took them and zeroed the WAL's first page, and the
    reopened database had no tables (about 1 run in 15)."""
    subprocess.run(["sync"], check=False)  # the old mount's dirty metadata, to the image
    done = subprocess.run(["e2fsck", "-fy", device], capture_output=True, text=True)
    assert done.returncode < 4, f"e2fsck left errors: {done.stdout}{done.stderr}"


def _attach(image: Path) -> str:
    """A new loop device on ``image`` (never the one the failed mount used); its path."""
    done = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


async def test_database_files_made_read_only_refuse_writes_and_recover_without_restart(tmp_path):
    # As root a chmod stops nothing, and a mounted file system cannot be made read-only
    # under an open database (EBUSY); the immutable attribute stops root's writes too, on
    # the files SQLite holds open, and is taken off again under the same server.
    disk, image = tmp_path / "disk", tmp_path / "disk.img"
    disk.mkdir()
    if _ext4(image, disk) is None or shutil.which("chattr") is None:
        _umount(disk)
        pytest.skip("needs: root, mkfs.ext4, chattr and a loop device")
    db = disk / "immutable.db"
    frozen = [str(disk), str(db), f"{db}-wal"]
    acked: dict[str, str] = {}
    try:
        async with serving(db, mixed.write_config(tmp_path), acked) as poster:
            with trio.fail_after(TIMEOUT * 2):
                assert await poster.recovered(20)  # mid-load: 20 posts acknowledged first
                reopens, began = await poster.reopens(), trio.current_time()
                assert _run("chattr", "+i", *frozen)
                refusals = await poster.refusals(20)
                assert len(refusals) == 20, "writes still succeed on immutable files"
                # Not a reopen (a new writer process) per refused batch: one a second at most.
                reopened = await poster.reopens() - reopens
                assert reopened <= 2 + (trio.current_time() - began) / REOPEN_SECONDS, reopened
                # The debate's background step, retried 4 times a second, does not log each
                # refusal: the store tells the episode once.
                steps = [line for line in poster.log if "background step" in line]
                assert not [line for line in steps if " WARNING " in line], steps[:3]
                assert all(_retryable(r) for r in refusals), refusals[0]
                assert all(_names("read_only", r) for r in refusals), refusals[0]
                await _each_toolset_names(poster.url, "read_only")
                assert not (await poster.read()).get("isError")
                assert _run("chattr", "-i", *frozen)
                assert await poster.recovered(), "no write succeeded once writes were allowed"
        assert not _lost(db, acked), "acknowledged posts lost"
    finally:
        _run("chattr", "-i", *frozen)
        _umount(disk)
