"""`agora` as a subprocess for the end-to-end tests: served, run once, or spoken to on stdio.

`AgoraProcess` runs the real console script and reads its stderr on a thread, so tests can
wait for a log line without sleeping; `run_agora` runs one command to its end, and
`stdio_process` starts one as a raw stdio MCP server. This module must not speak HTTP,
WebSocket or the official SDK's client (see e2e_http, e2e_websocket, e2e_sdk).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from e2e_mcp import INITIALIZE, INITIALIZED, jsonl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

AGORA = str(Path(sys.executable).with_name("agora"))
READY = re.compile(r"serving .* on (http://[\d.:]+)")
#: How every log line of ``agora`` begins: when it was written, in UTC, to the millisecond.
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")
#: Seconds a subprocess may take to start or stop (generous: CI machines are slow).
PROCESS_TIMEOUT = 30.0


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without AGORA_* settings, plus ``extra``.

    The suite's own AGORA_TEST_* switches stay: a server started on the PostgreSQL pass
    keeps its stores there (see tests/conftest.py). PYTHONPATH is made absolute: ``agora``
    run in another directory (``cwd=``) still imports the tree under test (``src``).
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if (not k.startswith("AGORA_") or k.startswith("AGORA_TEST_")) and k != "PYTHONTRACEMALLOC"
    }
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            map(os.path.abspath, env["PYTHONPATH"].split(os.pathsep))
        )
    env.update(extra)
    return env


class AgoraProcess:
    """``agora serve`` in a subprocess; its stderr is collected line by line."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        preexec_fn: Callable[[], object] | None = None,
    ) -> None:
        self.args = [AGORA, "serve", "--port", "0", *args]
        self.env = env or clean_env()
        #: Run in the child before ``agora`` starts (say, to lower its RLIMIT_NOFILE).
        self.preexec_fn = preexec_fn
        self.lines: list[str] = []
        self.url = ""
        self._changed = threading.Condition()
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    @property
    def proc(self) -> subprocess.Popen[str]:
        assert self._proc is not None, "not started"
        return self._proc

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> str:
        with self._changed:
            return "".join(self.lines)

    def start(self) -> str:
        """Start the server and return its base URL once it says it is serving."""
        self._proc = subprocess.Popen(
            self.args,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            preexec_fn=self.preexec_fn,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        line = self.wait_for_line(READY.pattern, PROCESS_TIMEOUT)
        if line is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"agora did not start:\n{self.log}")
        found = READY.search(line)
        assert found is not None
        self.url = found.group(1)
        return self.url

    def _read(self) -> None:
        assert self._proc is not None
        assert self._proc.stderr is not None
        with self._proc.stderr:
            for line in self._proc.stderr:
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # end of output
            self._changed.notify_all()

    def wait_for_line(self, pattern: str, timeout: float) -> str | None:
        """Block until a stderr line matches ``pattern``; None on timeout or exit."""
        regex = re.compile(pattern)
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if line == "":
                        return None
                    if regex.search(line):
                        return line
                seen = len(self.lines)
                if not self._changed.wait(timeout):
                    return None

    async def wait_for_log(self, pattern: str) -> str:
        """Wait (off the Trio thread) until stderr shows ``pattern``; run inside fail_after."""
        line = await trio.to_thread.run_sync(
            self.wait_for_line, pattern, PROCESS_TIMEOUT, abandon_on_cancel=True
        )
        assert line is not None, f"{pattern!r} never appeared in:\n{self.log}"
        return line

    def __enter__(self) -> AgoraProcess:
        """Start the server (``with AgoraProcess(...) as server``); leaving kills it if it runs."""
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        ended = self.proc.poll()
        self.kill()
        if kind is not None:  # the test failed: say how the server was, with its log
            state = "running" if ended is None else f"had exited with status {ended}"
            print(f"agora serve {state} when the test failed; its log:\n{self.log}")

    def kill(self) -> None:
        """SIGKILL (no shutdown: only what was committed survives) and reap, if still running."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def signal(self, signum: int = signal.SIGTERM) -> None:
        """Send ``signum`` to the server."""
        self.proc.send_signal(signum)

    def stop(self) -> int:
        """SIGTERM, then wait for the exit status (killing it if it hangs)."""
        if self.proc.poll() is None:
            self.signal()
        try:
            status = self.proc.wait(PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"agora did not stop on SIGTERM:\n{self.log}") from None
        if self._reader is not None:  # its last lines in `log` too
            self._reader.join(PROCESS_TIMEOUT)
        return status

    async def wait_exit(self) -> int:
        """The exit status, awaited off the Trio thread, once its last stderr line is in
        `log` (the reader may still be draining the pipe when the process has gone: a test
        read the log without the shutdown's last line); run inside fail_after."""
        return await trio.to_thread.run_sync(self._wait_drained, abandon_on_cancel=True)

    def _wait_drained(self) -> int:
        status = self.proc.wait()
        if self._reader is not None:
            self._reader.join(PROCESS_TIMEOUT)
        return status

    def assert_clean_exit(self, status: int, *, info: bool = True) -> None:
        """Exit status 0, a logged shutdown (``info``: the log level writes INFO lines), and
        no traceback anywhere in the log."""
        log = self.log
        assert status == 0, f"exit status {status}:\n{log}"
        assert ("shutting down" in log) is info, log
        assert "Traceback" not in log, log

    def rss_kb(self) -> int:
        """The server's resident set size (VmRSS) in KiB."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert found is not None
        return int(found.group(1))


async def run_agora(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``agora args`` to its end (run inside ``trio.fail_after``), its output captured, with
    a clean environment plus ``env``."""
    return await trio.run_process(
        [AGORA, *args],
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        cwd=cwd,
        env=clean_env(**env),
    )


async def serve_refused(directory: Path, toml: str = "", **env: str) -> str:
    """``agora serve`` with ``toml`` as its config file (``port = 0`` first unless it sets the
    port: any free port, should the mistake be missed) and ``env``: its one stderr line,
    after checking exit status 2 and that no database was made in ``directory``. Run inside
    ``trio.fail_after``."""
    config = directory / "agora.toml"
    config.write_text(toml if toml.startswith("port") else f"port = 0\n{toml}")
    db = directory / "agora.db"
    done = await run_agora("serve", "--config", str(config), "--db", str(db), **env)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1, lines
    assert not db.exists(), "refused after opening the database"
    return lines[0]


@asynccontextmanager
async def stdio_process(args: Sequence[str]) -> AsyncIterator[trio.Process]:
    """``agora ARGS`` with its three pipes (a raw stdio client's view), its MCP session
    initialized; killed if it still runs at the end, its pipes closed either way."""
    process = await trio.lowlevel.open_process(
        [AGORA, *args], stdin=-1, stdout=-1, stderr=-1, env=clean_env()
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send_all(jsonl(INITIALIZE, INITIALIZED))
        assert b'"id":0' in await process.stdout.receive_some(65536)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()


async def read_to_end(stream: trio.abc.ReceiveStream | None) -> bytes:
    """Everything ``stream`` gives until it ends."""
    assert stream is not None
    out = b""
    while chunk := await stream.receive_some(65536):
        out += chunk
    return out


def unstamped(line: str) -> str:
    """A log line without its time stamp (`STAMP`), which it must begin with."""
    stamp = STAMP.match(line)
    assert stamp is not None, f"no time stamp: {line!r}"
    return line[stamp.end() :]


def one_line(stderr: bytes) -> str:
    """The only line of ``stderr``; no traceback."""
    text = stderr.decode()
    assert "Traceback" not in text, text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]
