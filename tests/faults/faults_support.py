"""``agora serve`` as a subprocess for the fault tests, on a free port, with every toolset.

`start` runs it on ``db`` with the mixed load's principal (``bench/mixed.py``) and
``synchronous=FULL`` (plus any ``AGORA_*`` settings given) and returns the process and its
``ws://.../mcp`` URL once it says it is serving; `drain` reads its stderr until it exits
(so a full pipe never blocks it) and keeps the lines; `reap` kills what a failed test left.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import trio

AGORA = str(Path(sys.executable).with_name("agora"))
READY = re.compile(rb"serving .* on (http://[\d.:]+)")
TIMEOUT = 60.0


#: The toolsets every fault test's server serves.
TOOLSETS = "chess,chamber,router,debate"


async def start(db: Path, config: Path, **settings: str) -> tuple[trio.Process, str]:
    """Start the server; return it and its WebSocket MCP URL."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGORA_") or k.startswith("AGORA_TEST_")  # the suite's switches
    }
    env |= {"AGORA_SYNCHRONOUS": "FULL"} | {f"AGORA_{k.upper()}": v for k, v in settings.items()}
    process = await trio.lowlevel.open_process(
        [AGORA, "serve", "--port", "0", "--db", str(db), "--config", str(config),
         "--toolsets", TOOLSETS],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    seen = b""
    with trio.fail_after(TIMEOUT):
        while (found := READY.search(seen)) is None:
            chunk = await process.stderr.receive_some()
            assert chunk, f"agora did not start:\n{seen.decode(errors='replace')}"
            seen += chunk
    return process, found.group(1).decode().replace("http", "ws") + "/mcp"


async def drain(process: trio.Process, lines: list[str] | None = None) -> None:
    """Read the server's stderr until it closes, keeping the lines in ``lines``."""
    assert process.stderr is not None
    pending = b""
    while chunk := await process.stderr.receive_some():
        *complete, pending = (pending + chunk).split(b"\n")
        if lines is not None:
            lines.extend(c.decode(errors="replace") for c in complete)


def reap(processes: list[trio.Process]) -> None:
    """SIGKILL every server of ``processes`` still running (a failed test leaves none), and
    wait for its end: one left unreaped warns in whichever test runs when it is collected."""
    for process in processes:
        if process.returncode is None and process.poll() is None:
            process.kill()
            deadline = time.monotonic() + TIMEOUT
            while process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
