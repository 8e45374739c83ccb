"""``agora serve --shared`` and ``agora stdio --db --shared`` on one SQLite file, as users run them.

Real processes on a real file: an agent plays a chess game through a stdio process against a
human on the server's page (each side's waiter is woken by the other process's commits); the
chamber's action-index CAS sent through both at once has exactly one winner; a server killed
with SIGKILL loses no acknowledged action while the stdio process goes on; an unshared
process is refused beside shared ones. The stdio side is the official MCP SDK's client.
"""

from __future__ import annotations

import signal
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).parents[1] / "nodes"))
sys.path.insert(0, str(Path(__file__).parents[1] / "store"))

from _wal_lock import dms_holder, open_from_other_processes
from chess_page_http import http_json
from chess_players import check_fools_mate, fools_mate_against_the_page
from chess_server import agora_serve
from e2e_process import AgoraProcess, one_line, run_agora
from e2e_sdk import sdk_stdio
from test_nodes_chamber import enter, look

from agora.client import connect

mcp = pytest.importorskip("mcp")


if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.sqlite_only("agora processes sharing one SQLite file")

TIMEOUT = 60


@asynccontextmanager
async def stdio(db: Path, log_path: Path, *args: str) -> AsyncIterator[Any]:
    """The SDK's stdio client running ``agora stdio --db db --shared args``."""
    with log_path.open("a+") as log:
        async with sdk_stdio(["stdio", "--db", str(db), "--shared", *args], log, TIMEOUT) as client:
            yield client


async def act(client: Any, handle: str, expected: int) -> dict[str, Any]:
    """``look`` at ``expected`` through the SDK client; its structured reply."""
    got = await client.call_tool(
        "chamber_action",
        {"challenge_handle": handle, "op": "look", "expected_action_index": expected},
    )
    assert got.structured_content is not None, got
    return dict(got.structured_content)


async def test_an_agent_in_a_stdio_process_plays_the_servers_page_on_one_file(tmp_path):
    db = tmp_path / "agora.db"
    notes = {2: "e5, as it should.", 4: "Qh4 is mate."}
    with trio.fail_after(TIMEOUT):
        async with agora_serve(db, "--shared") as server:
            endpoint = f"/mcp/chess/default?token={server.agent_token}"
            async with stdio(
                db, tmp_path / "stdio.log", "--toolset", "chess", "--endpoint", endpoint
            ) as client:
                # The agent's waits park in the stdio process and wake on the server's
                # commits (the human's moves), and the other way round.
                agent, _, final, page = await fools_mate_against_the_page(server, client, notes)
    # The agent's moves, committed by the stdio process, are on the server's page.
    check_fools_mate(agent, final, page, notes)


async def test_the_same_action_index_through_serve_and_stdio_has_exactly_one_winner(tmp_path):
    db = tmp_path / "agora.db"
    with AgoraProcess("--db", str(db), "--shared", "--toolsets", "chamber") as server:
        with trio.fail_after(TIMEOUT):
            handle = await enter(server.url)
            ws = f"{server.url.replace('http', 'ws')}/mcp/chamber"
            async with (
                stdio(db, tmp_path / "stdio.log", "--toolset", "chamber") as there,
                connect(ws) as here,
            ):
                wins = [0, 0]
                for expected in range(30):
                    got: list[dict[str, Any]] = [{}, {}]

                    async def one(i: int, at: int = expected, got: list[Any] = got) -> None:
                        got[i] = await (
                            look(here, handle, at) if i == 0 else act(there, handle, at)
                        )

                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(one, 0)
                        nursery.start_soon(one, 1)
                    assert sum(bool(g.get("ok")) for g in got) == 1, got  # the CAS stays exact
                    (loser,) = [g for g in got if not g.get("ok")]
                    assert loser["code"] == "stale_action_index", loser
                    assert loser["current_action_index"] == expected + 1
                    wins[0 if got[0].get("ok") else 1] += 1
                assert (await look(here, handle, 30))["action_index"] == 31
                status, health = await http_json("GET", f"{server.url}/healthz")
                assert status == 200, health
                store = health["store"]
                assert store["engine"] == "sqlite"
                assert store["retried"] == store["conflicts"]  # each rejected command reran
                assert store["busy"] == 0  # one rival write per round never needs a 4th try
                assert store["listener_connects"] == 1  # the change feed started once
        server.assert_clean_exit(server.stop())
    assert sum(wins) == 30


async def test_other_processes_opening_the_file_never_kill_the_server(tmp_path):
    # The failure this stands for: `agora stdio --db F --shared` started beside a server that
    # had just answered, and the server was gone (SIGBUS, nothing in its log). Its checkpointer
    # had opened and closed the -shm to read it, which dropped the server's SQLite locks on
    # it, so the next process to open F truncated the -shm the server maps.
    db = tmp_path / "agora.db"
    with AgoraProcess("--db", str(db), "--shared", "--toolsets", "chamber") as server:
        with trio.fail_after(TIMEOUT):
            await enter(server.url)  # a commit: the checkpointer looks at the WAL index
            for _ in range(5):
                # Before: nobody, once the checkpointer had looked (a look follows each commit).
                assert await trio.to_thread.run_sync(dms_holder, db) == server.pid
                await trio.sleep(0.05)
            # Before: the server died of SIGBUS now and then (1 in 16 to 67 openers).
            await trio.to_thread.run_sync(open_from_other_processes, db, 200)
            async with stdio(db, tmp_path / "stdio.log", "--toolset", "chamber") as there:
                handle = await enter(server.url)
                assert (await act(there, handle, 0))["action_index"] == 1
            status, health = await http_json("GET", f"{server.url}/healthz")
            assert status == 200, health
            assert await trio.to_thread.run_sync(dms_holder, db) == server.pid
        server.assert_clean_exit(server.stop())


