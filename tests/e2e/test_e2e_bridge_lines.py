"""``agora stdio --connect`` against a real server, for lines a client may send that the
bridge cannot make sense of: it must survive them and answer each as ``agora stdio --db``
does, the answers it owes all written before it exits."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import trio
from e2e_config import TOKEN
from e2e_mcp import jsonl
from e2e_process import AGORA, clean_env, read_to_end, stdio_process

if TYPE_CHECKING:
    from e2e_process import AgoraProcess

TIMEOUT = 30


async def _ended(process: trio.Process) -> tuple[list[Any], int, bytes]:
    """The bridge's answers (its stdout to its end), exit status and stderr."""
    out = await read_to_end(process.stdout)
    status = await process.wait()
    stderr = await read_to_end(process.stderr)
    return [json.loads(line) for line in out.splitlines()], status, stderr


def _bridge(agora: AgoraProcess) -> list[str]:
    return ["stdio", "--connect", f"ws://127.0.0.1:{agora.port}/mcp/chess", "--token", TOKEN]


async def test_a_line_nested_too_deep_is_answered_and_the_bridge_goes_on(agora):
    """A short line nested 1000 levels deep used to kill the bridge with a traceback
    (RecursionError from its decoder), losing every call in flight. Now the server's answer
    comes back with the line's id, and the next call is served."""
    deep = "[" * 1000 + "]" * 1000
    line = f'{{"jsonrpc":"2.0","id":1000,"method":"ping","params":{{"a":{deep}}}}}\n'
    batch = "[" * 1201 + "]" * 1201 + "\n"
    with trio.fail_after(TIMEOUT):
        async with stdio_process(_bridge(agora)) as process:
            await process.stdin.send_all(line.encode() + batch.encode())
            await process.stdin.send_all(jsonl({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
            await process.stdin.aclose()
            answers, status, stderr = await _ended(process)
    assert b"Traceback" not in stderr, stderr
    assert status == 0, stderr
    by_id = {a["id"]: a for a in answers}
    assert by_id[7] == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert by_id[1000]["error"]["code"] == -32600
    assert "nested deeper than 64 levels" in by_id[1000]["error"]["message"]
    assert by_id[None]["error"]["code"] == -32600


async def test_the_answer_to_a_malformed_line_is_written_before_the_end(start_agora):
    """Three tools/list answers (some 270 KB) backed up in the bridge's stdout, then a line
    that is not JSON: the bridge used to exit once the three were written, its input
    ended, without the -32700 the server had sent for the line (``agora stdio --db``
    writes it). Now everything owed is written before the bridge exits."""
    agora: AgoraProcess = start_agora("", "--toolsets", "debate")
    url = f"ws://127.0.0.1:{agora.port}/mcp/debate"
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "0"},
        },
    }
    listing = [{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in (1, 2, 3)]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with trio.fail_after(TIMEOUT):
        process = await trio.lowlevel.open_process(
            [AGORA, "stdio", "--connect", url, "--token", TOKEN],
            stdin=-1,
            stdout=-1,
            stderr=-1,
            env=clean_env(),
        )
        assert process.stdin is not None
        await process.stdin.send_all(jsonl(hello, initialized, *listing) + b"garbage\n")
        await trio.sleep(3)  # the answers back up in the pipe meanwhile
        await process.stdin.aclose()
        answers, status, stderr = await _ended(process)
    assert b"Traceback" not in stderr, stderr
    assert status == 0, stderr
    assert [a["id"] for a in answers if "result" in a] == [0, 1, 2, 3]
    (error,) = [a for a in answers if "error" in a]
    assert (error["id"], error["error"]["code"]) == (None, -32700), error
