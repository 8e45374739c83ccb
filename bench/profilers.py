"""Profilers a bench attaches to its server for the length of one phase.

`py_spy` samples it (``py-spy record``), `strace` counts its system calls (``strace -c -f``),
both as a process attached meanwhile and stopped with SIGINT, on which each writes its
output (`attached`); `python_calls` counts the main thread's Python calls with cProfile
through ``bench/probed_serve.py``'s SIGUSR2. Imported by the bench scripts as a sibling
module (``bench/chamber_attempts.py``); never by agora.
"""

from __future__ import annotations

import pstats
import shutil
import signal
import subprocess
import sys
from collections import Counter
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from serve import STOP_TIMEOUT

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from serve import Server


@asynccontextmanager
async def attached(command: list[str]) -> AsyncIterator[None]:
    """Run ``command`` (a tool attaching to a process) while the block runs; SIGINT then
    makes it write its output and end (killed if it does not within `STOP_TIMEOUT`)."""
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        await trio.sleep(0.5)  # let it attach before the phase starts
        yield
    finally:
        process.send_signal(signal.SIGINT)
        with trio.CancelScope(shield=True), trio.move_on_after(STOP_TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()


@asynccontextmanager
async def py_spy(pid: int, out: Path | None, rate: int, gil: bool = False) -> AsyncIterator[None]:
    """Sample the server with ``py-spy record`` (raw collapsed stacks to ``out``) meanwhile;
    ``gil``: only the thread holding the GIL (its Python work, not its waits for the GIL)."""
    if out is None:
        yield
        return
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    command = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", str(rate)]
    command += ["--nonblocking", "--threads", "-o", str(out)] + (["--gil"] if gil else [])
    async with attached(command):
        yield


@asynccontextmanager
async def strace(pid: int, out: Path | None) -> AsyncIterator[None]:
    """Count the server's system calls (every thread, ``strace -c -f``; to ``out``) meanwhile."""
    if out is None:
        yield
        return
    async with attached(["strace", "-c", "-f", "-p", str(pid), "-o", str(out)]):
        yield


@asynccontextmanager
async def python_calls(server: Server, phase: Any, on: bool, top: int) -> AsyncIterator[None]:
    """Profile the server's main thread meanwhile (``probed_serve``'s SIGUSR2, cProfile)
    and put its Python calls per call of ``phase`` (per ``phase.calls``) in
    ``phase.python_calls``, in all and by module (``~``: built-ins). cProfile counts each
    resumption of a coroutine as a call."""
    if not on:
        yield
        return
    assert server.probe_dir is not None
    done = server.probe_dir / "calls.done"
    done.unlink(missing_ok=True)
    server.process.send_signal(signal.SIGUSR2)
    await trio.sleep(0.2)  # the handler runs at the server's next bytecode
    try:
        yield
    finally:
        server.process.send_signal(signal.SIGUSR2)
        with trio.fail_after(STOP_TIMEOUT):
            while not done.exists():  # noqa: ASYNC110 - a file from another process
                await trio.sleep(0.05)
    stats: dict[Any, Any] = pstats.Stats(str(server.probe_dir / "calls.pstats")).stats  # type: ignore[attr-defined]
    by_module: Counter[str] = Counter()
    for (path, _, _), (_, ncalls, *_) in stats.items():
        if "/agora/" in path:
            name = "agora/" + path.rsplit("/agora/", 1)[-1].split("/")[0]
        elif "site-packages/" in path:
            name = path.split("site-packages/")[-1].split("/")[0]
        else:
            name = path.rsplit("/", 1)[-1]
        by_module[name] += ncalls
    n = max(phase.calls, 1)
    parts = ", ".join(f"{name} {count / n:.1f}" for name, count in by_module.most_common(top))
    phase.python_calls = (
        f"Python calls per call (main thread, cProfile) {sum(by_module.values()) / n:.1f}: {parts}"
    )
