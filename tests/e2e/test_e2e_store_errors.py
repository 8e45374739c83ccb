"""A store error that retrying cannot cure is answered as a bug, not as "retry".

A real ``agora serve`` (router toolset) on a real database, driven by the official MCP SDK
over Streamable HTTP. The test breaks the router's table under the running server the way a
bad migration or a bad statement would: on SQLite a trigger refuses every new event (a
constraint violation, ``SQLITE_CONSTRAINT_TRIGGER``); on PostgreSQL a column the router
reads is renamed (SQLSTATE 42703, undefined column: the run cannot be loaded) or a CHECK
constraint refuses new events (23514). ``record_work_event`` must then
answer the router's sanitized internal error with ``retryable: false`` and a correlation id,
its text must not tell the agent to retry, and the server must log that id once, at ERROR,
with what the operator needs (the database's own words). Before, the same failure said
``retryable: true`` and "retry the call", and an agent retried it for ever.

A page route is answered alike: the chess page's ``POST /play/tables`` on a database made
read-only under the server answers the store's safe words (503, ``retryable``, ``cause``,
the correlation id the debug log names), where it answered a bare "internal error" with a
traceback in the log. The read-only disk itself is one WARNING for the episode, not a line
per refused call.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
from typing import TYPE_CHECKING, Any

import pytest
import trio
from chess_page_http import http_json
from e2e_process import AgoraProcess, unstamped

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

if TYPE_CHECKING:
    from pathlib import Path

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 60
CONTEXT = {"session_id": "s", "actor": "user:s", "runtime_policy_snapshot_id": "pol"}


def _event(run: str, version: int, key: str) -> dict[str, Any]:
    return {
        "context": CONTEXT, "workflow_run_id": run, "phase_id": "plan",
        "observation": {"by": key}, "activation_receipt_ref": None,
        "expected_state_version": version, "idempotency_key": key, "correlation_id": key,
    }  # fmt: skip


async def _plan(client: Any) -> str:
    planned = await client.call_tool("plan_work", {
        "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "plan",
        "correlation_id": "p", "objective": "1. design\n2. build",
        "goal_binding_id": None, "requested_work_mode": None,
        "explicit_skill_ids": [], "explicit_semantics": None,
    })  # fmt: skip
    assert not planned.is_error, planned
    return str(planned.structured_content["workflow_run_id"])


async def _refused_event(server: AgoraProcess, break_table: Any) -> tuple[Any, Any]:
    """Plan a run, break the events table, record an event twice: both answers."""
    async with mcp.Client(
        f"{server.url}/mcp/router", mode="legacy", read_timeout_seconds=TIMEOUT
    ) as client:
        run = await _plan(client)
        await trio.to_thread.run_sync(break_table)
        first = await client.call_tool("record_work_event", _event(run, 1, "e1"))
        again = await client.call_tool("record_work_event", _event(run, 1, "e1"))
    return first, again


def _check_answered_as_a_bug(server: AgoraProcess, result: Any, cause: str) -> str:
    """The router's internal error, not retryable, logged once at ERROR with ``cause``."""
    assert result.is_error, result
    body = result.structured_content
    assert body["code"] == "internal-error", body
    assert body["retryable"] is False, body
    assert body["state_changed"] is False, body
    correlation = body["correlation_id"]
    assert re.fullmatch(r"corr-[0-9a-f]{16}", correlation), body
    text = result.content[0].text
    assert correlation in text
    assert "retry" not in text.lower(), text
    assert cause not in str(body)  # sanitized: the database's words stay in the log
    # The log comes through a pipe and a reader thread: the reply may arrive before it.
    assert server.wait_for_line(re.escape(correlation), 10) is not None, server.log
    lines = [line for line in server.log.splitlines() if correlation in line]
    assert len(lines) == 1, server.log
    assert unstamped(lines[0]).startswith("ERROR "), lines
    assert cause in lines[0], lines
    assert "Traceback" not in server.log, server.log
    return correlation


@pytest.mark.sqlite_only("breaks a SQLite file's table with a trigger")
async def test_a_constraint_violation_on_sqlite_is_not_retryable(tmp_path: Path):
    db = tmp_path / "agora.db"

    def refuse_events() -> None:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute(
                "CREATE TRIGGER frozen BEFORE INSERT ON router_events "
                "BEGIN SELECT RAISE(ABORT, 'router events are frozen'); END"
            )
            conn.commit()

    with AgoraProcess("--db", str(db), "--toolsets", "router") as server:
        with trio.fail_after(TIMEOUT):
            first, again = await _refused_event(server, refuse_events)
        one = _check_answered_as_a_bug(server, first, "router events are frozen")
        two = _check_answered_as_a_bug(server, again, "router events are frozen")
        assert one != two  # each failure has its own id and log line
        server.assert_clean_exit(server.stop())


@pytest.mark.parametrize(
    ("change", "sqlstate"),
    [
        pytest.param(  # the router's load of the run fails
            "ALTER TABLE router_events RENAME COLUMN observation_json TO gone",
            "42703",
            id="undefined-column-on-load",
        ),
        pytest.param(  # the event's INSERT fails in the writer's batch
            "ALTER TABLE router_events ADD CONSTRAINT frozen CHECK (seq < 0) NOT VALID",
            "23514",
            id="check-violation-on-write",
        ),
    ],
)
async def test_a_permanent_error_on_postgresql_is_not_retryable(
    pg_url: str, change: str, sqlstate: str
):
    import psycopg

    def break_table() -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(change)

    with AgoraProcess("--db", pg_url, "--toolsets", "router") as server:
        with trio.fail_after(TIMEOUT):
            first, again = await _refused_event(server, break_table)
        _check_answered_as_a_bug(server, first, sqlstate)
        _check_answered_as_a_bug(server, again, sqlstate)
        server.assert_clean_exit(server.stop())


