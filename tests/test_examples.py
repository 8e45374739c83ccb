"""The README's embedding example, examples/notes.py, as a program of one's own runs it.

Its toolset is served beside the built-in ones on a real port; the official MCP SDK finds
its tools, writes notes and reads them back; a notebook's notes survive a restart on the
same database, and a name never written to reads as empty.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import trio

from agora.config import Config
from agora.server.app import load_toolsets
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK 2.x (pip install 'mcp>=2')")
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "examples" / "notes.py"
TIMEOUT = 60


def _load_example():
    spec = importlib.util.spec_from_file_location("notes_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def _session_calls(url: str, calls: list[tuple[str, dict]]) -> list:
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as s:
        await s.initialize()
        listed = {tool.name for tool in (await s.list_tools()).tools}
        assert listed == {"add_note", "read_notes"}
        return [await s.call_tool(name, args) for name, args in calls]


async def test_the_notes_example_serves_its_toolset_beside_the_built_in_ones(tmp_path):
    notes = _load_example()
    config = Config(port=0, db=str(tmp_path / "notes.db"))
    toolsets = [*load_toolsets(config.toolsets), notes.toolset()]
    with trio.fail_after(TIMEOUT):
        async with open_server(config, toolsets=toolsets) as server:
            first, second, empty = await _session_calls(
                f"{server.url}/mcp/notes",
                [
                    ("add_note", {"notebook": "plans", "text": "ship the example"}),
                    ("add_note", {"notebook": "plans", "text": "test it"}),
                    ("read_notes", {"notebook": "never-written"}),
                ],
            )
            assert first.structured_content == {"notebook": "plans", "count": 1}
            assert second.structured_content == {"notebook": "plans", "count": 2}
            assert empty.structured_content == {"notebook": "never-written", "notes": []}
        async with open_server(config, toolsets=toolsets) as server:  # the same file again
            [read] = await _session_calls(
                f"{server.url}/mcp/notes", [("read_notes", {"notebook": "plans"})]
            )
    assert not read.is_error
    assert read.structured_content["notes"] == ["ship the example", "test it"]


async def test_a_full_notebook_refuses_the_next_note_and_keeps_the_rest(tmp_path, monkeypatch):
    notes = _load_example()
    monkeypatch.setattr(notes, "MAX_NOTES", 2)
    config = Config(port=0, db=str(tmp_path / "notes.db"))
    with trio.fail_after(TIMEOUT):
        async with open_server(config, toolsets=[notes.toolset()]) as server:
            note = {"notebook": "small", "text": "x"}
            replies = await _session_calls(
                f"{server.url}/mcp/notes",
                [("add_note", note), ("add_note", note), ("add_note", note),
                 ("read_notes", {"notebook": "small"})],
            )  # fmt: skip
    assert [r.is_error for r in replies] == [False, False, True, False]
    assert replies[2].structured_content["error"] == "notebook_full"
    assert replies[3].structured_content["notes"] == ["x", "x"]


@pytest.mark.parametrize(
    ("args", "environ"),
    [
        pytest.param(["0"], {}, id="argument"),
        pytest.param([], {"AGORA_PORT": "0"}, id="environment"),
    ],
)
async def test_the_notes_example_takes_its_port_and_stops_quietly_on_ctrl_c(
    tmp_path, args, environ
):
    """It printed a traceback on Ctrl-C, and could only serve port 8765."""
    env = {k: v for k, v in os.environ.items() if k != "AGORA_PORT"} | environ
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            run = partial(
                trio.run_process,
                [sys.executable, str(EXAMPLE), *args],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                check=False,
            )
            process: trio.Process = await nursery.start(run)
            assert process.stdout is not None
            assert process.stderr is not None
            said = b""
            while b"(Ctrl-C stops)" not in said:
                chunk = await process.stdout.receive_some()
                assert chunk, said
                said += chunk
            url = said.split(b"serving on ", 1)[1].split(b":", 2)
            assert url[2].split(b"/")[0] != b"8765"  # the port it was given: 0, any free one
            process.send_signal(signal.SIGINT)
            errors = b""
            while chunk := await process.stderr.receive_some():
                errors += chunk
            assert await process.wait() == 0, errors
    assert b"Traceback" not in errors, errors


def test_the_notes_example_refuses_a_port_that_is_none():
    notes = _load_example()
    assert notes.port_from([], {}) == 8765
    assert notes.port_from([], {"AGORA_PORT": "9000"}) == 9000
    assert notes.port_from(["9001"], {"AGORA_PORT": "9000"}) == 9001
    for args in (["http"], ["70000"], ["1", "2"], ["-1"]):
        with pytest.raises(ValueError, match="port"):
            notes.port_from(args, {})


async def test_the_notes_example_serves_its_endpoint_on_stdio_to_a_client_that_launches_it(
    tmp_path,
):
    """An embedding developer's finding: a program of one's own that an MCP client launches
    (Claude Desktop's command) had no documented way to serve its toolset on stdio."""
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k != "AGORA_PORT"}
    env["AGORA_DB"] = str(tmp_path / "stdio.db")
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE), "--stdio"], env=env)
    with trio.fail_after(TIMEOUT):
        for text in ("over stdio", None):  # then again: the note was saved
            async with mcp.Client(params, read_timeout_seconds=30) as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
                assert listed == {"add_note", "read_notes"}
                if text is not None:
                    added = await client.call_tool("add_note", {"notebook": "s", "text": text})
                    assert added.structured_content == {"notebook": "s", "count": 1}
                read = await client.call_tool("read_notes", {"notebook": "s"})
                assert read.structured_content["notes"] == ["over stdio"]


@pytest.mark.sqlite_only("a SQLite file's lock: nodes share a PostgreSQL database")
def test_the_notes_example_on_a_database_in_use_says_so_in_one_line(tmp_path):
    """A tester's finding: a second ``notes.py --stdio`` on the same notes.db printed a
    whole traceback ending in DatabaseInUse (exit 1), where agora's own commands say one
    line and exit 2."""
    env = {k: v for k, v in os.environ.items() if k != "AGORA_PORT"}
    env["AGORA_DB"] = str(tmp_path / "busy.db")
    first = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--stdio"], cwd=tmp_path, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = 30
        lock = tmp_path / "busy.db.lock"
        while not (lock.exists() and lock.read_text().strip()) and deadline > 0:
            time.sleep(0.1)
            deadline -= 0.1
        second = subprocess.run(
            [sys.executable, str(EXAMPLE), "--stdio"], cwd=tmp_path, env=env,
            stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        first.stdin.close()  # its end of input: it stops
        first.wait(timeout=60)
        first.stdout.close()
        first.stderr.close()
    assert second.returncode == 2, second.stderr
    assert second.stdout == b""
    [line] = second.stderr.decode().splitlines()
    assert line.startswith("notes.py: database "), line
    assert "is in use by another agora process" in line
