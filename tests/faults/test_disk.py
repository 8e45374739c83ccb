"""A full disk mid-load: clear retryable errors, nothing acknowledged lost, recovery with space.

The database lives on a small tmpfs (mounted here: the test needs root, as CI has; elsewhere
it skips). A client posts debate messages of 4 KB until the disk fills: each refused post
must say it can be retried (``retryable``) and the server must stay up and keep answering
reads. Then the tmpfs grows (``remount,size=...``): posts are acknowledged again. Last, the
server stops and every acknowledged post is in the file, with the body acknowledged.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from typing import Any

import mixed
import pytest
import trio
from faults_support import TIMEOUT, drain, start
from wsload import lean_connect

BODY = "x" * 4000
SMALL, LARGE = "3m", "64m"


def _mount(path: Any, size: str, remount: bool = False) -> bool:
    options = f"remount,size={size}" if remount else f"size={size}"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def _umount(path: Any) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False)


def _retryable(result: dict[str, Any]) -> bool:
    body = result.get("structuredContent") or {}
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    return bool(body.get("retryable")) or "retry" in text


async def test_a_full_disk_refuses_writes_retryably_and_recovers(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not _mount(disk, SMALL):
        pytest.skip("cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)")
    acked: dict[str, str] = {}
    refusals: list[dict[str, Any]] = []
    log: list[str] = []
    try:
        process, url = await start(disk / "full.db", mixed.write_config(tmp_path))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain, process, log)
            mix = mixed.Mix(url, [], mixed.Acks())
            with trio.fail_after(TIMEOUT):
                await mixed.setup_topics(mix, 1)
            topic = mix.topics[0]["topic_id"]
            post = {"topic_id": topic, "role": "ROLE_A", "priority": "M", "kind": "STATUS",
                    "addressed_to_csv": "ROLE_B"}  # fmt: skip
            async with lean_connect(url, mixed.TOKEN) as client:

                async def send(i: int) -> dict[str, Any]:
                    body = f"{i} {BODY}"
                    result = await client.call_tool(
                        "debate_post_with_recipients", post | {"body": body}
                    )
                    if not result.get("isError"):
                        acked[result["structuredContent"]["msg_id"]] = body
                    return result  # type: ignore[no-any-return]

                with trio.fail_after(TIMEOUT * 2):
                    i = 0
                    while len(refusals) < 5 and i < 5000:
                        result = await send(i)
                        i += 1
                        if result.get("isError"):
                            refusals.append(result)
                    assert refusals, "the disk never filled"
                    assert all(_retryable(r) for r in refusals), refusals[0]
                    read = await client.call_tool(
                        "debate_read", {"topic_id": topic, "role": "ROLE_A", "limit": 1}
                    )
                    assert not read.get("isError"), read
                    assert _mount(disk, LARGE, remount=True)
                    before = len(acked)
                    for _ in range(200):  # writes succeed again once space returns
                        if not (await send(i)).get("isError") and len(acked) > before + 3:
                            break
                        i += 1
                    assert len(acked) > before + 3, "no write succeeded after space returned"
            process.terminate()
            with trio.fail_after(TIMEOUT):
                await process.wait()
        assert process.returncode == 0, "\n".join(log[-30:])
        conn = sqlite3.connect(disk / "full.db")
        try:
            stored = dict(conn.execute("SELECT msg_id, body FROM debate_messages").fetchall())
        finally:
            conn.close()
        lost = {m for m, body in acked.items() if stored.get(m) != body}
        assert not lost, f"{len(lost)} acknowledged posts lost"
    finally:
        _umount(disk)
