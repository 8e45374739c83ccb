"""Internal failures answered in the toolset's vocabulary; in-flight cap and shadowed names.

Through the real session driver (`Connection`) with in-process clients: a tool that fails
inside the server reaches the client as the toolset's own error body (checked against the
tool's outputSchema) with a correlation id that names the server's log line.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.errors import ActorStopped, Failure, StoreError, ToolError
from agora.mcp import jsonrpc as rpc
from agora.runtime.actor import InternalError
from agora.server.embed import open_server
from agora.store.neutral import Busy
from agora.toolsets.base import ToolCall, Toolset

OUTPUT = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "code": {"type": "string"},
        "correlation_id": {"type": "string", "pattern": "^corr-[0-9a-f]{16}$"},
        "retryable": {"type": "boolean"},
    },
    "required": ["ok"],
}
ERRORS: dict[str, Exception] = {
    "internal": InternalError("internal error in thing; nothing was changed"),
    "stopped": ActorStopped("thing x stopped"),
    "store": StoreError("the store is full"),
    "busy": Busy("thing x kept changing elsewhere; nothing was changed"),
    "unexpected": RuntimeError("secret detail that must not leak"),
    # Store failures no retry can cure (`agora.store.failures`): answered as a bug.
    "permanent-write": StoreError("write failed: IntegrityError: secret row", permanent=True),
    # What libpq says of a PostgreSQL that is away names its address and user.
    "store-away": StoreError(
        'read failed: connection failed: connection to server at "10.9.8.7", port 55601 '
        'failed: FATAL: password authentication failed for user "agora_ops"'
    ),
    "store-unknown": StoreError(
        "write not acknowledged: the database connection broke during its COMMIT "
        '(server at "10.9.8.7", port 55601); it may or may not have been saved',
        outcome_unknown=True,
    ),
    "permanent-commit": InternalError(
        "internal error; nothing was changed",
        permanent=True,
        detail="thing x commit failed: write failed: IntegrityError: secret row",
    ),
}


async def fail(call: ToolCall) -> dict[str, Any]:
    raise ERRORS[call.args["kind"]]


def shaped(failure: Failure) -> dict[str, Any]:
    return {
        "ok": False,
        "code": f"failed-{failure.kind}",
        "correlation_id": failure.correlation_id,
        "retryable": failure.retryable,
    }


def _toolset(name: str, **extra: Any) -> Toolset:
    tool = {
        "name": f"{name}_fail",
        "description": "Fails.",
        "inputSchema": {"type": "object"},
        "outputSchema": OUTPUT,
    }
    return Toolset(name, {f"{name}_fail": fail}, contract=None, tools=[tool], **extra)


async def _call(server, tool: str, kind: str) -> dict[str, Any]:
    async with server.client() as client:
        await client.initialize()
        return await client.request("tools/call", {"name": tool, "arguments": {"kind": kind}})


@pytest.mark.parametrize("kind", ["internal", "stopped", "store", "unexpected"])
async def test_a_toolset_shapes_internal_failures_in_its_own_vocabulary(kind, caplog):
    caplog.set_level(logging.WARNING)
    sets = [_toolset("shaped", shape_failure=shaped)]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            reply = await _call(server, "shaped_fail", kind)
    result = reply["result"]
    body = result["structuredContent"]
    assert result["isError"] is True
    assert body["code"] == f"failed-{kind}"
    assert body["retryable"] is (kind != "unexpected")
    assert re.fullmatch(r"corr-[0-9a-f]{16}", body["correlation_id"])
    assert body["correlation_id"] in caplog.text  # the id names the server's log line
    assert body["correlation_id"] in result["content"][0]["text"]
    assert "secret detail" not in str(result)


async def _both(kind: str) -> tuple[Failure, list[dict[str, Any]]]:
    """The failure the shaped toolset's hook saw, and the replies of the shaped and the
    plain (hook-less) toolsets' tools failing as ``kind`` says."""
    seen: list[Failure] = []

    def keep(failure: Failure) -> dict[str, Any]:
        seen.append(failure)
        return shaped(failure)

    sets = [_toolset("shaped", shape_failure=keep), _toolset("plain")]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            replies = [await _call(server, f"{name}_fail", kind) for name in ("shaped", "plain")]
    (failure,) = seen
    return failure, replies


