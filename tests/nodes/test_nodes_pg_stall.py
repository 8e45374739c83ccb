"""PostgreSQL stalled (as by SIGSTOP) under a node: calls answer within the deadline, and the
node stops within its bound.

An operator stopped the postmaster and its backends with SIGSTOP under three nodes: a debate
post, a debate read and a chamber entry each took exactly as long as the stall (20-45 s) and
then succeeded, and a node sent SIGTERM meanwhile kept running until SIGCONT (90 s), where
the README promises ``grace_seconds`` plus ``commit_timeout`` (and about a second). Here a
real ``agora serve`` reaches the suite's PostgreSQL through `pg_stall.StallingRelay`, which
stalls it the same way (sockets open, bytes taken, no answer) without stopping the cluster:
each call now answers a retryable error within the node's ``commit_timeout``, in fixed words
(no address, no libpq text), and SIGTERM ends the node within the bound, with exit status 0;
``/readyz`` turns 503 while ``/healthz`` (liveness) still answers.
Real time: a short ``commit_timeout`` and grace. Needs AGORA_TEST_PG (see tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import trio

from agora.server.health import READY_SECONDS
from pg_stall import stalling_relay

TESTS = Path(__file__).resolve().parents[1]
for where in (TESTS / "faults", TESTS / "e2e", TESTS.parent / "bench"):
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

import mixed  # noqa: E402
from e2e_http import http  # noqa: E402
from faults_support import TIMEOUT, drain, reap, start  # noqa: E402
from wsload import lean_connect  # noqa: E402

#: The node's settings: seconds a store operation may wait, and the shutdown grace.
COMMIT, GRACE = 2.0, 1.0
#: Agents entering the chamber at once during the stall.
AGENTS = 6
#: What a bound may be exceeded by on a busy 2-core machine (seconds).
SLACK = 3.0
ENTRY = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}


def _text(result: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in result.get("content", []))


async def _timed(client: Any, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    began = time.monotonic()
    result: dict[str, Any] = await client.call_tool(tool, args)
    return time.monotonic() - began, result


async def test_calls_and_shutdown_are_bounded_while_postgresql_is_stalled(pg_url, tmp_path):
    config = mixed.write_config(tmp_path)
    lines: list[str] = []
    with stalling_relay(pg_url) as relay:
        process, url = await start(
            relay.url,  # type: ignore[arg-type]
            config,
            commit_timeout=str(COMMIT),
            grace_seconds=str(GRACE),
            linger_seconds="0",
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, process, lines)
                with trio.fail_after(TIMEOUT):
                    answers = await _stall_and_call(relay, url)
                    began = time.monotonic()
                    process.terminate()
                    await process.wait()
                    stopped = time.monotonic() - began
        finally:
            reap([process])
    log = "\n".join(lines)
    for tool, (took, result) in answers.items():
        assert took < COMMIT + SLACK, (tool, took, result)
        assert result.get("isError"), (tool, result)
        text = _text(result) + json.dumps(result.get("structuredContent"))
        # A write whose COMMIT may have gone out says so; the others are retryable.
        assert "retry" in text or "may or may not have been saved" in text, (tool, result)
        assert "correlation" in text, (tool, result)
        assert "127.0.0.1" not in text, (tool, result)  # fixed words: no address, no libpq
    assert process.returncode == 0, log
    assert stopped < GRACE + COMMIT + SLACK, (stopped, log)
    assert "Traceback" not in log, log
    # The stall is told once by the node's outage account, not once per failed call (an
    # operator counted about 220 ERROR "failed to load" lines per node for a 7 s outage,
    # then one WARNING per call); each call's line, with its correlation id, is at DEBUG.
    assert [line for line in lines if line.startswith("ERROR")] == [], log
    assert sum("PostgreSQL is unreachable" in line for line in lines) == 1, log
    for _, result in answers.values():
        correlation = re.search(r"corr-[0-9a-f]{16}", _text(result))
        assert correlation is not None, result
        assert correlation.group(0) not in log, log


async def _stall_and_call(relay: Any, url: str) -> dict[str, tuple[float, dict[str, Any]]]:
    """Warm every path (a topic, a post, a read, an entry), stall, then call each again."""
    mix = mixed.Mix(url, [], mixed.Acks())
    await mixed.setup_topics(mix, 1)
    topic = mix.topics[0]["topic_id"]
    post = {"topic_id": topic, "role": "ROLE_A", "priority": "M", "kind": "STATUS",
            "addressed_to_csv": "ROLE_B", "body": "before"}  # fmt: skip
    read = {"topic_id": topic, "role": "ROLE_A"}
    async with lean_connect(url, mixed.TOKEN) as client:
        assert not (await client.call_tool("debate_post_with_recipients", post)).get("isError")
        assert not (await client.call_tool("debate_read", read)).get("isError")
        entered = await client.call_tool("enter_open_challenge", ENTRY)
        assert not entered.get("isError"), entered
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        ready = await http(port, "GET", "/readyz")
        assert (ready.status, ready.json()) == (200, {"ok": True}), ready
        relay.stall()
        # Readiness says the database is away within its own short deadline; liveness
        # (the counters) still answers.
        began = time.monotonic()
        ready = await http(port, "GET", "/readyz")
        assert time.monotonic() - began < READY_SECONDS + SLACK
        assert ready.status == 503, ready
        assert ready.json() == {"ok": False, "reason": "the database did not answer within 2 s"}
        assert (await http(port, "GET", "/healthz")).status == 200
        return {
            "debate_read": await _timed(client, "debate_read", read),
            "debate_post_with_recipients": await _timed(
                client, "debate_post_with_recipients", post | {"body": "during"}
            ),
            "enter_open_challenge": await _timed(client, "enter_open_challenge", ENTRY),
            **await _entries_together(url, AGENTS),
        }


async def _entries_together(url: str, n: int) -> dict[str, tuple[float, dict[str, Any]]]:
    """``n`` agents entering at once, each on a connection of its own."""
    answers: dict[str, tuple[float, dict[str, Any]]] = {}

    async def agent(i: int) -> None:
        async with lean_connect(url, mixed.TOKEN) as client:
            answers[f"enter_open_challenge #{i}"] = await _timed(
                client, "enter_open_challenge", ENTRY
            )

    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(agent, i)
    return answers
