"""Every chamber node keeps its own room pool full, not only the one holding a cluster lock.

The pool of pre-built rooms lives in each node's memory, so its refill must run on every
node of a shared store (`node_local`), unlike the cluster's sweeps. It used to run once per
cluster: the other nodes' pools stayed empty (size 0), and their entries built rooms on the
call's path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio
from chess_page_http import http_json
from nodes_support import stopped_cleanly

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 60
SIZE = 3


async def test_every_node_fills_its_own_room_pool(cluster, tmp_path: Path):
    config = tmp_path / "agora.toml"
    config.write_text(f"[options.chamber]\nroom_pool_size = {SIZE}\n")
    nodes = cluster(2, "--toolsets", "chamber", "--config", str(config))
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        for node in nodes:
            while True:
                status, body = await http_json("GET", f"{node.url}/chamber/pool")
                assert status == 200, body
                suites = body["suites"].values()
                if all(s["size"] == SIZE and s["ready"] == SIZE for s in suites):
                    break
                await trio.sleep(0.05)
