"""``agora stdio`` and one database per server, as a user runs them.

A second process on a database that ``agora serve`` holds is refused in one line naming the
file and the holder, exit 2; a URL-shaped ``--db`` creates nothing; ``agora stdio --db`` prints
no page URL it does not serve and honours ``--toolsets``; a wrong token is one line, exit 2.
``agora stdio --connect`` relays the official SDK's stdio client to the running server: a chess
game against a human on that server's page, and a session that survives a server restart.
"""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import pytest
import trio
from chess_players import check_fools_mate, fools_mate_against_the_page
from chess_server import agora_serve
from e2e_config import write_config
from e2e_http import http
from e2e_mcp import CHESS_TOOLS, INITIALIZE, INITIALIZED, jsonl
from e2e_process import (
    AGORA,
    AgoraProcess,
    clean_env,
    one_line,
    read_to_end,
    run_agora,
    stdio_process,
)
from e2e_sdk import sdk_stdio

mcp = pytest.importorskip("mcp")

from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

TIMEOUT = 30


def tools_list(stdout: bytes) -> set[str]:
    replies = [json.loads(line) for line in stdout.splitlines()]
    (listed,) = [r for r in replies if r.get("id") == 1]
    return {t["name"] for t in listed["result"]["tools"]}


# -- one server per database ----------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite file lock; PostgreSQL is shared by nodes")
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["serve", "--port", "0"], id="serve"),
        pytest.param(["stdio", "--toolset", "chess"], id="stdio"),
        pytest.param(["cards", "sign", "--key", "no-such-key"], id="cards-sign"),
    ],
)
async def test_a_second_process_on_a_served_database_is_refused(tmp_path, command):
    db = tmp_path / "agora.db"
    server = AgoraProcess("--db", str(db), "--toolsets", "chess")
    server.start()
    try:
        with trio.fail_after(TIMEOUT):
            done = await run_agora(*command, "--db", str(db))
        assert done.returncode == 2
        line = one_line(done.stderr)
        assert f"database {db} is in use by another agora process (pid {server.pid}" in line
        assert "agora serve" in line
        hint = {"serve": "stop that one first", "stdio": "agora stdio --connect ws://"}
        assert hint.get(command[0], "stop that server first") in line
        assert done.stdout == b""
        health = await http(server.port, "GET", "/healthz")
        assert health.status == 200  # the server is untouched
    finally:
        server.assert_clean_exit(server.stop())


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["stdio", "--toolset", "chess"]])
@pytest.mark.parametrize(
    "db", ["mysql://user@host:3306/agora", "sqlite:///agora.db", "file:agora.db"]
)
async def test_a_url_shaped_db_is_refused_and_creates_nothing(tmp_path, command, db):
    with trio.fail_after(TIMEOUT):
        done = await run_agora(*command, "--db", db, cwd=tmp_path)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert db in line
    assert "SQLite file path, :memory: or a postgresql:// URL" in line
    assert list(tmp_path.iterdir()) == []


# -- agora stdio on a database of its own ---------------------------------------------------