async def test_a_server_dying_of_a_fatal_signal_says_where_it_was(tmp_path):
    # What the SIGBUS above left in the server's log: nothing. Now every thread's stack.
    db = tmp_path / "agora.db"
    with AgoraProcess("--db", str(db), "--shared", "--toolsets", "chamber") as server:
        with trio.fail_after(TIMEOUT):
            await enter(server.url)
            server.signal(signal.SIGBUS)
            assert await server.wait_exit() == -signal.SIGBUS
            await server.wait_for_log("Fatal Python error: Bus error")
            log = server.log
            assert "Current thread" in log, log
            assert "agora/cli.py" in log, log  # the main thread's stack, down to main()
            assert "agora/store/writer.py" in log, log  # and every other thread's


async def test_a_killed_server_loses_no_acknowledged_action_and_stdio_goes_on(tmp_path):
    db = tmp_path / "agora.db"
    acked: list[int] = []  # through the server, on its attempt
    server = AgoraProcess("--db", str(db), "--shared", "--toolsets", "chamber")
    with server, trio.fail_after(TIMEOUT):
        mine, theirs = await enter(server.url), await enter(server.url)
        async with stdio(db, tmp_path / "stdio.log", "--toolset", "chamber") as there:
            killed = trio.Event()

            async def through_server() -> None:
                try:
                    async with connect(f"{server.url.replace('http', 'ws')}/mcp/chamber") as c:
                        while len(acked) < 60:  # an attempt takes at most 64 actions
                            body = await look(c, mine, len(acked))
                            assert body.get("ok"), body
                            acked.append(body["action_index"])
                except Exception:
                    assert killed.is_set()  # the connection died with the server
                    return
                await killed.wait()  # too fast for the kill: it came after the last action

            async def through_stdio(handle: str, start: int, rounds: int) -> int:
                for at in range(start, start + rounds):
                    body = await act(there, handle, at)
                    assert body.get("ok"), body
                return start + rounds

            async with trio.open_nursery() as nursery:
                nursery.start_soon(through_server)
                done = await through_stdio(theirs, 0, 5)  # both processes write meanwhile
                while len(acked) < 20:  # noqa: ASYNC110 - the server side's progress, by count
                    await trio.sleep(0.002)
                killed.set()
                server.signal(signal.SIGKILL)
                await server.wait_exit()
            # The file is still served, by the stdio process: its writes go on.
            done = await through_stdio(theirs, done, 10)
            # Every action the server acknowledged is on file; at most one more, sent as it died.
            body = await act(there, mine, 64)
            assert body["code"] == "stale_action_index", body
            on_file = body["current_action_index"]
            assert on_file - len(acked) in (0, 1), (on_file, acked)
    assert acked == list(range(1, len(acked) + 1))
    with AgoraProcess("--db", str(db), "--toolsets", "chamber") as fresh, trio.fail_after(TIMEOUT):
        async with connect(f"{fresh.url.replace('http', 'ws')}/mcp/chamber") as c:
            assert (await look(c, mine, on_file))["action_index"] == on_file + 1
            assert (await look(c, theirs, done))["action_index"] == done + 1
        fresh.assert_clean_exit(fresh.stop())


@pytest.mark.parametrize(
    ("first", "second", "says"),
    [
        pytest.param("--shared", "", "is shared by other agora processes", id="unshared-refused"),
        pytest.param(
            "", "--shared", "is in use by another agora process (pid", id="shared-refused"
        ),
    ],
)
async def test_an_unshared_process_is_never_beside_a_shared_one(tmp_path, first, second, says):
    db = tmp_path / "agora.db"
    flags = [f for f in (first,) if f]
    with AgoraProcess("--db", str(db), *flags, "--toolsets", "chess") as server:
        with trio.fail_after(TIMEOUT):
            done = await run_agora(
                "stdio", "--toolset", "chess", "--db", str(db), *[f for f in (second,) if f]
            )
        assert done.returncode == 2
        line = one_line(done.stderr)
        assert says in line, line
        assert "--shared" in line, line
        server.assert_clean_exit(server.stop())


async def test_cards_sign_is_refused_beside_shared_processes(tmp_path):
    db = tmp_path / "agora.db"
    with AgoraProcess("--db", str(db), "--shared", "--toolsets", "chamber") as server:
        with trio.fail_after(TIMEOUT):
            done = await run_agora("cards", "sign", "--db", str(db), "--key", "no-such-key")
        assert done.returncode == 2
        line = one_line(done.stderr)
        assert "is shared by other agora processes" in line, line
        assert "cards sign is offline: stop them first" in line, line
        server.assert_clean_exit(server.stop())
