"""A toolset author's mistakes are refused at start-up, by name, before the store opens.

An embedding program hands `open_server` its own toolsets; a mistake in one (a tool without
a handler, a handler the server cannot call as ``await handler(call)``, an inputSchema that
cannot be compiled or is missing) must fail the ``async with`` at once with one plain
`ValueError` that names the toolset, the tool and what is wrong, not an exception group
raised from inside the server's nurseries after the database was created and migrated (nor,
for a handler, an internal error on the tool's first call). Every shape the server can await
is served, the built-in toolsets' and the conformance fixtures' included. A name served twice
(a tool one toolset lists twice, two toolsets with one name) is refused the same way:
tools/list would list the tool twice, and ``/mcp/<name>`` would serve only one of the two
toolsets. A handler that returns something other than a dict gets an internal error that
names what it returned, never a result whose structuredContent is not an object.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.server.app import load_toolsets
from agora.server.embed import open_server
from agora.server.entries import schema_problem
from agora.toolsets.base import (
    Migration,
    ToolCall,
    Toolset,
    handler_problem,
    hook_problems,
    resource,
)

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from pathlib import Path


async def ok(call: ToolCall) -> dict[str, Any]:
    return {"ok": True}


def spec(name: str, schema: Any = None) -> dict[str, Any]:
    """A tools/list entry; ``schema`` None leaves the inputSchema out."""
    entry: dict[str, Any] = {"name": name, "description": "a tool"}
    if schema is not None:
        entry["inputSchema"] = schema
    return entry


OBJECT = {"type": "object"}
#: An object at the root, and a property whose type JSON Schema does not know.
BROKEN_OUTPUT = {"type": "object", "properties": {"n": {"type": "integr"}}}


def output(name: str, schema: Any) -> dict[str, Any]:
    """A tools/list entry with an object inputSchema and ``schema`` as its outputSchema."""
    return {**spec(name, OBJECT), "outputSchema": schema}


@pytest.mark.parametrize(
    ("toolset", "message"),
    [
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT), spec("b", OBJECT)]),
            "toolset mine has no handler for tool 'b'",
            id="missing-handler",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", {"type": "objekt"})]),
            "toolset mine: tool 'a' has an inputSchema that cannot be compiled",
            id="uncompilable-schema",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a")]),
            "toolset mine: tool 'a' has no inputSchema",
            id="missing-schema",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", {"type": "array"})]),
            'toolset mine: tool \'a\' has an inputSchema whose root is not `"type": "object"`',
            id="input-not-an-object",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[output("a", {"type": "string"})]),
            'toolset mine: tool \'a\' has an outputSchema whose root is not `"type": "object"`',
            id="output-not-an-object",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[output("a", BROKEN_OUTPUT)]),
            "toolset mine: tool 'a' has an outputSchema that cannot be compiled",
            id="uncompilable-output-schema",
        ),
    ],
)
async def test_a_broken_toolset_is_refused_by_name_before_the_store_opens(
    tmp_path: Path, toolset: Toolset, message: str
) -> None:
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=message):
        async with open_server(Config(db=str(db)), toolsets=[toolset], listen=False):
            pytest.fail("the server started with a broken toolset")
    assert not db.exists()


async def two(call: ToolCall, extra: str) -> dict[str, Any]:
    return {"extra": extra}


async def none() -> dict[str, Any]:
    return {}


async def keyword(call: ToolCall, *, must: int) -> dict[str, Any]:
    return {}


def sync(call: ToolCall) -> dict[str, Any]:
    return {"ok": True}


class Handlers:
    """Handlers as methods and callable objects: ``self`` is not the call."""

    async def method(self, call: ToolCall) -> dict[str, Any]:
        return {"ok": "method"}

    async def __call__(self, call: ToolCall) -> dict[str, Any]:
        return {"ok": "object"}


def handing_over(call: ToolCall) -> Coroutine[Any, Any, dict[str, Any]]:
    """Sync, returning another coroutine (as the debate's posting handlers do)."""
    return ok(call)


@functools.wraps(ok)
def wrapped(call: ToolCall) -> Any:
    return ok(call)


#: What a handler must be, as every message says it.
SHAPE = "a handler is `async def handler(call: ToolCall) -> dict`"


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        pytest.param(
            sync,
            "the handler of tool 'a' (sync) is not async: declare it `async def`",
            id="sync",
        ),
        pytest.param(
            lambda call: {"ok": True},
            "the handler of tool 'a' (<lambda>) is not async",
            id="sync-lambda",
        ),
        pytest.param(
            none,
            "the handler of tool 'a' (none) takes no positional parameter: it must take one,"
            " the ToolCall",
            id="no-parameter",
        ),
        pytest.param(
            two,
            "the handler of tool 'a' (two) needs more than the ToolCall (extra, without"
            " defaults): it gets only that",
            id="two-parameters",
        ),
        pytest.param(
            keyword,
            "the handler of tool 'a' (keyword) needs more than the ToolCall (must, without"
            " defaults)",
            id="keyword-only",
        ),
        pytest.param(
            Handlers,
            "the handler of tool 'a' (Handlers) is not async",  # the class, not an instance
            id="class",
        ),
        pytest.param(
            {"ok": True}, "the handler of tool 'a' (dict) is not callable (a dict)", id="data"
        ),
    ],
)
async def test_a_handler_that_cannot_be_called_so_is_refused_at_start_up(
    tmp_path: Path, handler: Any, message: str
) -> None:
    db = tmp_path / "embedded.db"
    mine = Toolset("mine", {"a": handler}, contract=None, tools=[spec("a", OBJECT)])
    with pytest.raises(ValueError, match=r"^toolset mine: ") as raised:
        async with open_server(Config(db=str(db)), toolsets=[mine], listen=False):
            pytest.fail("the server started with a handler it cannot call")
    assert message in str(raised.value)
    assert str(raised.value).endswith(SHAPE)
    assert not db.exists()


