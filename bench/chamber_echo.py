"""The transport floor of ``bench/chamber_attempts.py``: its agents against a bare echo server.

The same agents send the same number of messages of the same size (a ``chamber_action``
call) to a trio-websocket echo server (`echo.SCRIPT`, a subprocess: no MCP, no store), with
the same client: what this machine and this client can do at best, measured in the same
run, so the chamber's action rate can be read as a share of it. Imported by the bench
scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import trio
from chamber_phases import Phase
from echo import SCRIPT as echo_script
from measure import cpu_window
from serve import HOST, START_TIMEOUT
from trio_websocket import open_websocket_url
from wsload import LeanWebSocket

if TYPE_CHECKING:
    import argparse

#: One ``chamber_action`` call, as the agents send it.
MESSAGE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "chamber_action",
            "arguments": {
                "challenge_handle": "chl-0123456789abcdef",
                "op": "inspect",
                "object": "clock_face",
                "expected_action_index": 7,
            },
        },
    }
)


async def echo_floor(args: argparse.Namespace) -> Phase:
    """``args.agents`` agents (``args.client``'s kind) each send ``args.actions`` messages to
    a bare echo server, all at once, one at a time each: the transport floor."""
    phase = Phase("echo")
    process = await trio.lowlevel.open_process(
        [sys.executable, echo_script], stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        with trio.fail_after(START_TIMEOUT):
            announced = b""
            while b"\n" not in announced:
                announced += await process.stderr.receive_some(4096)
            port = int(announced.split(b"\n")[0].rsplit(b":", 1)[1])
        payload = MESSAGE.encode()

        async def agent(ws: Any) -> None:
            for _ in range(args.actions):
                start = time.perf_counter()
                if args.client == "lean":
                    await ws.send(payload)
                    await ws.recv()
                else:
                    await ws.send_message(MESSAGE)
                    await ws.get_message()
                phase.latencies.append(time.perf_counter() - start)
                phase.calls += 1

        async def open_one(stack: AsyncExitStack, url: str) -> Any:
            if args.client == "lean":
                ws = await LeanWebSocket.connect(url)
                stack.push_async_callback(ws.aclose)
                return ws
            return await stack.enter_async_context(open_websocket_url(url))

        with trio.fail_after(args.timeout):
            async with AsyncExitStack() as stack:
                sockets = [
                    await open_one(stack, f"ws://{HOST}:{port}/") for _ in range(args.agents)
                ]
                start = time.perf_counter()
                with cpu_window(process.pid) as phase.cpu:
                    async with trio.open_nursery() as nursery:
                        for ws in sockets:
                            nursery.start_soon(agent, ws)
                phase.seconds = time.perf_counter() - start
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
    return phase
