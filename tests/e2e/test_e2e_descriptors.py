"""Out of file descriptors, ``agora serve`` still answers a new client (503), quietly.

Under ``ulimit -n 256`` the server took connections up to its ``max_connections`` (20,000)
until ``accept`` failed with EMFILE: a new client's ``GET /healthz`` hung with no answer,
and trio logged "accept returned EMFILE" with a full traceback ten times a second. The
server now raises its soft limit to the hard one, keeps a headroom of descriptors for its
own files, lowers the connection cap to what is left (saying so at start), so a client
past the cap gets the documented 503; an EMFILE that still happens is one warning line.
Real ``agora serve`` processes with a low RLIMIT_NOFILE, real sockets on loopback.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import trio
from e2e_process import AgoraProcess
from http_support import RawHttp

from agora.server.descriptors import HEADROOM

TIMEOUT = 60
LIMIT = 256
IDLE = 300  # connections a client opens and leaves idle: past the cap and the limit


def _limit(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _limits(pid: int) -> tuple[int, int]:
    """The server's own (soft, hard) open-files limit, from /proc."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files line in /proc/PID/limits")


async def test_past_the_descriptors_a_new_client_gets_503_not_a_hang(tmp_path):
    db = str(tmp_path / "fd.db")
    with AgoraProcess(
        "--db", db, "--toolsets", "chess", preexec_fn=lambda: _limit(LIMIT, LIMIT)
    ) as server:
        cap = LIMIT - HEADROOM
        assert f"max_connections lowered from 20000 to {cap}" in server.log, server.log
        with trio.fail_after(TIMEOUT):
            idle = [await trio.open_tcp_stream("127.0.0.1", server.port) for _ in range(IDLE)]
            try:
                # A 503: with its reason, or (past MAX_REFUSING refusals at once) the short one
                # written as the connection is closed, which a reset may beat: then ask again.
                while True:
                    status = await _status(server.port, "/play")
                    if status is not None:
                        break
                    await trio.sleep(0.1)
                assert status == 503, status
            finally:
                for stream in idle:
                    await stream.aclose()
            while True:  # the server notices the closed ones, and serves again
                async with RawHttp.open(server.port) as client:
                    reply = await client.request("GET", "/healthz")
                if reply.status == 200:
                    break
                await trio.sleep(0.1)
        # The refused connections still fill the descriptors for a moment: accept may have
        # failed meanwhile, said once per episode, never with a traceback.
        log = server.log
        assert "Traceback" not in log, log
        assert log.count("EMFILE") == log.count("accept failed: EMFILE"), log
        assert log.count("accept failed") <= log.count("accepting again after") + 1, log
        server.assert_clean_exit(server.stop())


async def _status(port: int, path: str) -> int | None:
    """The status of ``GET path``, or None if the connection was reset before it came."""
    try:
        async with RawHttp.open(port) as client:
            return (await client.request("GET", path)).status
    except (OSError, trio.BrokenResourceError):
        return None


BURST = 600  # connections arriving at once: twice the descriptors the server may hold


async def test_a_burst_past_the_cap_never_exhausts_the_descriptors(tmp_path):
    """Refusals are bounded (`MAX_REFUSING`): each held its descriptor while its head was
    read and it lingered, so a burst past the cap filled the descriptors and ``accept``
    failed (EMFILE) for seconds. Past the bound a newcomer is closed at once: the server
    stays under its limit, never fails to accept, and its probes answer."""
    db = str(tmp_path / "fd.db")
    with AgoraProcess(
        "--db", db, "--toolsets", "chess", preexec_fn=lambda: _limit(LIMIT, LIMIT)
    ) as server:
        most = 0

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, len(os.listdir(f"/proc/{server.pid}/fd")))
                await trio.sleep(0.002)

        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                idle = []
                for _ in range(BURST):
                    try:
                        idle.append(await trio.open_tcp_stream("127.0.0.1", server.port))
                    except OSError:  # the listen queue is full: the burst is past it anyway
                        break
                try:
                    # The refusals end; a probe is then answered, full as the server is.
                    while True:
                        if await _status(server.port, "/healthz") == 200:
                            break
                        await trio.sleep(0.1)
                finally:
                    for stream in idle:
                        await stream.aclose()
                nursery.cancel_scope.cancel()
        assert most < LIMIT, most
        assert "accept failed" not in server.log, server.log
        server.assert_clean_exit(server.stop())


async def test_agora_serve_raises_its_soft_open_files_limit_to_the_hard_one(tmp_path):
    db = str(tmp_path / "fd.db")
    with AgoraProcess(
        "--db", db, "--toolsets", "chess", preexec_fn=lambda: _limit(LIMIT, 1024)
    ) as server:
        assert _limits(server.pid) == (1024, 1024)
        assert f"open files limit raised from {LIMIT} to 1024" in server.log, server.log
        assert f"max_connections lowered from 20000 to {1024 - HEADROOM}" in server.log
        server.assert_clean_exit(server.stop())
