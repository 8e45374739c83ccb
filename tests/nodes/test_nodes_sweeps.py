"""A background sweep runs on one node of the cluster at a time, and moves when it dies.

Two ``agora serve --toolsets router`` nodes share one PostgreSQL database; the router's
retention sweep is a background task. Each node says in its log when it takes the task's
cluster lock: exactly one does, and after that node is killed with SIGKILL the other does.
"""

from __future__ import annotations

import re
import signal
from typing import TYPE_CHECKING

import trio
from nodes_support import stopped_cleanly

if TYPE_CHECKING:
    from e2e_process import AgoraProcess

TIMEOUT = 60
TAKES = r"runs background task (.+?) for the cluster"


async def test_a_sweep_has_one_runner_and_moves_when_its_node_is_killed(cluster):
    nodes = cluster(2, "--toolsets", "router")
    with trio.fail_after(TIMEOUT):
        first = await _first_to_take(nodes)
        other = nodes[1 - nodes.index(first)]
        taken = re.search(TAKES, first.log)
        assert taken is not None
        task = re.escape(taken.group(1))  # the router's retention task
        assert not re.search(rf"runs background task {task} for", other.log), other.log
        first.signal(signal.SIGKILL)
        await first.wait_exit()
        with stopped_cleanly([other]):
            await other.wait_for_log(rf"runs background task {task} for the cluster")


async def _first_to_take(nodes: list[AgoraProcess]) -> AgoraProcess:
    winner: list[AgoraProcess] = []
    async with trio.open_nursery() as nursery:

        async def watch(node: AgoraProcess) -> None:
            await node.wait_for_log(TAKES)
            winner.append(node)
            nursery.cancel_scope.cancel()

        for node in nodes:
            nursery.start_soon(watch, node)
    return winner[0]
