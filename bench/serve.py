"""``agora serve`` as a benchmark's subprocess: start it on a free port, read its log, stop it.

Shared by the bench scripts (imported as a sibling module; never by agora). The server runs
with this interpreter's ``agora`` script on 127.0.0.1, port 0, with the given database,
toolsets and ``AGORA_*`` settings (any inherited from the environment are dropped, so a run
is what the script says). Its stderr is read line by line: the "serving ... on URL" line
gives the URL, ``trace_commits`` lines give commit times, the rest is kept for the error
report. A server serving the chamber is handed over only once its room pools are full
(`pool_full`): it builds them after it starts listening, seconds of CPU that would otherwise
skew whatever is measured first. Leaving the block sends SIGTERM and requires a clean exit
with no traceback. `principal_config` writes the ``agora.toml`` of a bench's one principal.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
#: A traced server's snapshot of 100k connections takes a while to write.
PROBE_TIMEOUT = 300.0
#: How the server logs a durable commit when ``trace_commits`` is on (after the time stamp
#: every log line begins with: `agora.logsetup`).
COMMIT_TRACE = "INFO agora.store.writer: committed "
#: Bound on the wait for a fresh server's chamber room pools (3 ms of CPU per room: seconds at
#: the default size, minutes only for a bench that asks for thousands of rooms per suite).
POOL_TIMEOUT = 600.0
#: A wait for the room pools longer than this is said on stderr (else nothing is printed).
POOL_SLOW = 10.0
#: Polls that must see every pool's target size at 0 before the pool counts as turned off
#: (``room_pool_size = 0``), one `POOL_POLL` apart.
POOL_OFF_POLLS = 5
POOL_POLL = 0.2


def principal_config(
    directory: Path, token: str, name: str = "bench", scopes: tuple[str, ...] = ()
) -> Path:
    """``directory/agora.toml`` with one principal, ``name``, of project "bench", whose
    bearer token is ``token`` (and its ``scopes``, if any); returns its path."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    scoped = f"scopes = {json.dumps(list(scopes))}\n" if scopes else ""
    path = directory / "agora.toml"
    path.write_text(
        f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{digest}"\n{scoped}'
        'projects = ["bench"]\n'
    )
    return path


def pool_status(url: str) -> dict[str, dict[str, int]] | None:
    """``GET url/chamber/pool``: per suite, rooms ``ready`` and target ``size``; None when
    the server does not serve the chamber (404)."""
    try:
        with urllib.request.urlopen(f"{url}/chamber/pool", timeout=30) as response:
            suites: dict[str, dict[str, int]] = json.loads(response.read())["suites"]
            return suites
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


async def pool_full(url: str) -> None:
    """Return once every chamber room pool of the server at ``url`` (``http://HOST:PORT``) is
    full, at once if it serves no chamber.

    A fresh server builds its pools (``room_pool_size`` rooms per suite, 3 ms of CPU each)
    in the background after it starts listening; a bench that measured meanwhile would find
    the first of its figures several times slower than the rest. Silent unless the wait
    passes `POOL_SLOW`.

    Raises:
        RuntimeError: the pools were not full within `POOL_TIMEOUT` seconds.
    """
    start = time.perf_counter()
    said = False
    zero = 0  # consecutive polls that saw every target size at 0
    status: dict[str, dict[str, int]] | None = {}
    with trio.move_on_after(POOL_TIMEOUT):
        while True:
            status = await trio.to_thread.run_sync(pool_status, url)
            if status is None:
                return
            sizes = [s["size"] for s in status.values()]
            zero = zero + 1 if not any(sizes) else 0
            if zero >= POOL_OFF_POLLS or (
                all(sizes) and all(s["ready"] >= s["size"] for s in status.values())
            ):
                if said:
                    print(f"room pools full after {time.perf_counter() - start:.0f} s",
                          file=sys.stderr)  # fmt: skip
                return
            if not said and time.perf_counter() - start > POOL_SLOW:
                said = True
                print(f"waiting for the chamber's room pools to fill ({_rooms(status)})...",
                      file=sys.stderr)  # fmt: skip
            await trio.sleep(POOL_POLL)
    raise RuntimeError(
        f"the chamber's room pools of {url} were not full after {POOL_TIMEOUT:.0f} s:"
        f" {_rooms(status)}"
    )


def _rooms(status: dict[str, dict[str, int]] | None) -> str:
    values = (status or {}).values()
    ready, size = sum(s["ready"] for s in values), sum(s["size"] for s in values)
    return f"{ready} of {size} rooms ready in {len(values)} suites"