async def test_handlers_of_every_shape_the_server_can_await_are_served() -> None:
    handlers: dict[str, Any] = {
        "plain": ok,
        "method": Handlers().method,
        "object": Handlers(),
        "partial": functools.partial(two, extra="given"),
        "handing_over": handing_over,
        "wrapped": wrapped,
    }
    mine = Toolset("mine", handlers, contract=None, tools=[spec(name, OBJECT) for name in handlers])
    config = Config(db=":memory:")
    with trio.fail_after(30):
        async with (
            open_server(config, toolsets=[mine], listen=False) as server,
            server.client("/mcp/mine") as client,
        ):
            await client.initialize()
            results = {name: await client.call_tool(name) for name in handlers}
    structured = {name: result["structuredContent"] for name, result in results.items()}
    assert structured == {
        "plain": {"ok": True},
        "method": {"ok": "method"},
        "object": {"ok": "object"},
        "partial": {"extra": "given"},
        "handing_over": {"ok": True},
        "wrapped": {"ok": True},
    }


def two_positional(call: ToolCall, problems: Any) -> Any:
    """A sync stand-in, as a resource's read or a task must not be."""
    return None


async def read_with_extra(call: ToolCall, extra: int) -> Any:
    return extra


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda: Toolset("mine", {}, contract=None, completion=read_with_extra),
            "toolset mine: its completion (read_with_extra) needs more than the ToolCall"
            " (extra, without defaults)",
            id="completion",
        ),
        pytest.param(
            lambda: Toolset("mine", {}, contract=None, reject_call=ok),
            "toolset mine: its reject_call (ok) takes 1 positional parameters: it must take"
            " the ToolCall and the problems",
            id="reject-call",
        ),
        pytest.param(
            lambda: Toolset("mine", {}, contract=None, on_start=two_positional),
            # It suggested `-> Coroutine[Any, Any, dict[str, Any]]`, a handler's type.
            "toolset mine: its on_start (two_positional) is not async: declare it `async def`"
            " (the server awaits what it returns), or annotate the awaitable it returns"
            " (`-> Coroutine[Any, Any, None]`)",
            id="on-start",
        ),
        pytest.param(
            lambda: Toolset("mine", {}, contract=None, background=[ok, read_with_extra]),
            "toolset mine: its background task 1 (read_with_extra) needs more than the Runtime",
            id="background",
        ),
        pytest.param(
            lambda: Toolset("mine", {}, contract=None, resources=[resource("x://a", "a", sync)]),
            "resource 'x://a': its read function is not async",
            id="resource-read",
        ),
        pytest.param(
            lambda: Toolset(
                "mine", {}, contract=None, resources=[resource("x://a", "a", ok, check=none)]
            ),
            "resource 'x://a': its check function takes no positional parameter",
            id="resource-check",
        ),
    ],
)
async def test_a_hook_the_server_cannot_call_so_is_refused_at_start_up(
    tmp_path: Path, make: Any, message: str
) -> None:
    """Resources, completions, refusals by call, start and background hooks used to fail
    only when first called (a background task: logged, and the task gone)."""
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=re.escape(message)):
        async with open_server(Config(db=str(db)), toolsets=[make()], listen=False):
            pytest.fail("the server started with a hook it cannot call")
    assert not db.exists()