@pytest.mark.parametrize("kind", ["permanent-write", "permanent-commit"])
async def test_a_store_failure_no_retry_can_cure_is_answered_as_a_bug(kind, caplog):
    failure, (shaped_reply, plain_reply) = await _both(kind)
    assert failure.kind == "unexpected"
    assert failure.retryable is False
    assert failure.message == "internal error; nothing was changed"
    result = shaped_reply["result"]
    assert result["structuredContent"]["retryable"] is False
    assert "retry" not in result["content"][0]["text"]
    assert plain_reply["error"]["code"] == rpc.INTERNAL_ERROR  # no hook: as any bug
    for correlation in (failure.correlation_id, plain_reply["error"]["data"]["correlation_id"]):
        lines = [r for r in caplog.records if correlation in r.getMessage()]
        assert [r.levelname for r in lines] == ["ERROR"], caplog.text  # once, with the detail
        assert "IntegrityError: secret row" in lines[0].getMessage()
    assert "secret" not in str(shaped_reply) + str(plain_reply)


@pytest.mark.parametrize("kind", ["store-away", "store-unknown"])
async def test_a_store_failure_reaches_clients_in_fixed_words_and_its_detail_the_log(kind, caplog):
    caplog.set_level(logging.WARNING)
    failure, replies = await _both(kind)
    unknown = kind == "store-unknown"
    assert failure.message == (
        "the change may or may not have been saved (the database did not confirm it)"
        if unknown
        else "the database is unavailable or did not answer in time; nothing was changed"
    )
    assert (failure.kind, failure.retryable, failure.outcome_unknown) == (
        "store",
        not unknown,
        unknown,
    )
    for reply in replies:
        answer = str(reply)
        for secret in ("10.9.8.7", "55601", "agora_ops", "password", "connection to server"):
            assert secret not in answer, answer
        correlation = re.search(r"corr-[0-9a-f]{16}", answer)
        assert correlation is not None, answer
        lines = [r.getMessage() for r in caplog.records if correlation.group(0) in r.getMessage()]
        assert len(lines) == 1, caplog.text
        assert '"10.9.8.7", port 55601' in lines[0]  # the detail, for the operator


async def test_a_version_guards_busy_answer_keeps_its_own_words():
    sets = [_toolset("plain")]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            reply = await _call(server, "plain_fail", "busy")
    text = reply["result"]["content"][0]["text"]
    assert text.startswith("thing x kept changing elsewhere; nothing was changed; retry"), text


async def test_without_a_hook_failures_are_text_and_a_bug_is_32603_with_its_id(caplog):
    sets = [_toolset("plain")]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            internal = await _call(server, "plain_fail", "internal")
            bug = await _call(server, "plain_fail", "unexpected")
    assert internal["result"]["isError"] is True
    assert "retry the call" in internal["result"]["content"][0]["text"]
    assert bug["error"]["code"] == rpc.INTERNAL_ERROR
    assert bug["error"]["data"]["correlation_id"] in caplog.text
    assert "secret detail" not in str(bug)


async def test_a_shaped_body_that_breaks_the_output_schema_falls_back_to_text(caplog):
    def wrong(failure: Failure) -> dict[str, Any]:
        return {"ok": "no", "correlation_id": failure.correlation_id}

    sets = [_toolset("wrong", shape_failure=wrong)]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            reply = await _call(server, "wrong_fail", "store")
            bug = await _call(server, "wrong_fail", "unexpected")
    assert "structuredContent" not in reply["result"]
    assert reply["result"]["isError"] is True
    # A bug falls back to what it gets without the hook, and the log says so (embedder's
    # finding: it said "answering with text" for the -32603 it sent).
    assert bug["error"]["code"] == rpc.INTERNAL_ERROR
    said = [r.getMessage() for r in caplog.records if "outputSchema refuses" in r.getMessage()]
    assert [m.split("; ")[-1].split(" (")[0] for m in said] == [
        "answering with text",
        "answering with JSON-RPC -32603",
    ]