# -- A toolset with no failure shape of its own, embedded, on either backend -----------------
#
# The PostgreSQL pass runs this on PostgreSQL (the file path becomes a schema): the same bad
# statements fail there with SQLSTATEs 23514 and 42P01, and are answered the same way.


def _create_ledger(db: Any) -> None:
    db.execute("CREATE TABLE ledger_rows (key TEXT NOT NULL, amount INTEGER CHECK (amount >= 0))")


LEDGER_PG = ["CREATE TABLE ledger_rows (key TEXT NOT NULL, amount BIGINT CHECK (amount >= 0))"]


class _Ledger:
    """An entity whose command writes a row: a negative amount breaks the table's CHECK."""

    def handle(self, command: int, now: Any) -> Any:
        from agora.runtime.entity import Effects

        return Effects(reply={"added": command}, writes=[(_INSERT, ("k", command))])


_INSERT = "INSERT INTO ledger_rows (key, amount) VALUES (?, ?)"


class _LedgerKind:
    kind = "ledger"

    def load(self, conn: Any, key: str, now: Any) -> _Ledger:
        return _Ledger()


def _ledger_toolset() -> Any:
    from agora.store.migrations import Migration
    from agora.toolsets.base import ToolCall, Toolset

    async def add(call: ToolCall) -> dict[str, Any]:
        reply: dict[str, Any] = await call.runtime.call(_LedgerKind(), "k", call.args["amount"])
        return reply

    async def lost(call: ToolCall) -> dict[str, Any]:
        await call.runtime.write([("INSERT INTO ledger_gone (key) VALUES (?)", ("k",))])
        return {}

    schema = {"type": "object"}
    tools = [
        {"name": "ledger_add", "description": "Adds.", "inputSchema": schema},
        {"name": "ledger_lost", "description": "Writes to a missing table.", "inputSchema": schema},
    ]
    migrations = [Migration("ledger", 1, _create_ledger, sql={"postgresql": LEDGER_PG})]
    handlers = {"ledger_add": add, "ledger_lost": lost}
    return Toolset("ledger", handlers, migrations, contract=None, tools=tools)


async def test_without_a_failure_shape_a_permanent_error_is_an_internal_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    from mcp.shared.exceptions import MCPError

    from agora.config import Config
    from agora.mcp import jsonrpc as rpc
    from agora.server.embed import open_server

    config = Config(db=str(tmp_path / "ledger.db"), port=0)
    refused: list[MCPError] = []
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[_ledger_toolset()]) as server,
            mcp.Client(f"{server.url}/mcp", read_timeout_seconds=TIMEOUT) as client,
        ):
            added = await client.call_tool("ledger_add", {"amount": 2})
            assert not added.is_error, added
            for tool, amount in (("ledger_add", -1), ("ledger_lost", 0)):
                with pytest.raises(MCPError) as failed:
                    await client.call_tool(tool, {"amount": amount})
                refused.append(failed.value)
    for error, cause in zip(refused, ("ledger_rows", "ledger_gone"), strict=True):
        assert error.code == rpc.INTERNAL_ERROR, error
        assert error.message == "internal error", error
        correlation = error.data["correlation_id"]
        lines = [r for r in caplog.records if correlation in r.getMessage()]
        assert [r.levelname for r in lines] == ["ERROR"], caplog.text
        assert cause in lines[0].getMessage(), lines[0].getMessage()


@pytest.mark.sqlite_only("SQLite files made immutable under the server")
async def test_a_page_that_cannot_save_answers_the_stores_words(tmp_path: Path):
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("needs: chattr (e2fsprogs)")
    db = tmp_path / "agora.db"
    # The immutable attribute stops root's writes too, on the files SQLite holds open.
    frozen = [str(tmp_path), str(db), f"{db}-wal"]
    with AgoraProcess("--db", str(db), "--toolsets", "chess", "-v") as server:
        status, body = await http_json("POST", f"{server.url}/play/tables", {})
        assert status == 201, body
        done = await trio.run_process([chattr, "+i", *frozen], capture_stderr=True, check=False)
        try:
            if done.returncode != 0:
                pytest.skip(f"needs: chattr +i ({done.stderr.decode().strip()})")
            for _ in range(50):  # a write may fit in the WAL file's pages a few times first
                status, body = await http_json("POST", f"{server.url}/play/tables", {})
                if status != 201:
                    break
        finally:
            with trio.CancelScope(shield=True):
                await trio.run_process([chattr, "-i", *frozen], check=False)
        assert status == 503, body
        assert body["error"] == (
            "the change could not be saved: the database is read-only (its files or file"
            " system refuse writes); nothing was changed"
        )
        assert (body["retryable"], body["cause"]) == (True, "read_only"), body
        with trio.fail_after(TIMEOUT):
            line = await server.wait_for_log(re.escape(body["correlation_id"]))
        assert unstamped(line).startswith(
            "DEBUG agora.server.connection: page POST /play/tables failed"
        )  # the disk's refusal, told once per episode by the store:
        (told,) = re.findall(r"WARNING agora.store.diskfault: .*", server.log)
        assert "is read-only" in told, told
        assert "Traceback" not in server.log