async def test_stdio_prints_no_url_it_does_not_serve(tmp_path):
    stdin = jsonl(INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db"), stdin=stdin
        )
    assert done.returncode == 0, done.stderr
    assert tools_list(done.stdout) == CHESS_TOOLS
    assert b"http://" not in done.stderr
    assert b"ws://" not in done.stderr
    assert b"human player" not in done.stderr


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param(["--toolsets", "chamber"], "chamber", id="chamber-only"),
        pytest.param(["--toolsets", "chess,chamber"], "both", id="two"),
        pytest.param(["--toolset", "chess"], "chess", id="one-toolset"),
    ],
)
async def test_stdio_serves_the_toolsets_it_is_given(tmp_path, flags, expected):
    stdin = jsonl(INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with trio.fail_after(TIMEOUT):
        done = await run_agora("stdio", *flags, "--db", str(tmp_path / "a.db"), stdin=stdin)
    assert done.returncode == 0, done.stderr
    names = tools_list(done.stdout)
    chamber = {n for n in names if n not in CHESS_TOOLS}
    assert (names >= CHESS_TOOLS) == (expected in ("chess", "both"))
    assert bool(chamber) == (expected in ("chamber", "both"))


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--db", "{db}", "--config", "{config}"], id="database"),
        pytest.param(["--connect", "ws://127.0.0.1:1/mcp/chess"], id="bridge-no-server"),
    ],
)
async def test_stdio_with_a_wrong_token_says_so_in_one_line(tmp_path, args):
    config = write_config(tmp_path)
    args = [a.format(db=tmp_path / "t.db", config=config) for a in args]
    with trio.fail_after(TIMEOUT):
        done = await run_agora("stdio", *args, stdin=jsonl(INITIALIZE), AGORA_TOKEN="not-the-token")
    assert done.returncode in (1, 2)
    line = one_line(done.stderr)
    assert done.stdout == b""
    if "--db" in args:
        assert done.returncode == 2
        assert "AGORA_TOKEN does not match any principal" in line
    else:
        assert done.returncode == 1
        assert "cannot connect to ws://127.0.0.1:1/mcp/chess" in line


async def test_the_bridge_refuses_a_wrong_token_and_misplaced_flags(tmp_path):
    config = write_config(tmp_path)
    server = AgoraProcess("--db", str(tmp_path / "agora.db"), "--config", str(config))
    server.start()
    url = f"ws://127.0.0.1:{server.port}/mcp/chess"
    try:
        with trio.fail_after(TIMEOUT):
            bad = await run_agora(
                "stdio", "--connect", url, "--token", "nope", stdin=jsonl(INITIALIZE)
            )
            mixed = await run_agora("stdio", "--connect", url, "--db", "x.db", cwd=tmp_path)
        assert bad.returncode == 2
        assert "HTTP 401: Unauthorized: unknown bearer token" in one_line(bad.stderr)
        assert mixed.returncode == 2
        assert "--db" in one_line(mixed.stderr)
        assert not (tmp_path / "x.db").exists()
    finally:
        server.assert_clean_exit(server.stop())


# -- the bridge -----------------------------------------------------------------------------


def bridge(url: str, log: Any, token: str | None = None) -> Any:
    """The SDK's stdio client running ``agora stdio --connect url``; stderr goes to ``log``."""
    return sdk_stdio(["stdio", "--connect", url] + (["--token", token] if token else []), log)


async def test_the_bridge_plays_the_running_servers_game_against_its_page(tmp_path):
    agent_notes = {2: "e5, as it should.", 4: "Qh4 is mate."}
    with trio.fail_after(60), (tmp_path / "bridge.log").open("a+") as log:
        async with agora_serve(tmp_path / "agora.db") as server:
            ws = server.mcp_url().replace("http://", "ws://")  # with the agent's seat token
            async with bridge(ws, log) as client:
                # The human's moves (through the page) wake the agent's waits via the bridge,
                # and the agent's moves are on the page of the server the bridge joined.
                agent, human, final, page = await fools_mate_against_the_page(
                    server, client, agent_notes
                )
        check_fools_mate(agent, final, page, agent_notes)
        seen = [len(s["history"]) for s in human.states]
        assert 2 in seen  # the page's live stream showed the agent's first move
        log.seek(0)
        assert "Traceback" not in log.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for(pattern: str, log: Any) -> None:
    """Until the bridge's stderr shows ``pattern`` (polling the file it writes, for 20 s)."""
    with trio.move_on_after(20):
        while True:
            log.seek(0)
            if re.search(pattern, log.read()):
                return
            await trio.sleep(0.02)
    log.seek(0)
    raise AssertionError(f"{pattern!r} never appeared in the bridge's log:\n{log.read()}")


