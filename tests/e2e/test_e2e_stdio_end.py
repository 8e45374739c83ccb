"""The end of ``agora stdio --db``'s input ends the process promptly, even mid long-poll.

A host that dies (``kill -9``) closes both pipes of the stdio server it started. A long-poll
in flight (``wait_for_turn`` waits up to 55 s) must not keep the process, and the lock it
holds on its database, alive until it times out: a host restarted at once would be refused
the database. End of input wakes the long-poll as a shutdown does, and the process exits.
"""

from __future__ import annotations

import json

import pytest
import trio
from e2e_support import jsonl, read_to_end, stdio_process

#: Well under the 55 s the long-poll below asks for.
TIMEOUT = 30

WAIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "wait_for_turn", "arguments": {"wait_for_human": True, "timeout_ms": 55000}},
}


@pytest.mark.parametrize(
    "client",
    [
        pytest.param("closes-stdin", id="client-closes-stdin-and-reads-on"),
        pytest.param("dies", id="client-dies"),
    ],
)
async def test_end_of_input_ends_a_parked_long_poll_at_once(tmp_path, client):
    args = ["stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db")]
    with trio.fail_after(TIMEOUT):
        async with stdio_process(args) as process:
            await process.stdin.send_all(jsonl(WAIT))
            if client == "dies":
                await process.stdout.aclose()
            await process.stdin.aclose()
            out = b"" if client == "dies" else await read_to_end(process.stdout)
            status = await process.wait()
            stderr = await read_to_end(process.stderr)
    assert status == 0, stderr
    assert b"Traceback" not in stderr
    if client != "dies":
        (reply,) = [json.loads(line) for line in out.splitlines()]
        assert reply["id"] == 1
        assert not reply["result"].get("isError"), reply
