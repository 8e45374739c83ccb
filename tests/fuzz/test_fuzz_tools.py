"""Hostile input against every served tool of all four toolsets (chess, chamber, router, debate).

The tools and their schemas come from the live server's catalog (``/mcp``), never from a
hand-written list, so a tool added tomorrow is fuzzed tomorrow. Three tests share one server
and one pool of harvested ids: calls shaped by each inputSchema (they reach real entities
and must answer within the outputSchema), the same calls mutated (wrong types, boundary
lengths, unicode edge cases, lone surrogates, deep nesting, huge numbers, null bytes,
duplicate keys), and mutations of the JSON-RPC envelope around them. `fuzz_oracle.Oracle`
states the properties. The server must still answer a ping at the end of each test.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from fuzz_oracle import Oracle
from fuzz_schemas import RAW_EDGES, Raw, arguments, dumps, mutated
from fuzz_settings import EXAMPLES, FUZZ
from hypothesis import given, settings
from hypothesis import strategies as st

from agora.mcp.contracts import load_contract
from agora.server.app import tool_names

if TYPE_CHECKING:
    from fuzz_live import LiveServer

    from agora.mcp.catalog import ToolEntry

POOL: list[str] = []
TOOLSETS = {"chess", "chamber", "router", "debate"}


@pytest.fixture(scope="module")
def tools(live: LiveServer) -> list[ToolEntry]:
    assert live.session is not None
    catalog = live.session.app.endpoint("/mcp").catalog  # type: ignore[union-attr]
    listed = catalog.listed_tools()
    names = {t.name for t in listed}
    served = {name for name, ts in live.session.app.toolsets.items() if set(tool_names(ts)) & names}
    assert served == TOOLSETS, f"the fuzzer must see all four toolsets, saw {served}"
    return listed


@pytest.fixture(scope="module")
def oracle(live: LiveServer) -> Oracle:
    session = live.session
    assert session is not None
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    }
    reply = live.call(_message(0, "initialize", init), 0)
    assert reply is not None
    assert "result" in reply, reply
    live.call(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', "none")
    return Oracle(live, POOL)


_STRATEGIES: dict[tuple[Any, str], st.SearchStrategy[Any]] = {}


def _strategy(kind: Any, tool: ToolEntry) -> st.SearchStrategy[Any]:
    """``kind(schema, POOL)`` for ``tool``, built once (hypothesis validates a strategy the
    first time it draws from it, which costs more than the draw)."""
    key = (kind, tool.name)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = kind(tool.input_schema, POOL)
    return _STRATEGIES[key]


def _message(rid: Any, method: str, params: Any) -> bytes:
    head = f'{{"jsonrpc":"2.0","id":{dumps(rid)},"method":"{method}",'
    return f'{head}"params":{dumps(params)}}}'.encode()


def _call(live: LiveServer, oracle: Oracle, tool: ToolEntry, args: Any) -> None:
    assert live.session is not None
    rid = live.session.next_id()
    data = _message(rid, "tools/call", {"name": tool.name, "arguments": args})
    oracle.check(tool, data, live.call(data, rid))


def _still_up(live: LiveServer) -> None:
    assert live.session is not None
    rid = live.session.next_id()
    reply = live.call(_message(rid, "ping", {}), rid)
    assert reply == {"jsonrpc": "2.0", "id": rid, "result": {}}


def test_schema_shaped_calls(live, tools, oracle):
    @FUZZ
    @given(st.data())
    def run(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(tools))
        _call(live, oracle, tool, data.draw(_strategy(arguments, tool)))

    run()
    _still_up(live)
    assert oracle.cases >= min(EXAMPLES, 100)
    _refusals_described(live, oracle)


def _refusals_described(live: LiveServer, oracle: Oracle) -> None:
    """Every isError body so far of chess, chamber and debate fit its tool's outputSchema.

    The router is exempt on purpose: its schemas must stay exactly the seed's, and its
    isError bodies fall outside them (the SDK never validates an isError body).
    """
    assert live.session is not None
    toolsets = live.session.app.toolsets
    strict = ("chess", "chamber", "debate")
    described = {n for name in strict for n in tool_names(toolsets[name])}
    loose = {t: why for t, why in oracle.loose_errors.items() if t in described}
    assert not loose, loose


def test_mutated_calls(live, tools, oracle):
    @FUZZ
    @given(st.data())
    def run(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(tools))
        _call(live, oracle, tool, data.draw(_strategy(mutated, tool)))

    run()
    _still_up(live)
    _refusals_described(live, oracle)


_ENVELOPE = [
    lambda name, args: {"name": name},  # arguments missing
    lambda name, args: {"name": name, "arguments": None},
    lambda name, args: {"name": name, "arguments": [args]},
    lambda name, args: {"name": [name], "arguments": args},
    lambda name, args: {"name": name + "\x00", "arguments": args},
    lambda name, args: {"name": name.upper(), "arguments": args},
    lambda name, args: {"name": name, "arguments": args, "_meta": {"progressToken": [1]}},
    lambda name, args: {"name": name, "arguments": args, "_meta": Raw(RAW_EDGES[0])},
    lambda name, args: {"arguments": args},
]


@pytest.mark.parametrize("rid", [7, "s-id", 2**62, Raw('"\\ud800"')], ids=str)
def test_mutated_envelopes(live, tools, oracle, rid):
    @settings(FUZZ, max_examples=max(1, EXAMPLES // 4))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(tools))
        args = data.draw(_strategy(arguments, tool))
        params = data.draw(st.sampled_from(_ENVELOPE))(tool.name, args)
        sent = _message(rid, "tools/call", params)
        reply_id = json.loads(str(rid)) if isinstance(rid, Raw) else rid
        oracle.check(tool, sent, live.call(sent, reply_id, dumps(rid)))

    run()
    _still_up(live)


#: Shaped and mutated calls each tool gets in `test_every_tool_is_fuzzed`, whatever the
#: random draws of the other tests picked (59 tools: a small seed misses some of them).
PER_TOOL = max(2, EXAMPLES // 40)


def _fuzz_one(live: LiveServer, oracle: Oracle, tool: ToolEntry, kind: Any) -> int:
    """Up to `PER_TOOL` calls of ``tool`` drawn by ``kind`` (fewer when its arguments have
    fewer distinct values); how many were made."""
    made = [0]

    @settings(FUZZ, max_examples=PER_TOOL)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _call(live, oracle, tool, data.draw(_strategy(kind, tool)))
        made[0] += 1

    run()
    return made[0]


def test_every_tool_is_fuzzed(live, tools, oracle):
    skipped = [
        (tool.name, kind.__name__)
        for tool in tools
        for kind in (arguments, mutated)
        if not _fuzz_one(live, oracle, tool, kind)
    ]
    assert not skipped, skipped
    _still_up(live)
    _refusals_described(live, oracle)
    assert live.session is not None
    toolsets = live.session.app.toolsets
    listed = {tool.name for tool in tools}
    for name in ("router", "debate", "chess", "chamber"):
        missed = _canonical(toolsets[name]) - listed
        assert not missed, f"{name} tools not in the catalog the fuzzer calls: {sorted(missed)}"


def _canonical(toolset: Any) -> set[str]:
    """Every tool ``toolset`` serves under its own name (aliases are the same tools)."""
    if toolset.contract is None:
        return {spec["name"] for spec in toolset.tools}
    contract = load_contract(toolset.contract or toolset.name)
    return {tool.name for tool in contract.tools.values()}