async def test_the_bridge_carries_the_session_across_a_server_restart(tmp_path):
    port = free_port()
    args = ("--port", str(port), "--db", str(tmp_path / "agora.db"), "--toolsets", "chess")
    first = AgoraProcess(*args)
    first.start()
    seat = await first.wait_for_log(r"chess: agent endpoint: \S+\?token=")
    token = re.search(r"\?token=(\S+)", seat).group(1)  # type: ignore[union-attr]
    url = f"ws://127.0.0.1:{port}/mcp/chess/default?token={token}"
    with trio.fail_after(60), (tmp_path / "bridge.log").open("a+") as log:
        async with bridge(url, log) as client:
            before = await client.call_tool("get_board", {})
            assert not before.is_error

            # A long-poll in flight when the server dies gets an error, not a hang.
            failure: list[BaseException] = []

            async def park() -> None:
                arguments = {"timeout_ms": 55000, "wait_for_human": True}
                try:
                    await client.call_tool("wait_for_turn", arguments)
                except MCPError as exc:
                    failure.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(park)
                # No event to wait on from outside the process: ask /healthz until it counts
                # the call (every round trip awaits the server).
                while (await http(port, "GET", "/healthz")).json()["in_flight"] < 1:  # noqa: ASYNC110
                    await trio.sleep(0.01)
                first.proc.kill()  # SIGKILL: no goodbye from the server
                await first.wait_exit()
            assert failure, "the parked call never ended"
            assert "connection to the agora server" in str(failure[0])
            await wait_for("lost the connection", log)

            second = AgoraProcess(*args)
            second.start()
            try:
                await wait_for(re.escape(f"reconnected to {url.split('?')[0]}?…"), log)
                # The same SDK session goes on: the server needs initialize before calls,
                # and the bridge replayed it.
                after = await client.call_tool("get_board", {})
                assert not after.is_error, after
                assert after.structured_content["fen"] == before.structured_content["fen"]
                assert {t.name for t in (await client.list_tools()).tools} == CHESS_TOOLS
            finally:
                second.assert_clean_exit(second.stop())
        log.seek(0)
        text = log.read()
    assert "Traceback" not in text, text
    assert text.count("lost the connection") == 2  # the kill, then the graceful stop
    assert token not in text  # the seat token is a secret: stderr shows no query


async def test_the_bridge_relays_progress_server_requests_and_cancellations(tmp_path):
    server = AgoraProcess("--db", str(tmp_path / "agora.db"), "--conformance")
    server.start()
    url = f"ws://127.0.0.1:{server.port}/mcp/conformance"
    asked = trio.Event()

    async def sample(context: Any, params: Any) -> Any:
        (message,) = params.messages
        return mcp.types.CreateMessageResult(
            role="assistant",
            content=mcp.types.TextContent(type="text", text=f"echo {message.content.text}"),
            model="test",
        )

    async def elicit(context: Any, params: Any) -> Any:
        asked.set()
        await trio.sleep_forever()  # never answers: the agent gives up and cancels the call

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    params = StdioServerParameters(command=AGORA, args=["stdio", "--connect", url], env=clean_env())
    try:
        with trio.fail_after(TIMEOUT), (tmp_path / "bridge.log").open("a+") as log:
            async with mcp.Client(
                stdio_client(params, errlog=log),
                mode="legacy",
                read_timeout_seconds=TIMEOUT,
                sampling_callback=sample,
                elicitation_callback=elicit,
            ) as client:
                done = await client.call_tool(
                    "test_tool_with_progress", {}, progress_callback=on_progress
                )
                assert not done.is_error
                assert progress == [(0, 100, "started"), (50, 100, "half way"), (100, 100, "done")]

                # A server-to-client request and its answer, both through the bridge.
                sampled = await client.call_tool("test_sampling", {"prompt": "hello"})
                assert sampled.content[0].text == "LLM response: echo hello"

                # Cancelling a call the server is still working on (it waits for the
                # client's elicitation answer) sends notifications/cancelled through the
                # bridge, and the server ends the call.
                with trio.CancelScope() as scope:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(client.call_tool, "test_elicitation", {"message": "?"})
                        await asked.wait()
                        assert (await http(server.port, "GET", "/healthz")).json()["in_flight"] == 1
                        scope.cancel()
                while (await http(server.port, "GET", "/healthz")).json()["in_flight"]:  # noqa: ASYNC110
                    await trio.sleep(0.01)
                again = await client.call_tool("test_simple_text", {})
                assert not again.is_error
            log.seek(0)
            assert "Traceback" not in log.read()
    finally:
        server.assert_clean_exit(server.stop())


