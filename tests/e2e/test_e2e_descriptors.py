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
                async with RawHttp.open(server.port) as client:
                    reply = await client.request("GET", "/play")
                assert reply.status == 503, reply
                assert b"server full" in reply.body
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


async def test_agora_serve_raises_its_soft_open_files_limit_to_the_hard_one(tmp_path):
    db = str(tmp_path / "fd.db")
    with AgoraProcess(
        "--db", db, "--toolsets", "chess", preexec_fn=lambda: _limit(LIMIT, 1024)
    ) as server:
        assert _limits(server.pid) == (1024, 1024)
        assert f"open files limit raised from {LIMIT} to 1024" in server.log, server.log
        assert f"max_connections lowered from 20000 to {1024 - HEADROOM}" in server.log
        server.assert_clean_exit(server.stop())