@dataclass
class Server:
    """A running ``agora serve`` subprocess.

    Attributes:
        commits: Wall times at which its transactions became durable (``trace_commits``).
        commit_jobs: How many jobs (commands' writes) each of those transactions held.
    """

    process: trio.Process
    db: Path
    url: str = ""
    port: int = 0
    log: list[str] = field(default_factory=list)
    commits: list[float] = field(default_factory=list)
    commit_jobs: list[int] = field(default_factory=list)
    probe_dir: Path | None = None
    probes: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    async def probe(self, *, collect: bool = False) -> tuple[dict[str, Any], Path | None]:
        """Ask a `probed_serve` server for its collections since the last probe and, when it
        traces, its tracemalloc snapshot (the path of the file); with ``collect``, for a
        full collection too (``unreachable_found``: the cyclic garbage it held)."""
        assert self.probe_dir is not None, "start the server with probe=DIR"
        n = self.probes
        self.probes += 1
        if collect:
            (self.probe_dir / f"{n}.collect").touch()
        self.process.send_signal(signal.SIGUSR1)
        done = self.probe_dir / f"{n}.done"
        with trio.fail_after(PROBE_TIMEOUT):
            while not done.exists():  # noqa: ASYNC110 - a file from another process
                await trio.sleep(0.05)
        snap = self.probe_dir / f"{n}.snap"
        figures = json.loads((self.probe_dir / f"{n}.json").read_text())
        return figures, snap if snap.exists() else None


async def _read_log(server: Server, ready: trio.Event) -> None:
    assert server.process.stderr is not None
    pending = b""
    while chunk := await server.process.stderr.receive_some(65536):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in (raw.decode(errors="replace") for raw in lines):
            at = line.find(COMMIT_TRACE)  # after the line's time stamp
            if at >= 0:
                server.commits.append(float(line.rsplit(" at ", 1)[1]))
                rest = line[at + len(COMMIT_TRACE) :]
                server.commit_jobs.append(int(rest.split(" ", 1)[0]))
                continue
            server.log.append(line)
            if " serving " in line and " on http://" in line:
                server.url = line.rsplit(" on ", 1)[1].strip()
                server.port = int(server.url.rsplit(":", 1)[1])
                ready.set()
    ready.set()


@asynccontextmanager
async def agora_serve(
    db: Path,
    toolsets: str,
    *,
    config: Path | None = None,
    probe: Path | None = None,
    trace_frames: int = 0,
    old_gc: bool = False,
    types: bool = False,
    **settings: str,
) -> AsyncIterator[Server]:
    """Run ``agora serve --toolsets <toolsets>``; ``settings`` (and the environment's
    ``BENCH_AGORA_<NAME>``) become ``AGORA_<NAME>``, ``config`` is passed as ``--config``
    (e.g. for ``[[principals]]``). With ``probe`` (a directory) it runs under
    `probed_serve`, which times its garbage collections and, with ``trace_frames``, traces
    its allocations (``types``: counts live objects by type without tracing; ``old_gc``:
    with the collector policy of before `agora.server.heap`); `Server.probe` asks it for them.

    A server serving the chamber is yielded once its room pools are full (`pool_full`).

    Raises:
        RuntimeError: it did not start, its room pools did not fill, or it did not exit
            cleanly on SIGTERM.
    """
    script = shutil.which("agora", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "agora.cli"]
    if probe is not None:
        command = [sys.executable, str(Path(__file__).with_name("probed_serve.py"))]
    command += ["serve", "--host", HOST, "--port", "0", "--db", str(db), "--toolsets", toolsets]
    if config is not None:
        command += ["--config", str(config)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
    # BENCH_AGORA_<NAME> in the bench's environment sets the server's AGORA_<NAME> (A/B runs)
    env |= {k[6:]: v for k, v in os.environ.items() if k.startswith("BENCH_AGORA_")}
    env |= {f"AGORA_{name.upper()}": value for name, value in settings.items()}
    if probe is not None:
        env |= {"BENCH_PROBE_DIR": str(probe), "BENCH_TRACE_FRAMES": str(trace_frames)}
        if old_gc:
            env["BENCH_OLD_GC"] = "1"
        if types:
            env["BENCH_TYPES"] = "1"
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    server = Server(process, db, probe_dir=probe)
    try:
        async with trio.open_nursery() as nursery:
            ready = trio.Event()
            nursery.start_soon(_read_log, server, ready)
            with trio.fail_after(START_TIMEOUT * (4 if trace_frames else 1)):
                await ready.wait()
            if not server.url:
                raise RuntimeError("agora serve did not start:\n" + "\n".join(server.log))
            await pool_full(server.url)
            yield server
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(STOP_TIMEOUT * (10 if trace_frames else 1)):
                await process.wait()
            if process.returncode != 0 or any("Traceback" in line for line in server.log):
                raise RuntimeError(
                    f"agora serve exited {process.returncode}:\n" + "\n".join(server.log)
                )
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
