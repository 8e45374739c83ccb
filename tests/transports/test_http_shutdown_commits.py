"""At shutdown, a Streamable HTTP call whose write still waits for its commit gets its answer.

An operator's finding: with another process holding the SQLite write lock past the grace, a
tool call whose write then committed was answered "the server is shutting down; this call
did not finish, retry it" (its session closed at the end of the grace), and a client that
retried a write without an idempotency key made it twice. The README promised otherwise:
the calls whose writes wait for their commit answer once it comes (up to
``commit_timeout``), and a call cut off gets an error saying its change may or may not have
been saved.
"""

from __future__ import annotations

import pytest
import trio
from http_support import RawHttp, Reply, call, open_session, serve
from locked_writes import ENTRY, TIMEOUT, entries_stored, shut_down_while_locked


def _entering(replies: list[Reply]):
    async def enter(port: int) -> None:
        async with RawHttp.open(port) as client:
            session = await open_session(client, "/mcp/chamber")
            body = call("enter_open_challenge", arguments=ENTRY)
            replies.append(await client.request("POST", "/mcp/chamber", body, session))

    return enter


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_a_call_whose_write_commits_after_the_grace_gets_its_result(tmp_path):
    replies: list[Reply] = []
    db = tmp_path / "agora.db"
    # released past the grace, within commit_timeout
    await shut_down_while_locked(db, _entering(replies), commit_timeout=5.0, release_after=1.0)
    assert len(replies) == 1
    answer = replies[0].json()
    assert "error" not in answer, answer
    assert answer["result"]["structuredContent"]["ok"] is True, answer
    assert entries_stored(db) == 1


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_a_call_whose_write_is_dropped_at_its_deadline_is_told_nothing_was_saved(tmp_path):
    replies: list[Reply] = []
    db = tmp_path / "agora.db"
    await shut_down_while_locked(db, _entering(replies), commit_timeout=0.5, release_after=None)
    refusal = replies[0].json()["result"]["structuredContent"]
    assert refusal["error"] == "the change could not be saved; nothing was changed", refusal
    assert refusal["retryable"] is True
    assert entries_stored(db) == 0


async def test_a_call_still_running_is_told_its_change_may_or_may_not_be_saved():
    replies: list[Reply] = []

    async def hang(port: int) -> None:
        async with RawHttp.open(port) as client:
            session = await open_session(client)
            replies.append(await client.request("POST", "/mcp/probe", call("hang"), session))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, serve(grace_seconds=0.2) as server:
            nursery.start_soon(hang, server.port)
            while server.app.in_flight == 0:  # noqa: ASYNC110 - counted, as a call is
                await trio.sleep(0.01)
    error = replies[0].json()["error"]
    assert error["code"] == -32603
    assert error["message"] == (
        "the server shut down before this call answered; a change it made may or may not have"
        " been saved: check before repeating it"
    )
