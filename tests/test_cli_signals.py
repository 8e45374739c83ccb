"""What ``agora serve`` and ``agora stdio`` say of the signals that come during a shutdown.

A tester's finding: after a SIGTERM, the operator's first Ctrl-C was logged as "received SIGINT
again" and announced the next one as "a third time", and the line for a second SIGTERM asked
for "SIGINT again" when none had been sent. Each line now counts the signals of its own kind
and says what the next SIGINT does. (The real server, signals and all:
tests/e2e/test_e2e_shutdown_cut.py.)
"""

from __future__ import annotations

import logging
import signal

import pytest
import trio

from agora.cli_signals import while_stopping


class _App:
    """What `while_stopping` uses of the server's App: the grace, ended once."""

    def __init__(self) -> None:
        self.ended = 0

    def end_grace(self) -> None:
        self.ended += 1

    def running(self) -> list[str]:
        return []


async def _signalled(first: int, *later: int, app: _App | None) -> None:
    """`while_stopping` for the signals ``later``, ``first`` having begun the shutdown."""
    send, receive = trio.open_memory_channel[int](len(later))
    for signum in later:
        send.send_nowait(signum)
    send.close()
    await while_stopping(receive, 30.0, app, first=first)  # type: ignore[arg-type]


SIGINT, SIGTERM, SIGHUP = signal.SIGINT, signal.SIGTERM, signal.SIGHUP


@pytest.mark.parametrize(
    ("first", "later", "said"),
    [
        pytest.param(
            SIGTERM,
            [SIGTERM, SIGINT],
            [
                "received SIGTERM again: already shutting down, 30.0 s left (grace_seconds) for"
                " the calls in flight to answer (SIGINT: end the grace now)",
                "received SIGINT during the shutdown: ending the grace now, the calls still"
                " running are cancelled (another SIGINT exits at once)",
            ],
            id="sigterm-then-ctrl-c",
        ),
        pytest.param(
            SIGINT,
            [SIGINT, SIGTERM],
            [
                "received SIGINT again: ending the grace now, the calls still running are"
                " cancelled (another SIGINT exits at once)",
                "received SIGTERM during the shutdown: already shutting down, the grace is over:"
                " it ends once the writes still committing are answered (SIGINT: exit at once)",
            ],
            id="ctrl-c-twice",
        ),
        pytest.param(
            SIGTERM,
            [SIGHUP, SIGTERM, SIGTERM],
            [
                "received SIGHUP during the shutdown: already shutting down, 30.0 s left"
                " (grace_seconds) for the calls in flight to answer (SIGINT: end the grace now)",
                "received SIGTERM again: already shutting down, 30.0 s left (grace_seconds) for"
                " the calls in flight to answer (SIGINT: end the grace now)",
                "received SIGTERM a third time: already shutting down, 30.0 s left"
                " (grace_seconds) for the calls in flight to answer (SIGINT: end the grace now)",
            ],
            id="other-kinds",
        ),
    ],
)
async def test_agora_serve_counts_each_kind_of_signal_and_says_what_sigint_does_next(
    first, later, said, caplog, autojump_clock
):
    app = _App()
    with caplog.at_level(logging.WARNING, logger="agora.cli"):
        await _signalled(first, *later, app=app)
    assert [record.getMessage() for record in caplog.records] == said
    assert app.ended == (1 if SIGINT in later else 0)


async def test_agora_stdio_says_later_signals_with_no_sigint_hint(caplog, autojump_clock):
    """``agora stdio`` (no App) treats a SIGINT as any other signal: no hint about one."""
    with caplog.at_level(logging.WARNING, logger="agora.cli"):
        await _signalled(SIGTERM, SIGINT, SIGINT, app=None)
    assert [record.getMessage() for record in caplog.records] == [
        "received SIGINT during the shutdown: already shutting down, 30.0 s left"
        " (grace_seconds) for the calls in flight to answer",
        "received SIGINT again: already shutting down, 30.0 s left (grace_seconds) for the"
        " calls in flight to answer",
    ]
