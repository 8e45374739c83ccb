"""A database that went away is logged once, then at doubling intervals, then once when back.

`Outage` on Trio's autojump clock, exactly: failures every half second (as the change
listener retries) give a first line with the cause, summaries at 10, 30, 70, 150 s... (the
interval doubling up to 300 s), and one line when the database answers. Then the parts of a
node that retry (the change listener, background tasks waiting for their cluster locks)
sharing one `Outage` against a real refused port: two lines in 25 s, not one per retry.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.errors import StoreError
from agora.runtime.background import supervise
from agora.store.outage import MAX_INTERVAL, Outage

if TYPE_CHECKING:
    from collections.abc import Iterator


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agora.store.outage"]


async def test_an_outage_is_told_once_then_at_doubling_intervals_then_when_it_ends(
    autojump_clock, caplog
):
    caplog.set_level(logging.INFO)
    outage = Outage("PostgreSQL")
    outage.answered("nothing was away")  # no outage: nothing to say
    for _ in range(2000):  # a failure every 0.5 s for 1000 s
        outage.failed("the change listener", ConnectionRefusedError("Connection refused"))
        await trio.sleep(0.5)
    outage.answered("the change listener reconnected")
    said = lines(caplog)
    assert said[0] == (
        "PostgreSQL is unreachable (the change listener: Connection refused); retrying: a"
        " summary follows in 10 s, and a line once it is back"
    )
    summaries = said[1:-1]
    after = [int(re.search(r"after (\d+) s", s)[1]) for s in summaries]
    last = [int(re.search(r"in the last (\d+) s", s)[1]) for s in summaries]
    assert after == [10, 30, 70, 150, 310, 610, 910]
    assert last == [10, 20, 40, 80, 160, MAX_INTERVAL, MAX_INTERVAL]
    assert all(f"{2 * n} failed attempts" in s for n, s in zip(last, summaries, strict=True))
    assert said[-1] == (
        "PostgreSQL answers again (the change listener reconnected), after 1000 s unreachable"
        " and 2000 failed attempts"
    )
    assert not outage.away


async def test_a_second_outage_is_told_afresh(autojump_clock, caplog):
    caplog.set_level(logging.INFO)
    outage = Outage()
    for cause in ("first cause", "second cause"):
        outage.failed("a lock", cause)
        await trio.sleep(1)
        outage.failed("a lock", "again")  # counted, not said
        outage.answered("a lock")
    said = lines(caplog)
    assert [s.split(" (")[0] for s in said] == [
        "PostgreSQL is unreachable",
        "PostgreSQL answers again",
    ] * 2
    assert "first cause" in said[0]
    assert "second cause" in said[2]


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A postgresql:// URL whose port refuses connections (bound, never listening)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"postgresql://agora@127.0.0.1:{closed.getsockname()[1]}/agora?connect_timeout=5"


async def test_the_parts_of_a_node_that_retry_share_one_account(
    refused_url, autojump_clock, caplog
):
    pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")
    from agora.store.listen import listen

    caplog.set_level(logging.INFO)
    outage = Outage()

    class Away:
        shared = True

        def __init__(self) -> None:
            self.outage = outage

        async def try_singleton(self, name: str) -> None:
            raise StoreError(f"cannot take lock {name}: connection refused")

    class Node:
        store = Away()

    async def task(runtime: Any) -> None:
        raise AssertionError("the lock was never taken")

    def never(*_: Any) -> None:
        raise AssertionError("nothing listens there")

    with trio.move_on_after(25):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, task, Node())
            nursery.start_soon(supervise, task, Node())
            nursery.start_soon(
                lambda: listen(refused_url, "agora", never, never, inline=True, outage=outage)
            )
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in records] == ["agora.store.outage"] * 2, caplog.text
    assert "is unreachable" in records[0].getMessage()
    assert "still unreachable after 10 s" in records[1].getMessage()
    assert outage.failures > 60  # 2 per second from the listener, 0.5 from each lock


async def test_a_failure_the_next_try_cures_is_a_closed_connection_not_an_outage(
    autojump_clock, caplog
):
    """An operator's finding: after each PostgreSQL restart, every node logged "PostgreSQL is
    unreachable" at its next write (its idle connection had been closed), then "answers again
    ... after 0 s" a few ms later: a false alarm for whoever watches WARNINGs."""
    caplog.set_level(logging.INFO)
    outage = Outage()
    closed = "consuming input failed: server closed the connection unexpectedly"
    outage.failed("the writer", closed)
    outage.answered("the writer")
    records = [r for r in caplog.records if r.name == "agora.store.outage"]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("INFO", f"PostgreSQL failed once (the writer: {closed}) and answered the same part's"
                 " next try 0.0 s later (the writer): no outage"),
    ]  # fmt: skip
    assert not outage.away


