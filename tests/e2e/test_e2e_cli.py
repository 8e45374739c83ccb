"""The ``agora`` command: ``call`` against a running server, ``--help`` everywhere, and a
graceful SIGTERM that answers a parked long-poll before the process exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import socket as stdlib_socket
import sys
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
from e2e_config import TOKEN
from e2e_http import http
from e2e_process import AGORA, AgoraProcess, clean_env

from agora.cli import main
from agora.client import connect
from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TIMEOUT = 20


async def agora_cli(*args: str) -> trio.Process:
    return await trio.run_process(
        [AGORA, *args], capture_stdout=True, capture_stderr=True, check=False, env=clean_env()
    )


async def test_agora_call_prints_the_result(agora):
    with trio.fail_after(TIMEOUT):
        done = await agora_cli("call", f"{agora.url}/mcp/chess", "get_board", "{}")
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["structuredContent"]["table"] == "default"
    assert result["structuredContent"]["fen"]


async def test_agora_call_into_a_closed_pipe_ends_quietly(agora):
    """``agora call ... | head -3``: the reader closes the pipe before the result is all
    written. That printed "agora: [Errno 32] Broken pipe" and exited 1, the status of a tool
    error or a failed connection; now it says nothing and exits as a command SIGPIPE ends
    does in a shell (141), as Unix tools do."""
    read, write = os.pipe()
    os.close(read)  # (the reader is gone before the result is written: the pipe is closed)
    try:
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [AGORA, "call", f"{agora.url}/mcp/chess", "get_board", "{}"],
                stdout=write, capture_stderr=True, check=False, env=clean_env(),
            )  # fmt: skip
    finally:
        os.close(write)
    assert done.stderr == b""
    assert done.returncode == 128 + signal.SIGPIPE


async def test_agora_call_with_a_token_and_a_tool_error(agora):
    args = ("call", f"{agora.url}/mcp/chess", "move_piece", '{"from": "e2"}', "--token", TOKEN)
    with trio.fail_after(TIMEOUT):
        done = await agora_cli(*args)
    assert done.returncode == 1  # an isError result is printed and fails the command
    assert json.loads(done.stdout)["isError"] is True


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        pytest.param(("{url}/mcp/chess", "no_such_tool"),
                     "the server answered with JSON-RPC error -32602: unknown tool: no_such_tool",
                     3, id="unknown-tool"),
        pytest.param(("{url}/mcp/chess", "get_board", "[1,"), "not JSON", 2, id="bad-arguments"),
        # a refused token is bad configuration: exit 2, as the README and agora stdio say
        # with the server's own words (an operator got "HTTP 401" alone)
        pytest.param(("{url}/mcp", "get_board", "{}", "--token", "x"),
                     "HTTP 401: Unauthorized: unknown bearer token (Authorization carries", 2,
                     id="unknown-token"),
        pytest.param(("{url}/nowhere", "get_board"), "HTTP 404", 1, id="no-endpoint"),
        pytest.param(("http://127.0.0.1:1/mcp", "get_board"), "cannot connect", 1,
                     id="no-server"),
    ],
)  # fmt: skip
async def test_agora_call_reports_failures_in_one_line(agora, args, message, status):
    with trio.fail_after(TIMEOUT):
        done = await agora_cli("call", *(a.replace("{url}", agora.url) for a in args))
    assert done.returncode == status, done.stderr.decode()
    assert message in done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert done.stdout == b""


async def _explode(call: ToolCall) -> dict[str, Any]:
    raise RuntimeError("a bug in the handler")


async def test_agora_call_reports_an_internal_error_as_the_servers_with_its_id(tmp_path):
    """A JSON-RPC error was "the server refused the call", without the correlation id that
    names the log line, and exited 1, the status of an isError result."""
    tool = {"name": "explode", "description": "Fails.", "inputSchema": {"type": "object"}}
    toolset = Toolset("boom", {"explode": _explode}, contract=None, tools=[tool])
    config = Config(port=0, db=str(tmp_path / "boom.db"))
    with trio.fail_after(TIMEOUT):
        async with open_server(config, toolsets=[toolset]) as server:
            done = await agora_cli("call", f"{server.url}/mcp/boom", "explode")
    said = done.stderr.decode()
    assert done.returncode == 3, said
    assert re.fullmatch(
        r"agora call: the server answered with JSON-RPC error -32603: internal error"
        r" \(correlation id corr-[0-9a-f]{16}: the server's log says more\)\n",
        said,
    ), said
    assert done.stdout == b""


def test_cards_sign_refusals_go_to_stderr_as_the_command_s_other_refusals(capsys, tmp_path):
    assert main(["cards", "sign", "--db", str(tmp_path / "x.db"), "--key", "nokey"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("agora: cannot sign: "), said.err


async def test_the_console_script_runs():
    with trio.fail_after(TIMEOUT):
        done = await agora_cli("serve", "--help")
    assert done.returncode == 0
    assert b"--port" in done.stdout
    assert b"--conformance" in done.stdout


async def test_python_dash_m_agora_is_the_agora_command():
    """Three newcomers tried ``python -m agora serve``: it failed, agora had no __main__."""
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            [sys.executable, "-m", "agora", "serve", "--help"],
            capture_stdout=True, capture_stderr=True, check=False, env=clean_env(),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert b"--port" in done.stdout


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_sigterm_answers_a_parked_long_poll_then_exits_0(start_agora, signum):
    """SIGHUP (a closed terminal, a service manager's reload) used to end the process at
    once, with no drain and no log line; it now shuts down as SIGTERM does."""
    server = start_agora()
    reply: dict = {}

    async def park(task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with connect(f"{server.url}/mcp/chess") as client:
            task_status.started(client)
            # The human has not chosen sides: this waits for the choice, up to 55 s.
            arguments = {"timeout_ms": 55000, "wait_for_human": True}
            reply.update(await client.call_tool("wait_for_turn", arguments))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            client = await nursery.start(park)
            assert await client.request("ping") == {}
            # Until the call is parked, not only in flight: the log's count below says so
            # (on PostgreSQL the table's load takes a moment first). Bounded polling.
            for _ in range(500):
                health = (await http(server.port, "GET", "/healthz")).json()
                if health["in_flight"] >= 1 and health["parked"] >= 1:
                    break
                await trio.sleep(0.01)
            else:
                raise AssertionError("wait_for_turn never started")
            server.signal(signum)
        # The nursery ended: the long-poll came back well before its 55 s.
        assert reply.get("isError") is not True, reply
        assert reply["structuredContent"]["table"] == "default"
        assert reply["structuredContent"]["nextAction"]["tool"] == "wait_for_turn"
        server.assert_clean_exit(await server.wait_exit())
    # The log says the signal, what the drain found, and when the server had stopped.
    assert f"INFO agora.cli: received {signum.name}: shutting down" in server.log, server.log
    assert "shutting down: 1 calls in flight (1 long-polls parked, " in server.log, server.log
    assert "still running after" not in server.log, server.log  # it answered in time
    assert "INFO agora.server.embed: stopped; shutdown took " in server.log, server.log


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        pytest.param("port-in-use", ": Address already in use (another", id="port-in-use"),
        pytest.param("db-is-a-directory", "it is a directory", id="db-is-a-directory"),
        # (/dev/null got a -journal and a .lock made beside it, then "disk I/O error")
        pytest.param("db-is-a-socket", "it is not a regular file", id="db-is-a-socket"),
        pytest.param("bad-setting", "port must be an integer, not 'not-a-port'", id="bad-setting"),
    ],
)
async def test_bad_configuration_is_one_line_and_exit_2(tmp_path, problem, message):
    args = ["serve", "--port", "0", "--db", str(tmp_path / "agora.db")]
    env = clean_env()
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        if problem == "port-in-use":
            args[2] = str(taken.getsockname()[1])
        elif problem == "db-is-a-directory":
            args[4] = str(tmp_path)
        elif problem == "db-is-a-socket":
            unix = stdlib_socket.socket(stdlib_socket.AF_UNIX)
            unix.bind(args[4])
            unix.close()
        else:
            env["AGORA_PORT"] = "not-a-port"
            args = ["serve", "--db", str(tmp_path / "agora.db")]
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [AGORA, *args], capture_stdout=True, capture_stderr=True, check=False, env=env
            )
    assert done.returncode == 2, done.stderr.decode()
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert message in lines[0]
    assert "Traceback" not in lines[0]
    if problem == "db-is-a-socket":  # refused before any file was made beside it
        assert [p.name for p in tmp_path.iterdir()] == ["agora.db"]


async def test_serve_sets_the_switch_interval_it_is_configured_with(start_agora):
    default = start_agora()
    tuned = start_agora("switch_interval_ms = 0.5")
    with trio.fail_after(TIMEOUT):
        health = (await http(default.port, "GET", "/healthz")).json()
        assert health["switch_interval_ms"] == 5.0  # 0 keeps the interpreter's own
        health = (await http(tuned.port, "GET", "/healthz")).json()
        assert health["switch_interval_ms"] == 0.5


async def test_serve_reports_its_collector_policy_in_healthz(start_agora):
    server = start_agora()
    with trio.fail_after(TIMEOUT):
        while True:  # a tick every 0.1 s freezes what is young, unscanned
            collector = (await http(server.port, "GET", "/healthz")).json()["collector"]
            if collector["freezes"] >= 2:
                break
            await trio.sleep(0.05)
    assert collector["frozen_objects"] > 0
    assert collector["garbage_found"] == 0  # the server makes no reference cycles


async def test_a_negative_switch_interval_is_refused_in_one_line(tmp_path):
    env = clean_env(AGORA_SWITCH_INTERVAL_MS="-1")
    args = ["serve", "--port", "0", "--db", str(tmp_path / "agora.db")]
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            [AGORA, *args], capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    assert done.returncode == 2, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [
        "agora: AGORA_SWITCH_INTERVAL_MS: switch_interval_ms must be 0 or more, not -1"
    ]
    assert not (tmp_path / "agora.db").exists()  # refused before anything opened


WARNING = "WARNING agora.cli: "
ANONYMOUS = f"{WARNING}callers without a bearer token"  # (no principals: tests/test_anonymous)


def _banner_urls(log: str) -> list[str]:
    return re.findall(r"\b(?:https?|wss?)://\S+", log)


async def test_serve_on_every_interface_prints_usable_urls_and_says_which_hosts_it_accepts(
    start_agora,
):
    # The deployment command of docs/scale-out.md: bound to 0.0.0.0, no allowed_hosts.
    server = start_agora("", "--host", "0.0.0.0")
    with trio.fail_after(TIMEOUT):
        await server.wait_for_log(r"database: ")
        warning = await server.wait_for_log(WARNING)
    urls = _banner_urls(server.log)
    assert urls, server.log
    assert not [u for u in urls if "0.0.0.0" in u], server.log  # no URL a client cannot use
    assert server.url.startswith("http://127.0.0.1:"), server.log  # what the chess links use
    bases = {re.sub(r"^ws", "http", "/".join(u.split("/", 3)[:3])) for u in urls}
    assert bases == {server.url}, urls
    # What the README's Endpoints section says the banner shows, beside the chess links
    paths = {urlsplit(u.rstrip(",")).path for u in urls}
    for path in ("/", "/mcp", "/play", "/board", "/cards", "/chamber/keys", "/healthz", "/readyz"):
        assert path in paths, server.log
    # One line: what is accepted, what is refused, and the settings that allow more.
    assert server.log.count(WARNING) - server.log.count(ANONYMOUS) == 1, server.log
    for said in ("loopback", "403", 'allowed_hosts = ["', "AGORA_ALLOWED_HOSTS=", "public_url"):
        assert said in warning, warning
    with trio.fail_after(TIMEOUT):
        assert (await http(server.port, "GET", "/healthz")).status == 200


@pytest.mark.parametrize(
    ("settings", "warned"),
    [
        pytest.param('allowed_hosts = ["agora.example.com"]', None, id="allowed-hosts"),
        pytest.param(
            'allowed_hosts = ["agora.example.com"]\npublic_url = "https://agora.example.com"',
            None,
            id="allowed-hosts-and-public-url",
        ),
        pytest.param(
            'public_url = "https://agora.example.com"', "agora.example.com", id="public-url-only"
        ),
    ],
)
async def test_serve_warns_only_when_the_names_clients_use_are_refused(
    start_agora, settings, warned
):
    server = start_agora(settings, "--host", "0.0.0.0")
    with trio.fail_after(TIMEOUT):
        await server.wait_for_log(r"database: ")
        health = await http(server.port, "GET", "/healthz")  # the banner was printed before
    assert health.status == 200
    lines = [line for line in server.log.splitlines() if WARNING in line and ANONYMOUS not in line]
    if warned is None:
        assert lines == [], server.log
    else:
        assert len(lines) == 1, server.log
        assert warned in lines[0]
        assert 'allowed_hosts = ["agora.example.com"]' in lines[0]
    if "public_url" in settings:  # the banner's endpoints are on public_url, as chess's links
        assert "  MCP (Streamable HTTP): https://agora.example.com/mcp" in server.log
        assert "  public URL:            https://agora.example.com" in server.log


@pytest.mark.parametrize(
    ("flag", "value"), [("--toolset", "nope"), ("--toolsets", "nope")], ids=["one", "several"]
)
def test_an_unknown_toolset_is_refused_naming_the_flag_given(tmp_path, capsys, flag, value):
    """``agora stdio --toolset nope`` was refused as "--toolsets: unknown toolset", a flag
    the operator had not given."""
    assert main(["stdio", "--db", str(tmp_path / "a.db"), flag, value]) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"agora: {flag}: unknown toolset `nope` (known: "), said
    assert not (tmp_path / "a.db").exists()


async def test_a_server_started_under_nohup_keeps_running_on_a_hang_up(tmp_path):
    # An operator ran `setsid nohup agora serve`: SIGHUP, ignored as nohup asks, still
    # shut the server down (it installed its own handler over the ignored disposition).
    server = AgoraProcess(
        "--db", str(tmp_path / "a.db"), "--toolsets", "chess",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )  # fmt: skip
    server.start()
    try:
        with trio.fail_after(TIMEOUT):
            server.signal(signal.SIGHUP)
            # Served after the hang-up: the second request cannot come before the signal
            # was delivered (the kernel delivers it before the process runs again).
            for _ in range(2):
                assert (await http(server.port, "GET", "/readyz")).status == 200
    finally:
        server.assert_clean_exit(server.stop())
    assert "received SIGHUP" not in server.log, server.log