def test_every_built_in_handler_and_fixture_passes_the_check() -> None:
    toolsets = load_toolsets([], conformance=True)
    assert {t.name for t in toolsets} == {"chamber", "chess", "router", "debate", "conformance"}
    for toolset in toolsets:
        for name, handler in toolset.handlers.items():
            assert handler_problem(handler) is None, (toolset.name, name)
        assert hook_problems(toolset) == [], toolset.name


def test_every_built_in_tool_listing_passes_the_schema_check() -> None:
    """`schema_problem` runs at start for tools defined in code only: the contracts' tools
    are the build's own, so they are checked here, once."""
    from agora.mcp.contracts import load_contract

    checked = 0
    for toolset in load_toolsets([], conformance=True):
        if toolset.contract is None:
            listings = list(toolset.tools)
        else:
            contract = load_contract(toolset.contract or toolset.name)
            listings = [tool.to_mcp() for tool in contract.tools.values()]
        for listing in listings:
            assert schema_problem(listing) is None, (toolset.name, listing["name"])
            checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    ("toolsets", "message"),
    [
        pytest.param(
            [Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT)] * 2)],
            "toolset mine lists tool 'a' twice",
            id="one-tool-twice",
        ),
        pytest.param(
            [
                Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT)]),
                Toolset("mine", {"b": ok}, contract=None, tools=[spec("b", OBJECT)]),
            ],
            "two toolsets are named 'mine'",
            id="one-name-twice",
        ),
    ],
)
async def test_a_name_served_twice_is_refused(
    tmp_path: Path, toolsets: list[Toolset], message: str
) -> None:
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=message):
        async with open_server(Config(db=str(db)), toolsets=toolsets, listen=False):
            pytest.fail("the server started serving a name twice")
    assert not db.exists()


def _chess_table(db: Any) -> None:
    db.execute("CREATE TABLE mine_games (id TEXT PRIMARY KEY)")


@pytest.mark.parametrize("version", [1, 50])
async def test_a_migration_component_of_another_toolset_is_refused_before_the_store_opens(
    tmp_path: Path, version: int
) -> None:
    """Beside the built-in chess, a step named ``chess`` v1 used to be refused only once the
    database and its lock file existed, naming no toolset; ``chess`` v50 was applied and
    recorded as chess's version, and the next start with chess alone refused the database
    as newer than itself."""
    mine = Toolset(
        "mine",
        {"a": ok},
        contract=None,
        tools=[spec("a", OBJECT)],
        migrations=[Migration(component="chess", version=version, apply=_chess_table)],
    )
    db = tmp_path / "embedded.db"
    message = "migration component 'chess' is used by both toolset chess and toolset mine"
    with pytest.raises(ValueError, match=re.escape(message)):
        async with open_server(
            Config(db=str(db)), toolsets=[*load_toolsets(["chess"]), mine], listen=False
        ):
            pytest.fail("the server started with a migration component of chess's")
    assert not db.exists()
    assert not (tmp_path / "embedded.db.lock").exists()


@pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning")
@pytest.mark.parametrize(
    "returned", [pytest.param([1, 2], id="list"), pytest.param(None, id="none")]
)
async def test_a_handler_that_returns_no_dict_fails_naming_what_it_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, returned: Any
) -> None:
    mcp = pytest.importorskip(
        "mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')"
    )

    async def wrong(call: ToolCall) -> Any:
        return returned

    mine = Toolset("mine", {"wrong": wrong}, contract=None, tools=[spec("wrong", OBJECT)])
    config = Config(port=0, db=str(tmp_path / "embedded.db"))
    with trio.fail_after(30):
        async with (
            open_server(config, toolsets=[mine]) as server,
            mcp.Client(f"{server.url}/mcp/mine", read_timeout_seconds=30) as client,
        ):
            with pytest.raises(mcp.MCPError, match="internal error"):
                await client.call_tool("wrong", {})
    failed = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert f"not {type(returned).__name__}" in str(failed[0].exc_info[1])


async def test_two_steps_of_one_version_in_a_toolset_are_refused_before_the_store_opens(
    tmp_path: Path,
) -> None:
    """The store refused them too, but only once the database and its lock file existed."""
    steps = [Migration(component="mine", version=1, apply=_chess_table)] * 2
    mine = Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT)], migrations=steps)
    db = tmp_path / "embedded.db"
    message = "toolset mine has two migration steps mine v1"
    with pytest.raises(ValueError, match=re.escape(message)):
        async with open_server(Config(db=str(db)), toolsets=[mine], listen=False):
            pytest.fail("the server started with one version taken twice")
    assert not db.exists()
    assert not (tmp_path / "embedded.db.lock").exists()
