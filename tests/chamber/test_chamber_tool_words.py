"""What a model reads in the chamber's tools/list: every argument described, no tool invented.

A tester found 22 arguments of the five chamber tools with no description (what `origin`,
`preflight`, `product_plan` or `chamber_action.value` should hold could not be told), and
`enter_open_challenge` naming a `list_suites` tool that does not exist. The words are served
by `agora.toolsets.chamber.served`; they are annotations, so what validates is the contract's.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp.contracts import load_contract
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

GUARD = 20


@pytest.fixture
async def listed() -> dict[str, dict[str, Any]]:
    """The chamber's tools as the official SDK lists them from a server on loopback."""
    config = Config(
        host="127.0.0.1",
        port=0,
        db=":memory:",
        toolsets=["chamber"],
        options={"chamber": {"room_pool_size": 0}},
    )
    with trio.fail_after(GUARD):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/chamber", read_timeout_seconds=GUARD) as client,
        ):
            tools = (await client.list_tools()).tools
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in tools}


def undescribed(schema: dict[str, Any], at: str = "") -> list[str]:
    """The properties of ``schema``, at any depth, that have no description."""
    missing = []
    for name, sub in schema.get("properties", {}).items():
        if not sub.get("description", "").strip():
            missing.append(f"{at}{name}")
        missing += undescribed(sub, f"{at}{name}.")
    return missing


def without_descriptions(schema: Any) -> Any:
    """``schema`` with every property's ``description`` removed."""
    if isinstance(schema, dict):
        return {
            k: without_descriptions(v)
            for k, v in schema.items()
            if not (k == "description" and isinstance(v, str))
        }
    return schema


async def test_every_argument_of_every_chamber_tool_is_described(listed):
    assert len(listed) == 5
    missing = {name: undescribed(tool["inputSchema"]) for name, tool in listed.items()}
    assert missing == {name: [] for name in listed}


async def test_enter_names_only_tools_and_arguments_that_exist(listed):
    contract = load_contract("chamber")
    enter = listed["enter_open_challenge"]
    known = {*listed, *contract.aliases, *enter["inputSchema"]["properties"]}
    named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", enter["description"]))
    assert named <= known, named - known
    assert "list_suites" not in enter["description"]
    assert "values of the suite argument" in enter["description"]
    assert set(enter["inputSchema"]["properties"]["suite"]["enum"]) == {
        s["id"] for s in contract.data["document"]["suites"] if s["status"] == "active"
    }


def test_the_served_schemas_validate_what_the_contracts_do():
    from agora.toolsets.chamber.served import DESCRIPTIONS, served_tools

    contract = load_contract("chamber")
    before = copy.deepcopy(contract.data["tools"])
    served = served_tools(contract)
    assert contract.data["tools"] == before  # the contract's copy is left alone
    for entry, spec in zip(served, contract.tools.values(), strict=True):
        assert entry["name"] == spec.name
        assert without_descriptions(entry["inputSchema"]) == without_descriptions(
            dict(spec.input_schema)
        )
        assert entry["outputSchema"] == spec.output_schema
        assert entry["annotations"] == spec.annotations
        # The seed's own words are kept, but include_export_bundle's, which say nothing.
        reworded = DESCRIPTIONS.get(spec.name, {})
        for name, prop in spec.input_schema["properties"].items():
            if "description" in prop and name not in reworded:
                assert (
                    entry["inputSchema"]["properties"][name]["description"] == (prop["description"])
                )


def test_a_contract_without_a_reworded_sentence_is_refused():
    from agora.toolsets.chamber.served import served_tools

    contract = load_contract("chamber")
    spec = dataclasses.replace(contract.tools["enter_open_challenge"], description="Enter.")
    other = dataclasses.replace(contract, tools={**contract.tools, spec.name: spec})
    with pytest.raises(ValueError, match="enter_open_challenge no longer says"):
        served_tools(other)


async def test_help_seed_and_export_bundle_say_what_they_give(listed):
    """A tester read that the ally "receives a new seed" (it gets an invitation), could not
    tell what the export bundle is, nor that a call for help is free or that inv- strings are
    always read as invitations."""
    help_ = listed["call_for_help"]["description"]
    assert "seed." not in help_
    assert "receives a new seed" not in help_
    assert "an invitation (inv-...), never a seed" in help_
    assert "A call for help costs no action." in help_
    seed = listed["enter_open_challenge"]["inputSchema"]["properties"]["seed"]["description"]
    assert "any string starting with inv- is read as an invitation" in seed
    assert "one this server did not issue is refused" in seed
    seal = listed["seal_attempt"]["inputSchema"]["properties"]
    bundle = seal["include_export_bundle"]["description"]
    for words in ("the card document", "transcript", "agora cards verify"):
        assert words in bundle, words


def test_a_contract_without_a_described_argument_is_refused():
    from agora.toolsets.chamber.served import served_tools

    contract = load_contract("chamber")
    spec = contract.tools["enter_open_challenge"]
    schema = copy.deepcopy(dict(spec.input_schema))
    del schema["properties"]["preflight"]["properties"]["tools_visible"]
    spec = dataclasses.replace(spec, input_schema=schema)
    other = dataclasses.replace(contract, tools={**contract.tools, spec.name: spec})
    with pytest.raises(ValueError, match=r"enter_open_challenge has no argument 'preflight\.tools"):
        served_tools(other)


def test_described_arguments_keep_the_contract_s_words_only_when_asked():
    from agora.toolsets.wording import describe_arguments

    def entry():
        inner = {"type": "object", "properties": {"b": {"type": "string"}}}
        said = {"type": "string", "description": "the contract's"}
        return {"name": "t", "inputSchema": {"properties": {"a": inner, "c": said}}}

    texts = {"a.b": "nested", "c": "ours"}
    kept, replaced = entry(), entry()
    describe_arguments(kept, texts, "x", keep=True)
    describe_arguments(replaced, texts, "x")
    assert kept["inputSchema"]["properties"]["a"]["properties"]["b"]["description"] == "nested"
    assert kept["inputSchema"]["properties"]["c"]["description"] == "the contract's"
    assert replaced["inputSchema"]["properties"]["c"]["description"] == "ours"
