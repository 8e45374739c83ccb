"""A real ``agora serve --toolsets chess`` for the chess end-to-end tests.

`agora_serve` runs ``agora serve --port 0 --toolsets chess`` as a subprocess on a temp DB,
waits (bounded) for the lines it prints on stderr, and stops it with SIGTERM;
`terminate_when_in_flight` stops it mid-call. This module must not play: the page's HTTP is in
chess_page_http, the two players in chess_players.

Nothing here sleeps: every wait is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from chess_page_http import http_json

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0

_HUMAN_URL = re.compile(r"chess: human player: (http://\S+/play/(\S+)\?token=(\S+))")
_AGENT_URL = re.compile(r"chess: agent endpoint: http://\S+/mcp/chess/\S+\?token=(\S+) ")
_SERVING = re.compile(r"agora \S+ serving .* on (http://127\.0\.0\.1:\d+)")


def agora_command() -> list[str]:
    """The command that runs this checkout's ``agora``."""
    script = shutil.which("agora", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "agora.cli"]


@dataclass
class AgoraProcess:
    """A running ``agora serve``: its base URL and the default table's human link."""

    process: trio.Process
    url: str = ""
    human_url: str = ""
    table: str = ""
    token: str = ""
    agent_token: str = ""
    log: list[str] = field(default_factory=list)
    terminated: bool = False

    def terminate(self) -> None:
        """Send SIGTERM once (a second one would cut the graceful shutdown short)."""
        if not self.terminated and self.process.returncode is None:
            self.terminated = True
            self.process.send_signal(signal.SIGTERM)

    def mcp_url(self, table: str = "default", *, seated: bool = True) -> str:
        """The Streamable HTTP endpoint of the default table, with its agent token if seated."""
        assert table == "default", "other tables' tokens come from POST /play/tables"
        query = f"?token={self.agent_token}" if seated else ""
        return f"{self.url}/mcp/chess/{table}{query}"

    def play_url(self, table: str, action: str) -> str:
        """A page API URL such as ``/play/<table>/move``."""
        return f"{self.url}/play/{table}/{action}"


async def _read_log(proc: AgoraProcess, ready: trio.Event) -> None:
    assert proc.process.stderr is not None
    pending = b""
    while chunk := await proc.process.stderr.receive_some(65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            proc.log.append(line)
            if found := _HUMAN_URL.search(line):
                proc.human_url, proc.table, proc.token = found.groups()
            if found := _AGENT_URL.search(line):
                proc.agent_token = found.group(1)
            if found := _SERVING.search(line):
                proc.url = found.group(1)
                ready.set()
    ready.set()  # stderr closed: the process ended before (or after) it was ready


@asynccontextmanager
async def agora_serve(db: Path, *extra: str) -> AsyncIterator[AgoraProcess]:
    """Run ``agora serve`` on a free loopback port and the SQLite file ``db`` (``extra``:
    more flags, such as ``--shared``).

    Yields once the server printed its URLs; on exit sends SIGTERM and requires a clean exit.
    """
    command = [
        *agora_command(),
        "serve",
        "--port",
        "0",
        "--db",
        str(db),
        "--toolsets",
        "chess",
        *extra,
    ]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    proc = AgoraProcess(process)
    try:
        async with trio.open_nursery() as nursery:
            ready = trio.Event()
            nursery.start_soon(_read_log, proc, ready)
            with trio.fail_after(START_TIMEOUT):
                await ready.wait()
            if not proc.url or not proc.token or not proc.agent_token:
                raise RuntimeError("agora serve did not start:\n" + "\n".join(proc.log))
            yield proc
            proc.terminate()
            with trio.fail_after(STOP_TIMEOUT):
                await process.wait()
        # The log reader has now read stderr to its end.
        log = "\n".join(proc.log)
        assert process.returncode == 0, f"agora serve exited with {process.returncode}:\n{log}"
        assert "Traceback" not in log, log
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True), trio.move_on_after(STOP_TIMEOUT):
                await process.wait()


async def terminate_when_in_flight(server: AgoraProcess, count: int) -> None:
    """Send SIGTERM once the server reports ``count`` MCP calls in flight.

    There is no event to wait on from outside the process, so this asks ``/healthz`` again
    after each answer (the caller bounds it); every round trip awaits the server.
    """
    while True:
        status, health = await http_json("GET", f"{server.url}/healthz")
        assert status == 200, health
        if health["in_flight"] >= count:
            server.terminate()
            return
