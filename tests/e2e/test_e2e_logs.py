"""What ``agora serve`` writes to its log: time-stamped lines, at the configured level.

An operator lines a node's log up with a balancer's and a database's: every line says when
it was written (UTC, to the millisecond). ``log_level`` (or ``AGORA_LOG_LEVEL``) chooses the
least severe records written; ``-v`` is debug whatever it says; a word it does not know is
refused in one line, exit status 2. Real ``agora serve`` processes; the INFO line looked
for is the one a start with its soft open-files limit below the hard one writes. The relay,
``agora stdio --connect``, which takes no other setting, takes ``AGORA_LOG_LEVEL`` too.
"""

from __future__ import annotations

import resource

import pytest
import trio
from e2e_config import TOKEN
from e2e_mcp import INITIALIZE, jsonl
from e2e_process import STAMP, AgoraProcess, clean_env, run_agora, unstamped

TIMEOUT = 30
RAISED = "INFO agora.server.descriptors: open files limit raised from 512 to"


def _soft_512() -> None:
    """In the child: a soft open-files limit of 512 under a higher hard one."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))


def _serve(tmp_path, *args: str, **env: str) -> AgoraProcess:
    db = str(tmp_path / "logs.db")
    return AgoraProcess(
        "--db", db, "--toolsets", "chess", *args, env=clean_env(**env), preexec_fn=_soft_512
    )


async def test_log_lines_begin_with_the_utc_time_to_the_millisecond(tmp_path):
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 512, "the hard limit is too low"
    with _serve(tmp_path) as server:
        raised = [line for line in server.lines if "open files limit raised" in line]
        assert len(raised) == 1, server.log
        assert STAMP.match(raised[0]), raised
        assert unstamped(raised[0]).startswith(RAISED), raised
        server.assert_clean_exit(server.stop())


async def test_log_level_warning_leaves_info_out_and_v_brings_debug_back(tmp_path):
    config = tmp_path / "agora.toml"
    config.write_text('log_level = "warning"\n')
    with _serve(tmp_path, "--config", str(config)) as server:
        assert "open files limit raised" not in server.log, server.log
        server.assert_clean_exit(server.stop(), info=False)
    with _serve(tmp_path, AGORA_LOG_LEVEL="warning") as server:
        assert "open files limit raised" not in server.log, server.log
        server.assert_clean_exit(server.stop(), info=False)
    with _serve(tmp_path, "-v", AGORA_LOG_LEVEL="warning") as server:
        assert "open files limit raised" in server.log, server.log
        assert "Z DEBUG " in server.log, server.log
        server.assert_clean_exit(server.stop())


async def test_start_warnings_and_the_signal_line_are_log_lines_at_their_level(tmp_path):
    """Before: the exposure warning printed as ``agora: warning: ...`` and the signal as
    ``agora: SIGTERM, shutting down``, outside the log's format and whatever log_level said.
    The banner (the URLs) stays plain text: it is not a log line."""
    with _serve(tmp_path, "--host", "0.0.0.0") as server:
        server.assert_clean_exit(server.stop())
    lines = [line.rstrip("\n") for line in server.lines if line.strip()]
    warned = [line for line in lines if "listening on every interface" in line]
    assert len(warned) == 1, server.log
    assert STAMP.match(warned[0]), warned
    assert unstamped(warned[0]).startswith("WARNING agora.cli: listening on every"), warned
    # No principals, bound to every interface: anyone who reaches the port may call the tools.
    anonymous = [line for line in lines if "callers without a bearer token" in line]
    assert len(anonymous) == 1, server.log
    assert unstamped(anonymous[0]).startswith("WARNING agora.cli: callers without a bearer")
    signalled = [line for line in lines if "SIGTERM" in line]
    assert len(signalled) == 1, server.log
    assert STAMP.match(signalled[0]), signalled
    assert unstamped(signalled[0]) == "INFO agora.cli: received SIGTERM: shutting down"
    assert any(line.startswith("agora ") and " serving chess" in line for line in lines)
    assert not [line for line in lines if line.startswith("agora: ")], server.log
    with _serve(tmp_path, "--host", "0.0.0.0", AGORA_LOG_LEVEL="error") as server:
        server.assert_clean_exit(server.stop(), info=False)
    assert "listening on every interface" not in server.log, server.log
    assert "callers without a bearer token" not in server.log, server.log
    assert "SIGTERM" not in server.log, server.log
    assert " serving chess on " in server.log  # the banner is not a log line


async def test_an_unknown_log_level_is_refused_in_one_line(tmp_path):
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "serve", "--port", "0", "--db", str(tmp_path / "agora.db"), AGORA_LOG_LEVEL="loud"
        )
    assert done.returncode == 2, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [
        "agora: AGORA_LOG_LEVEL: log_level must be one of debug, info, warning, error, not 'loud'"
    ]


@pytest.mark.parametrize(("level", "debug"), [("debug", True), ("info", False)])
async def test_the_relay_takes_agora_log_level(agora, level, debug):
    # The relay's own records are its WebSocket library's, all DEBUG: written at debug only.
    url = f"ws://127.0.0.1:{agora.port}/mcp/chess"
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "stdio",
            "--connect",
            url,
            "--token",
            TOKEN,
            stdin=jsonl(INITIALIZE),
            AGORA_LOG_LEVEL=level,
        )
    log = done.stderr.decode()
    assert done.returncode == 0, log
    assert b'"id":0' in done.stdout  # it relayed
    assert (" DEBUG trio-websocket: " in log) is debug, log


async def test_the_relay_refuses_an_unknown_log_level_in_one_line():
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "stdio", "--connect", "ws://127.0.0.1:1/mcp", stdin=b"", AGORA_LOG_LEVEL="loud"
        )
    assert done.returncode == 2, done.stderr.decode()
    assert done.stderr.decode().splitlines() == [
        "agora: AGORA_LOG_LEVEL: log_level must be one of debug, info, warning, error, not 'loud'"
    ]
