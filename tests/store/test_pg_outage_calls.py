"""Calls refused while PostgreSQL is away are counted by the outage's account, not logged each.

An operator's finding: during an outage the node logged one WARNING per failed call, where
docs/scale-out.md says the outage is told once, then seldom, then once more when it ends.
Here an in-process server reaches the test PostgreSQL through `pg_stall.StallingRelay`,
which is stalled while calls read, then resumed: the log has one line saying PostgreSQL is
unreachable, no line per call above DEBUG, and the line that says it answers again counts
the refused reads. Real sockets, real time (a short ``commit_timeout``).
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset
from pg_stall import stalling_relay

pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

#: Calls made while the database does not answer.
CALLS = 4
TOOL = {"name": "probe_read", "description": "Reads.", "inputSchema": {"type": "object"}}


async def read(call: ToolCall) -> dict[str, Any]:
    await call.runtime.read(lambda conn: conn.execute("SELECT 1").fetchall())
    return {"content": [{"type": "text", "text": "read"}]}


async def test_calls_refused_during_an_outage_are_counted_in_its_last_line(pg_url, caplog):
    caplog.set_level(logging.DEBUG, logger="agora")
    toolset = Toolset("probe", {"probe_read": read}, contract=None, tools=[TOOL])
    with trio.fail_after(60), stalling_relay(pg_url) as relay:
        config = Config(db=relay.url, commit_timeout=0.5)
        async with (
            open_server(config, toolsets=[toolset], listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()

            async def call() -> dict[str, Any]:
                params = {"name": "probe_read", "arguments": {}}
                reply: dict[str, Any] = await client.request("tools/call", params)
                return reply["result"]

            assert not (await call()).get("isError")
            relay.stall()
            refused = [await call() for _ in range(CALLS)]
            relay.resume()
            while (await call()).get("isError"):  # noqa: ASYNC110 - until it answers again
                await trio.sleep(0.05)
    assert all(result.get("isError") for result in refused), refused
    above_debug = [
        r.getMessage()
        for r in caplog.records
        if r.levelno > logging.DEBUG and "corr-" in r.getMessage()
    ]
    assert above_debug == []  # before: one WARNING per call
    for result in refused:  # each call's line, with its id, is there for an operator at DEBUG
        correlation = re.search(r"corr-[0-9a-f]{16}", result["content"][0]["text"])
        assert correlation is not None, result
        assert correlation.group(0) in caplog.text
    said = [r.getMessage() for r in caplog.records if r.name == "agora.store.outage"]
    assert sum("PostgreSQL is unreachable" in line for line in said) == 1, said
    (back,) = [line for line in said if "PostgreSQL answers again" in line]
    counted = re.search(r"; (\d+) reads and writes refused meanwhile", back)
    assert counted is not None, back
    assert int(counted.group(1)) >= CALLS, back
