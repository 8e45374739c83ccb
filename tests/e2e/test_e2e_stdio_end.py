"""The end of ``agora stdio --db``'s input ends the process promptly, even mid long-poll;
SIGTERM ends the input the same way, the calls in flight answered first.

A host that dies (``kill -9``) closes both pipes of the stdio server it started. A long-poll
in flight (``wait_for_turn`` waits up to 55 s) must not keep the process, and the lock it
holds on its database, alive until it times out: a host restarted at once would be refused
the database. End of input wakes the long-poll as a shutdown does, and the process exits.
"""

from __future__ import annotations

import json
import signal

import pytest
import trio
from e2e_mcp import jsonl
from e2e_process import read_to_end, stdio_process

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


async def test_sigterm_answers_the_calls_in_flight_before_the_process_ends(tmp_path):
    """SIGTERM used to cancel the session: a parked wait got no reply at all (the host saw
    the process end mid-call). Now the wait answers, marked shutting down, and the process
    ends with stdin still open."""
    args = ["stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db")]
    board = {**WAIT, "id": 2, "params": {"name": "get_board", "arguments": {}}}
    with trio.fail_after(TIMEOUT):
        async with stdio_process(args) as process:
            await process.stdin.send_all(jsonl(WAIT, board))
            assert b'"id":2' in await process.stdout.receive_some(65536)
            await trio.sleep(0.5)  # the wait parks (it began before get_board answered)
            process.send_signal(signal.SIGTERM)
            out = await read_to_end(process.stdout)
            status = await process.wait()
            stderr = await read_to_end(process.stderr)
    assert status == 0, stderr
    assert b"SIGTERM, shutting down" in stderr
    assert b"Traceback" not in stderr
    (reply,) = [json.loads(line) for line in out.splitlines()]
    assert reply["id"] == 1
    body = reply["result"]["structuredContent"]
    assert (body["statusCode"], body["shuttingDown"]) == ("WAIT_TIMEOUT", True)