async def test_too_many_calls_in_flight_get_their_own_code():
    release = trio.Event()

    async def hold(call: ToolCall) -> dict[str, Any]:
        await release.wait()
        return {"ok": True}

    tool = {"name": "hold", "description": "Holds.", "inputSchema": {"type": "object"}}
    sets = [Toolset("held", {"hold": hold}, contract=None, tools=[tool])]
    config = Config(db=":memory:", max_in_flight=2)
    replies: list[dict[str, Any]] = []
    with trio.fail_after(20):
        async with (
            open_server(config, toolsets=sets, listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()

            async def call() -> None:
                replies.append(await client.request("tools/call", {"name": "hold"}))

            async with trio.open_nursery() as nursery:
                for _ in range(2):
                    nursery.start_soon(call)
                await trio.testing.wait_all_tasks_blocked()
                refused = await client.request("tools/call", {"name": "hold"})
                release.set()
    assert refused["error"]["code"] == rpc.TOO_MANY_IN_FLIGHT == -32010
    assert refused["error"]["data"] == {"max_in_flight": 2, "retryable": True}
    assert [r["result"]["structuredContent"] for r in replies] == [{"ok": True}] * 2


async def test_two_toolsets_serving_one_tool_name_are_refused_at_start_up():
    echo = {"name": "echo", "description": "", "inputSchema": {"type": "object"}}
    sets = [
        Toolset("one", {"echo": fail}, contract=None, tools=[echo]),
        Toolset("two", {"echo": fail}, contract=None, tools=[echo]),
    ]
    with pytest.raises(ValueError, match="'echo' is served by both toolset one and toolset two"):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False):
            pass


def _broken(failure: Failure) -> dict[str, Any]:
    raise KeyError("a bug in the toolset's hook")


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"shape_failure": _broken}, id="hook-raises"),
        pytest.param(
            {"shape_failure": shaped, "failure_schema": {"type": "obect"}},
            id="schema-does-not-compile",
        ),
    ],
)
async def test_a_shaper_that_fails_falls_back_to_text_and_is_logged_once(extra, caplog):
    """Neither a hook that raises nor a schema that does not compile leaves a call unanswered."""
    sets = [_toolset("broken", **extra)]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            reply = await _call(server, "broken_fail", "internal")
    result = reply["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    correlation = re.search(r"corr-[0-9a-f]{16}", result["content"][0]["text"])
    assert correlation is not None
    (shaping,) = [r for r in caplog.records if "failed to shape" in r.getMessage()]
    assert shaping.levelname == "ERROR"
    assert shaping.exc_info is not None  # with its traceback
    assert "toolset broken" in shaping.getMessage()
    assert correlation.group() in shaping.getMessage()


class Opaque:
    """A value no JSON encoder knows."""


async def test_a_reply_that_cannot_be_built_is_answered_32603_with_its_id(caplog):
    async def refuse(call: ToolCall) -> dict[str, Any]:
        raise ToolError({"ok": False, "why": Opaque()})  # its text copy cannot be encoded

    tool = {"name": "refuse", "description": "", "inputSchema": {"type": "object"}}
    sets = [Toolset("odd", {"refuse": refuse}, contract=None, tools=[tool])]
    with trio.fail_after(20):
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            reply = await _call(server, "refuse", "x")
    assert reply["error"]["code"] == rpc.INTERNAL_ERROR
    assert reply["error"]["message"] == "internal error"
    correlation = reply["error"]["data"]["correlation_id"]
    (logged,) = [r for r in caplog.records if correlation in r.getMessage()]
    assert logged.levelname == "ERROR"
    assert logged.exc_info is not None
    assert "tool refuse" in logged.getMessage()


class Ledger:
    """An entity whose ``handle`` returns a plain dict instead of `Effects`."""

    def handle(self, command: object, now: object) -> dict[str, Any]:
        return {"ok": True}


class LedgerKind:
    kind = "mine.ledger"

    def load(self, conn: object, key: str, now: object) -> Ledger:
        return Ledger()


async def test_an_entity_that_returns_no_effects_is_a_bug_reported_once(caplog, tmp_path):
    """It used to crash the actor and tell the client "internal error ...; retry the call"."""

    async def book(call: ToolCall) -> dict[str, Any]:
        return await call.runtime.call(LedgerKind(), "k", object())  # type: ignore[no-any-return]

    tool = {"name": "book", "description": "", "inputSchema": {"type": "object"}}
    sets = [Toolset("mine", {"book": book}, contract=None, tools=[tool])]
    config = Config(db=str(tmp_path / "mine.db"))
    with trio.fail_after(20):
        async with open_server(config, toolsets=sets, listen=False) as server:
            reply = await _call(server, "book", "x")
    assert reply["error"]["code"] == rpc.INTERNAL_ERROR  # unexpected: not retryable
    correlation = reply["error"]["data"]["correlation_id"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, caplog.text
    assert correlation in errors[0].getMessage()
    assert "mine.ledger k: handle returned a dict, not Effects" in errors[0].getMessage()
    assert "crashed" not in caplog.text