@pytest.mark.parametrize("mode", ["database", "bridge"])
async def test_a_client_that_stops_reading_ends_the_session_quietly(tmp_path, mode):
    server = None
    if mode == "database":
        args = ["stdio", "--toolset", "conformance", "--db", str(tmp_path / "a.db")]
    else:
        server = AgoraProcess("--db", str(tmp_path / "a.db"), "--conformance")
        server.start()
        args = ["stdio", "--connect", f"ws://127.0.0.1:{server.port}/mcp/conformance"]
    progress = {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 1}}
    try:
        with trio.fail_after(TIMEOUT):
            async with stdio_process(args) as process:
                await process.stdout.aclose()  # the client stops reading, then sends a call
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": progress}
                await process.stdin.send_all(jsonl(call))
                await process.stdin.aclose()
                status = await process.wait()
                stderr = await read_to_end(process.stderr)
        assert status == 0, stderr
        assert b"Traceback" not in stderr
    finally:
        if server is not None:
            server.assert_clean_exit(server.stop())


@pytest.mark.sqlite_only("the default ./agora.db: a SQLite file in the working directory")
async def test_stdio_says_where_its_database_is_when_it_is_the_default(tmp_path):
    # A client may launch it from $HOME or /: the default ./agora.db was made there without
    # a word. The start line names the file by its absolute path; stdout stays MCP's.
    stdin = jsonl(INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with trio.fail_after(TIMEOUT):
        done = await run_agora("stdio", "--toolset", "chess", stdin=stdin, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert tools_list(done.stdout) == CHESS_TOOLS
    said = done.stderr.decode()
    assert f"serving /mcp/chess on stdio; database {tmp_path / 'agora.db'} (the default" in said
    assert (tmp_path / "agora.db").exists()


async def test_stdio_never_logs_the_token_in_its_endpoint(tmp_path):
    """``--endpoint /mcp/chess/default?token=...`` put the agent's seat token in the INFO
    start line (and an endpoint that was not one in the refusal), where ``--connect`` hides
    it: both now show the path with ``?…`` for its query."""
    secret = "seat-token-that-must-not-be-logged"
    stdin = jsonl(INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    db = str(tmp_path / "a.db")
    with trio.fail_after(TIMEOUT):
        served = await run_agora(
            "stdio", "--db", db, "--endpoint", f"/mcp/chess/default?token={secret}", stdin=stdin
        )
        refused = await run_agora("stdio", "--db", db, "--endpoint", f"/nope?token={secret}")
    assert served.returncode == 0, served.stderr
    assert tools_list(served.stdout) == CHESS_TOOLS
    assert b"serving /mcp/chess/default?\xe2\x80\xa6 on stdio; database " in served.stderr
    assert refused.returncode == 2, refused.stderr
    assert b"/nope?\xe2\x80\xa6 is not an MCP endpoint" in refused.stderr, refused.stderr
    assert secret.encode() not in served.stderr + refused.stderr


async def test_stdio_with_a_token_and_no_principals_says_none_are_configured(tmp_path):
    # A tester ran `agora stdio --db solo.db` with AGORA_TOKEN set and no --config, and read
    # only "does not match any principal": there were none to match.
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "stdio", "--db", str(tmp_path / "t.db"), stdin=jsonl(INITIALIZE), AGORA_TOKEN="tok"
        )
    assert done.returncode == 2
    assert done.stdout == b""
    line = one_line(done.stderr)
    assert "AGORA_TOKEN is set but no principals are configured" in line, line
