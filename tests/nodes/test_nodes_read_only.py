"""PostgreSQL turned read-only under two nodes, then writable: refusals name it, no restart.

The server is made read-only the way a failover to a standby or an operator's freeze does it
(``ALTER SYSTEM SET default_transaction_read_only``, reloaded, so the nodes' open connections
take it too). Every refused write must be retryable and say "read-only" in its toolset's
vocabulary (a debate post's text, a router plan's and a chamber entry's structured body),
reads keep answering, and once the setting is reset both nodes acknowledge writes again,
without a restart; every acknowledged post is stored with its body. The setting is reset
whatever happens (the cluster is the suite's). Needs AGORA_TEST_PG (see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

TESTS = Path(__file__).resolve().parents[1]
for where in (TESTS / "faults", TESTS.parent / "bench"):
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

import mixed  # noqa: E402
from faults_support import TIMEOUT, drain, reap, start  # noqa: E402
from wsload import lean_connect  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("AGORA_TEST_BACKEND", "").lower() == "postgresql",
    reason="already on PostgreSQL in the first pass (AGORA_TEST_PG)",
)


def _read_only(url: str, on: bool) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if on:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        conn.execute("SELECT pg_reload_conf()")


def _text(result: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in result.get("content", []))


async def _post(client: Any, topic: str, n: int, acked: dict[str, str]) -> dict[str, Any]:
    body = f"post {n}"
    args = {"topic_id": topic, "role": "ROLE_A", "priority": "M", "kind": "STATUS",
            "addressed_to_csv": "ROLE_B", "body": body}  # fmt: skip
    result: dict[str, Any] = await client.call_tool("debate_post_with_recipients", args)
    if not result.get("isError"):
        acked[result["structuredContent"]["msg_id"]] = body
    return result


async def _refused(client: Any, topic: str, acked: dict[str, str]) -> dict[str, Any]:
    """Post until one is refused (the reload reaches each connection at its next command)."""
    for n in range(1000):
        result = await _post(client, topic, n, acked)
        if result.get("isError"):
            return result
        await trio.sleep(0.01)
    raise AssertionError("posts still succeed on a read-only server")


async def _recovered(client: Any, topic: str, acked: dict[str, str]) -> None:
    for n in range(1000):
        if not (await _post(client, topic, n, acked)).get("isError"):
            return
        await trio.sleep(0.01)
    raise AssertionError("no post succeeded once the server took writes again")


async def test_a_read_only_postgresql_is_named_and_left_without_a_restart(pg_url, tmp_path):
    config = mixed.write_config(tmp_path)
    acked: dict[str, str] = {}
    nodes: list[tuple[trio.Process, str]] = []
    async with trio.open_nursery() as nursery:
        try:
            for _ in range(2):
                process, url = await start(pg_url, config)  # type: ignore[arg-type]
                nursery.start_soon(drain, process)
                nodes.append((process, url))
            await _exercise(pg_url, nodes, acked)
            for process, _ in nodes:
                process.terminate()
            with trio.fail_after(TIMEOUT):
                for process, _ in nodes:
                    await process.wait()
        finally:
            _read_only(pg_url, False)
            reap([process for process, _ in nodes])
    assert all(process.returncode == 0 for process, _ in nodes)
    _stored(pg_url, acked)


def _stored(url: str, acked: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = dict(conn.execute("SELECT msg_id, body FROM debate_messages").fetchall())
    assert acked, "nothing was acknowledged"
    assert {m: b for m, b in acked.items() if rows.get(m) != b} == {}, "acknowledged posts lost"


async def _exercise(
    pg_url: str, nodes: list[tuple[trio.Process, str]], acked: dict[str, str]
) -> None:
    """Writes through both nodes; read-only: refused, named, reads answer; writable: again."""
    mix = mixed.Mix(nodes[0][1], [], mixed.Acks())
    with trio.fail_after(TIMEOUT):
        await mixed.setup_topics(mix, 1)
    topic = mix.topics[0]["topic_id"]
    async with (
        lean_connect(nodes[0][1], mixed.TOKEN) as a,
        lean_connect(nodes[1][1], mixed.TOKEN) as b,
    ):
        with trio.fail_after(TIMEOUT):
            await _recovered(a, topic, acked)
            _read_only(pg_url, True)
            for client in (a, b):
                refused = await _refused(client, topic, acked)
                assert "read-only" in _text(refused), refused
                assert "retry" in _text(refused), refused
            for role, fn in (("router", mixed.router), ("chamber", mixed.chamber)):
                with pytest.raises(mixed.Refused) as caught:
                    await fn(mix, b, mixed.Actor(1, role))
                assert "read-only" in json.dumps(caught.value.body), caught.value.body
            read = await a.call_tool("debate_read", {"topic_id": topic, "role": "ROLE_A"})
            assert not read.get("isError"), read
            _read_only(pg_url, False)
            await _recovered(a, topic, acked)
            await _recovered(b, topic, acked)