async def test_a_failure_another_part_outlives_is_told_as_an_outage(autojump_clock, caplog):
    """A reviewer's finding: the listener failing every 0.5 s while reads succeeded between
    its tries was told as one-off failures at INFO, never as the listener's outage. Its
    first failure, cured by a read, is one INFO line (the next test); its second, at its own
    next try, is the outage's WARNING at once."""
    caplog.set_level(logging.INFO)
    outage = Outage()
    for _ in range(3):
        outage.failed("the change listener", "too many clients")
        await trio.sleep(0.2)
        outage.answered("a read")
        await trio.sleep(0.3)
    said = [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records]
    assert said == [
        ("INFO", "PostgreSQL failed once"),
        ("WARNING", "PostgreSQL is unreachable"),
        ("INFO", "PostgreSQL answers again"),
        ("WARNING", "PostgreSQL is unreachable"),
        ("INFO", "PostgreSQL answers again"),
    ]


async def test_a_single_failure_another_part_cures_is_no_outage(autojump_clock, caplog):
    """An operator's finding: after a PostgreSQL restart told as over, the writer's idle
    connection (closed by the restart) failed its next batch, a cluster lock answered the
    same millisecond, and the node logged a WARNING promising a summary in 10 s, then the end
    "after 0 s unreachable and 1 failed attempts"; docs/scale-out.md promises one INFO line.
    The writer's own next try then answers: nothing more to say."""
    caplog.set_level(logging.INFO)
    outage = Outage()
    closed = "consuming input failed: server closed the connection unexpectedly"
    outage.failed("the writer", closed)
    outage.answered("the cluster lock of chamber: sweep")
    outage.answered("the writer")
    outage.failed("the writer", closed)  # another restart, later: a fresh single failure
    outage.answered("the writer")
    records = [r for r in caplog.records if r.name == "agora.store.outage"]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("INFO", f"PostgreSQL failed once (the writer: {closed}) and answered another part's"
                 " next try 0.0 s later (the cluster lock of chamber: sweep): no outage"),
        ("INFO", f"PostgreSQL failed once (the writer: {closed}) and answered the same part's"
                 " next try 0.0 s later (the writer): no outage"),
    ]  # fmt: skip
    assert not outage.away


async def test_a_part_is_known_by_its_name_whatever_it_says_of_itself(autojump_clock, caplog):
    """The listener fails as "lost its connection" and answers as "reconnected": one part,
    whose single failure its own next try cured. A part cured by another's success is
    watched for its next try for 10 s only: a part that never answers under its own name (a
    background step) must not turn a later single failure into a WARNING."""
    caplog.set_level(logging.INFO)
    outage = Outage()
    outage.failed("the change listener lost its connection", "server closed the connection")
    outage.answered("the change listener reconnected")
    outage.failed("background step chamber: sweep", "server closed the connection")
    outage.answered("a read")  # the step is watched at its next tick...
    await trio.sleep(60)  # ...which comes later than that
    outage.failed("background step chamber: sweep", "server closed the connection")
    outage.answered("a read")
    said = [r.getMessage() for r in caplog.records if r.name == "agora.store.outage"]
    assert [line.split(" next try")[0].rsplit(" and answered ", 1)[1] for line in said] == [
        "the same part's",
        "another part's",
        "another part's",
    ], said
    assert all(r.levelname == "INFO" for r in caplog.records), said
