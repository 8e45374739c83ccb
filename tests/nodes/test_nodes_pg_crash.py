"""PostgreSQL stopped with ``-m immediate`` (a crash) under load, then started again.

A node keeps recording router events while the database crashes. Afterwards, every event
that was acknowledged is there (at most one more: a commit in flight when the server died,
never acknowledged), and the node serves writes again without a restart: its writer,
readers and change listener reconnect on their own. Sealed chamber cards are served
byte-identical after a node is killed with SIGKILL and the database crashes, by the
surviving node and by a node started afterwards. Needs the test cluster's data directory
(AGORA_TEST_PG_DIR and AGORA_TEST_PG_PORT, set by .ci/run) to stop and start it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from chamber_server import write_key
from e2e_http import http
from nodes_support import stopped_cleanly
from test_nodes_chamber import enter, look
from test_nodes_router import current_version, event, plan

from agora.client import connect

TIMEOUT = 90
PG_SH = str(Path(__file__).parents[2] / "scripts" / "pg.sh")


def pg(command: str) -> None:
    directory = os.environ["AGORA_TEST_PG_DIR"]
    port = os.environ["AGORA_TEST_PG_PORT"]
    subprocess.run(["bash", PG_SH, command, directory, port], check=True, capture_output=True)


async def until_ok(url: str, run: str, key: str) -> dict[str, Any]:
    """Send one event until the node answers it (the database may still be recovering)."""
    while True:
        version = await current_version_or_none(url, run)
        if version is not None:
            async with connect(f"{url}/mcp/router") as c:
                got = await c.call_tool("record_work_event", event("race", run, version, key))
            body = dict(got["structuredContent"])
            if "event_ids" in body:
                return body
        await trio.sleep(0.2)


async def current_version_or_none(url: str, run: str) -> int | None:
    with contextlib.suppress(Exception):
        return await current_version(url, run)
    return None


def needs_the_cluster_directory() -> None:
    if not os.environ.get("AGORA_TEST_PG_DIR") or not os.environ.get("AGORA_TEST_PG_PORT"):
        pytest.skip("the test cluster's data directory is unknown (AGORA_TEST_PG_DIR/PORT)")


async def test_an_immediate_postgresql_stop_loses_no_acknowledged_write(cluster):
    needs_the_cluster_directory()
    (node,) = cluster(1, "--toolsets", "router")
    acked: list[str] = []
    with stopped_cleanly([node]), trio.fail_after(TIMEOUT):
        run = await plan(node.url, "race")
        crashed = trio.Event()

        async def writer() -> None:
            version, n = 1, 0
            async with connect(f"{node.url}/mcp/router") as c:
                while not crashed.is_set() or n < 3:
                    n += 1
                    key = f"before-{n}"
                    got = await c.call_tool("record_work_event", event("race", run, version, key))
                    body = got["structuredContent"]
                    if "event_ids" not in body:
                        return  # the database is gone: this call was not acknowledged
                    acked.append(key)
                    version = body["resulting_state_version"]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            while len(acked) < 5:  # noqa: ASYNC110 - the writer's progress, by count
                await trio.sleep(0.01)
            await trio.to_thread.run_sync(pg, "crash")
            crashed.set()
        await trio.to_thread.run_sync(pg, "start")
        after = await until_ok(node.url, run, "after-restart")
        # Every acknowledged event survived; at most one more whose COMMIT was in flight.
        assert after["resulting_state_version"] - 2 in (len(acked), len(acked) + 1)


async def sealed_card(url: str) -> str:
    """Enter an attempt on ``url``, act once, seal it; its card id."""
    handle = await enter(url)
    async with connect(f"{url.replace('http', 'ws')}/mcp/chamber") as c:
        assert (await look(c, handle, 0)).get("ok")
        got = await c.call_tool("seal_attempt", {"challenge_handle": handle})
    body = got["structuredContent"]
    assert (body.get("ok"), body.get("attempt_state")) == (True, "sealed"), body
    assert body["evidence_status"] == "signed", body
    return str(body["card_id"])


async def served(port: int, card_id: str) -> bytes | None:
    """The card document's bytes as ``GET /cards/<id>`` serves them (None: not answered)."""
    with contextlib.suppress(Exception):
        reply = await http(port, "GET", f"/cards/{card_id}")
        if reply.status == 200:
            return bytes(reply.body)
    return None


async def test_sealed_cards_stay_byte_identical_across_a_node_kill_and_a_crash(cluster, tmp_path):
    needs_the_cluster_directory()
    key, _ = write_key(tmp_path / "card.key")
    config = tmp_path / "agora.toml"
    config.write_text(f'[options.chamber]\nsigning_key = "{key}"\n')
    args = ("--toolsets", "chamber", "--config", str(config))
    doomed, survivor = cluster(2, *args)
    with stopped_cleanly([survivor]), trio.fail_after(TIMEOUT):
        ids = [await sealed_card(node.url) for node in (doomed, survivor, doomed)]
        before = {i: await served(doomed.port, i) for i in ids}
        assert all(b is not None and b'"signature"' in b for b in before.values())
        for i in ids:  # every node serves the same bytes
            assert await served(survivor.port, i) == before[i]
        doomed.signal(signal.SIGKILL)
        await doomed.wait_exit()
        await trio.to_thread.run_sync(pg, "crash")
        await trio.to_thread.run_sync(pg, "start")
        while await served(survivor.port, ids[0]) is None:  # noqa: ASYNC110 - recovering
            await trio.sleep(0.2)
        for i in ids:
            assert await served(survivor.port, i) == before[i]
        (fresh,) = cluster(1, *args)
        with stopped_cleanly([fresh]):
            for i in ids:
                assert await served(fresh.port, i) == before[i]
