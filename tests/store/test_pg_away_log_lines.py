"""PostgreSQL out of reach: each warning a node logs while it retries is one line.

libpq's messages carry their hint on a line of its own ("Connection refused\\n\\tIs the server
running on that host ..."); logged as they are, every retry of the change listener and of a
background task's cluster lock wrote two or three lines, which a log shipper splits into
separate events. The server here is a loopback port bound but not listening, so the refusal
is real and immediate; Trio's autojump clock runs the retries.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.errors import StoreError
from agora.runtime.background import SINGLETON_RETRY, supervise

pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

import psycopg

from agora.store.listen import RETRY_SECONDS, listen

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A postgresql:// URL whose port refuses connections (bound, never listening)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"postgresql://agora@127.0.0.1:{closed.getsockname()[1]}/agora?connect_timeout=5"


def warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING
    ]


async def test_the_change_listener_retrying_logs_one_line_per_attempt(
    refused_url, autojump_clock, caplog
):
    def never(*_: Any) -> None:
        raise AssertionError("nothing listens there")

    with trio.move_on_after(RETRY_SECONDS * 2.5):
        await listen(refused_url, "agora", never, never, inline=True)
    lines = warnings(caplog, "agora.store.listen")
    assert len(lines) == 3, lines  # at 0, 0.5 and 1.0 s
    for line in lines:
        assert line.startswith("cannot listen for changes (connection failed: "), line
        assert "\n" not in line, line
        assert "\t" not in line, line
        assert "Connection refused Is the server running" in line


async def test_a_background_task_waiting_for_its_lock_logs_one_line_per_attempt(
    refused_url, autojump_clock, caplog
):
    try:
        psycopg.connect(refused_url).close()
    except psycopg.OperationalError as exc:
        away = StoreError(f"cannot take lock sweep: {exc}")  # as PgStore.try_singleton says
    assert "\n" in str(away)

    class Away:
        shared = True

        async def try_singleton(self, name: str) -> None:
            raise away

    class Node:
        store = Away()

    async def sweep(runtime: Any) -> None:
        raise AssertionError("the lock was never taken")

    with trio.move_on_after(SINGLETON_RETRY * 1.5):
        await supervise(sweep, Node())  # type: ignore[arg-type]
    lines = warnings(caplog, "agora.runtime.background")
    assert len(lines) == 2, lines  # at 0 and 2 s
    for line in lines:
        assert line.startswith("cannot take the cluster lock of "), line
        assert "\n" not in line, line
        assert "\t" not in line, line


def test_psycopgs_second_word_of_a_lost_pipeline_is_not_logged(caplog):
    """psycopg logs ``error ignored terminating <psycopg.Pipeline [BAD]>: the connection is
    lost`` when a pipeline ends on a connection already lost; agora gets the error that ended
    it and tells it to the outage account, so that line (2-5 per outage) is dropped. Any
    other psycopg warning is kept."""
    import agora.store.pg_sql  # noqa: F401  (installs the filter)

    psycopg_log = logging.getLogger("psycopg")
    lost = psycopg.OperationalError("the connection is lost")
    psycopg_log.warning("error ignored terminating %r: %s", "<psycopg.Pipeline [BAD]>", lost)
    psycopg_log.warning("error ignored terminating %r: %s", "<psycopg.Copy>", "other trouble")
    assert warnings(caplog, "psycopg") == [
        "error ignored terminating '<psycopg.Copy>': other trouble"
    ]
