"""Call workers (`agora.server.workers`): a WebSocket call starts in an idle task of the
server's nursery instead of a task of its own, without losing what a task of its own gave it:
its own cancellation, an exception that ends only it, nothing kept once it is over, and
shutdown ending whatever idles.
"""

from __future__ import annotations

import gc
import json
import weakref
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from _ws_peer import WsPeer
from wsproto.events import TextMessage

from agora.config import Config
from agora.server.embed import open_server
from agora.server.workers import Workers
from agora.toolsets.base import Handler, ToolCall, Toolset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

TIMEOUT = 15


async def body(workers: Workers, job: Any) -> None:
    """A worker that runs each job (an async callable) and asks for the next."""
    prepared = job is None
    while True:
        if job is not None:
            await job()
        job = await workers.next(prepared=prepared)
        prepared = False
        if job is None:
            return


async def test_a_finished_worker_runs_the_next_job_and_at_most_keep_stay_idle():
    tasks: list[trio.lowlevel.Task] = []
    release = trio.Event()

    async def quick() -> None:
        tasks.append(trio.lowlevel.current_task())

    async def slow() -> None:
        tasks.append(trio.lowlevel.current_task())
        await release.wait()

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            workers = Workers(nursery, body, keep=2)
            workers.start_soon(quick)
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 1
            workers.start_soon(quick)
            await trio.testing.wait_all_tasks_blocked()
            assert tasks[0] is tasks[1]  # the same task ran both
            for _ in range(5):
                workers.start_soon(slow)
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 0
            assert len(set(tasks[2:])) == 5  # all at once: one reused, four new
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 2  # the other three ended
            assert len(nursery.child_tasks) == 2
            nursery.cancel_scope.cancel()  # idle workers end with their nursery
    assert workers.idle == 0


async def test_prepared_workers_are_counted_before_they_run():
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            workers = Workers(nursery, body, keep=3)
            for _ in range(10):
                workers.prepare()
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 3
            # 10 prepared, 3 started: no task was made only to end at once.
            assert len(nursery.child_tasks) == 3
            nursery.cancel_scope.cancel()


async def test_a_job_that_raises_ends_its_worker_as_it_would_end_its_own_task():
    async def boom() -> None:
        raise ValueError("boom")

    with trio.fail_after(TIMEOUT), pytest.RaisesGroup(ValueError):
        async with trio.open_nursery() as nursery:
            workers = Workers(nursery, body)
            workers.start_soon(boom)
    assert workers.idle == 0


# -- over a real WebSocket --------------------------------------------------------------------


class Tools:
    def __init__(self) -> None:
        self.tasks: list[trio.lowlevel.Task] = []
        self.parked = trio.Event()
        self.cancelled = trio.Event()

    async def where(self, call: ToolCall) -> dict[str, Any]:
        self.tasks.append(trio.lowlevel.current_task())
        return {"n": len(self.tasks)}

    async def park(self, call: ToolCall) -> dict[str, Any]:
        self.tasks.append(trio.lowlevel.current_task())
        try:
            self.parked.set()
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")


def toolset(handlers: dict[str, Handler]) -> Toolset:
    """The ``calls`` toolset: a tool per handler, any object its arguments."""
    specs = [
        {"name": name, "description": name, "inputSchema": {"type": "object"}} for name in handlers
    ]
    return Toolset(name="calls", contract=None, tools=specs, handlers=handlers)


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


@asynccontextmanager
async def session(handlers: dict[str, Handler]) -> AsyncIterator[WsPeer]:
    """A server of `toolset` ``handlers`` and a WebSocket peer whose MCP session is open."""
    config = Config(db=":memory:", port=0, ping_interval=0)
    async with (
        open_server(config, toolsets=[toolset(handlers)]) as server,
        WsPeer.open(server.port, "/mcp/calls") as peer,
    ):
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        await peer.send_json(request(0, "initialize", init))
        assert (await peer.recv_json())["id"] == 0
        yield peer


async def test_websocket_calls_reuse_workers_and_a_cancelled_call_leaves_its_worker_usable():
    tools = Tools()
    with trio.fail_after(TIMEOUT):
        async with session({"where": tools.where, "park": tools.park}) as peer:
            for rid in (1, 2):
                await peer.send_json(request(rid, "tools/call", {"name": "where"}))
                reply = await peer.recv_json()
                assert reply["id"] == rid
                assert not reply["result"].get("isError")
            assert tools.tasks[0] is tools.tasks[1]  # one idle worker ran both calls
            await peer.send_json(request(3, "tools/call", {"name": "park"}))
            await tools.parked.wait()
            assert tools.tasks[2] is tools.tasks[0]
            cancel = {"requestId": 3, "reason": "enough"}
            await peer.send_json(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            await tools.cancelled.wait()
            await peer.send_json(request(4, "tools/call", {"name": "where"}))
            reply = await peer.recv_json()
            assert reply["id"] == 4  # nothing was sent for the cancelled call
            assert reply["result"]["structuredContent"] == {"n": 4}
            assert tools.tasks[3] is tools.tasks[0]  # the worker survived the cancellation


class Reply(dict[str, Any]):
    """A tool's reply that can be watched for being freed."""


async def test_a_call_cancelled_before_it_began_never_runs_and_a_worker_keeps_no_reply():
    seen: list[str] = []
    replies: list[weakref.ref[Reply]] = []

    async def where(call: ToolCall) -> dict[str, Any]:
        seen.append(call.args.get("tag", ""))
        reply = Reply(n=len(seen))
        replies.append(weakref.ref(reply))
        return reply

    with trio.fail_after(TIMEOUT):
        async with session({"where": where}) as peer:
            # The call and its cancellation in one write: the server reads both before the
            # call's worker runs, so the call never begins and nothing answers it.
            doomed = request(1, "tools/call", {"name": "where", "arguments": {"tag": "doomed"}})
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            cancel["params"] = {"requestId": 1}
            both = b"".join(peer.ws.send(TextMessage(data=json.dumps(m))) for m in (doomed, cancel))
            await peer.stream.send_all(both)
            await peer.send_json(request(2, "tools/call", {"name": "where", "arguments": {}}))
            reply = await peer.recv_json()
            assert reply["id"] == 2
            assert reply["result"]["structuredContent"] == {"n": 1}
            assert seen == [""]
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            assert replies[0]() is None  # the idle worker let go of the reply it sent


async def test_a_call_that_returns_after_its_cancellation_was_asked_for_is_not_answered():
    """A handler may be past its last checkpoint when ``notifications/cancelled`` comes (a
    shielded step, a long-poll cut short by shutdown without parking): its return must not
    be sent, as a cancelled call's is not (here once its worker has a cancelled scope)."""
    parked, release = trio.Event(), trio.Event()

    async def shielded(call: ToolCall) -> dict[str, Any]:
        with trio.CancelScope(shield=True):
            parked.set()
            await release.wait()
        return {"done": True}

    async def where(call: ToolCall) -> dict[str, Any]:
        return {"n": 1}

    with trio.fail_after(TIMEOUT):
        async with session({"shielded": shielded, "where": where}) as peer:
            await peer.send_json(request(1, "tools/call", {"name": "shielded"}))
            await parked.wait()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            cancel["params"] = {"requestId": 1}
            await peer.send_json(cancel)
            await peer.send_json(request(2, "ping", {}))  # read after the cancellation
            assert (await peer.recv_json())["id"] == 2
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            await peer.send_json(request(3, "tools/call", {"name": "where"}))
            reply = await peer.recv_json()
            assert reply["id"] == 3  # nothing was sent for the cancelled call
