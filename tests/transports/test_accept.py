"""Accepting at capacity: one warning per episode, no traceback; the cap the descriptors allow.

`agora.transports.accept` replaces ``trio.serve_listeners``, which logged every EMFILE at
ERROR with a traceback ten times a second. A scripted listener fails ``accept`` with EMFILE
as often as a test says, then hands over one end of a real socket pair; Trio's autojump
clock makes the retries instant. The real server under a low ``ulimit -n``:
tests/e2e/test_e2e_descriptors.py.
"""

from __future__ import annotations

import errno
import logging
import resource

import pytest
import trio
import trio.testing

from agora.server.descriptors import HEADROOM, connection_cap
from agora.transports.accept import RETRY_SECONDS, serve_listeners


class ScriptedListener(trio.abc.Listener[trio.SocketStream]):
    """Fails ``accept`` with each errno of ``failures`` in turn, then returns a real
    connected stream (one end of a socket pair) once, then waits for ever."""

    def __init__(self, failures: list[int]) -> None:
        self.failures = failures
        self.served = False
        self.peer: trio.socket.SocketType | None = None  # the other end, closed by `aclose`

    async def accept(self) -> trio.SocketStream:
        await trio.lowlevel.checkpoint()
        if self.failures:
            code = self.failures.pop(0)
            raise OSError(code, "scripted")
        if self.served:
            await trio.sleep_forever()
        self.served = True
        ours, self.peer = trio.socket.socketpair()
        return trio.SocketStream(ours)

    async def aclose(self) -> None:
        if self.peer is not None:
            self.peer.close()
        await trio.lowlevel.checkpoint()


async def test_an_accept_out_of_descriptors_is_said_once_per_episode(autojump_clock, caplog):
    caplog.set_level(logging.INFO, logger="agora.transports.accept")
    listener = ScriptedListener([errno.EMFILE] * 30)
    handled = trio.Event()

    async def handler(stream: trio.SocketStream) -> None:
        handled.set()

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: serve_listeners(handler, [listener], handler_nursery=nursery)
            )
            await handled.wait()
            nursery.cancel_scope.cancel()
    assert trio.current_time() == pytest.approx(30 * RETRY_SECONDS)
    records = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records]
    assert [(level, exc) for level, _, exc in records] == [("WARNING", None), ("INFO", None)]
    assert records[0][1].startswith("accept failed: EMFILE (Too many open files)")
    assert records[1][1] == "accepting again after 3.0 s"


async def test_an_accept_that_fails_otherwise_still_raises():
    listener = ScriptedListener([errno.EBADF])
    with pytest.RaisesGroup(pytest.RaisesGroup(pytest.RaisesExc(OSError, match="scripted"))):
        async with trio.open_nursery() as nursery:
            await serve_listeners(trio.sleep, [listener], handler_nursery=nursery)


@pytest.mark.parametrize(
    ("setting", "soft", "cap"),
    [
        pytest.param(20_000, 256, 256 - HEADROOM, id="lowered-to-the-limit"),
        pytest.param(20_000, 1_048_576, 20_000, id="room-for-all"),
        pytest.param(100, 100 + HEADROOM, 100, id="just-room"),
        pytest.param(20_000, resource.RLIM_INFINITY, 20_000, id="unlimited"),
        pytest.param(20_000, 10, 1, id="at-least-one"),
        pytest.param(20_000, 20_000, 20_000 - HEADROOM, id="limit-equals-setting"),
    ],
)
def test_the_connection_cap_leaves_the_headroom(setting, soft, cap, caplog):
    caplog.set_level(logging.DEBUG, logger="agora.server.descriptors")
    assert connection_cap(setting, soft) == cap
    lowered = [r.getMessage() for r in caplog.records]
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    # Lowered by the headroom alone (a limit equal to the setting): said, not warned.
    assert bool(warned) == (setting - cap > HEADROOM)
    if cap < setting:
        assert lowered == [
            f"max_connections lowered from {setting} to {cap}: this process may open {soft}"
            f" files (RLIMIT_NOFILE), {HEADROOM} of them kept for the database, listeners,"
            " logs and subprocesses; raise the limit (ulimit -n, systemd LimitNOFILE=) to"
            " serve more"
        ]
    else:
        assert lowered == []
