"""Tool contracts as immutable objects: what tools/list shows and what each call is checked against.

A contract file (``agora/contracts/<toolset>.json``, written by ``scripts/extract_contracts.py``
from the seed documents) becomes a `Contract`: the toolset's canonical tools as `ToolSpec` objects
in seed order, and an alias map so a retired name still reaches its canonical tool. Aliases are
never listed; they are only resolved.

This module is sans-io apart from reading packaged data: it must not import trio, compile
validators (see `agora.mcp.validation`) or know about toolset behaviour.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agora.errors import AgoraError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Contract", "ContractError", "ToolSpec", "load_contract", "parse_contract"]

#: Contract file format this module reads (the envelope's ``format``).
FORMAT = 1
_TOOL_KEYS = frozenset(
    {"name", "description", "inputSchema", "outputSchema", "aliases", "annotations", "x-agora"}
)


class ContractError(AgoraError, ValueError):
    """A contract is missing or malformed; raised at load time, never per request."""


class NoContract(ContractError):
    """No contract of that name is packaged."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One canonical tool of a contract.

    The schema mappings are shared with the loaded contract: treat them as read-only
    (`to_mcp` hands out copies).

    Attributes:
        name: Canonical tool name.
        description: Description shown to the model.
        input_schema: JSON Schema of ``arguments``.
        output_schema: JSON Schema of ``structuredContent``, or None when the tool has none.
        annotations: MCP tool annotations (``readOnlyHint``, ``idempotentHint``, ...).
        aliases: Other names the tool answers to, not listed in tools/list.
        extra: Toolset-specific facts from the contract's ``x-agora`` object (the router's
            availability, risk and fallback; the chamber's purpose; the chess kind).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_mcp(self) -> dict[str, Any]:
        """Return this tool as a tools/list entry (a fresh copy the caller may change).

        Returns:
            ``{"name", "description", "inputSchema"}`` plus ``outputSchema`` and
            ``annotations`` when the contract has them.
        """
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": copy.deepcopy(dict(self.input_schema)),
        }
        if self.output_schema is not None:
            entry["outputSchema"] = copy.deepcopy(dict(self.output_schema))
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        return entry


@dataclass(frozen=True, slots=True)
class Contract:
    """All tools of one toolset, as extracted from its seed.

    Attributes:
        toolset: Toolset name (``chamber``, ``chess``, ``router``, ...).
        contract_id: Identifier of the contract version, e.g. ``scoreia-chamber-tools/0.3.0``.
        tools: Canonical name -> tool, in the contract's order.
        aliases: Alias name -> canonical name.
        data: The whole contract file, for toolset-level facts (the chamber's ``document``,
            the router's ``availability_classes``). Read-only.
    """

    toolset: str
    contract_id: str
    tools: Mapping[str, ToolSpec]
    aliases: Mapping[str, str]
    data: Mapping[str, Any]

    def resolve(self, name: str) -> ToolSpec | None:
        """Find the tool a client means by ``name``.

        Args:
            name: A canonical tool name or an alias.

        Returns:
            The canonical tool, or None if the name is unknown to this contract.
        """
        tool = self.tools.get(name)
        if tool is None and name in self.aliases:
            tool = self.tools[self.aliases[name]]
        return tool

    def is_alias(self, name: str) -> bool:
        """Whether ``name`` is an alias rather than a canonical name."""
        return name in self.aliases

    def tools_list(self) -> list[dict[str, Any]]:
        """Return the tools/list entries of the canonical tools, in contract order."""
        return [tool.to_mcp() for tool in self.tools.values()]


def _require(condition: bool, toolset: str, problem: str) -> None:
    if not condition:
        raise ContractError(f"contract {toolset!r}: {problem}")


def _parse_tool(toolset: str, raw: Any) -> ToolSpec:
    _require(isinstance(raw, dict), toolset, "a tool entry is not an object")
    name = raw.get("name")
    _require(isinstance(name, str) and bool(name), toolset, "a tool has no name")
    unknown = set(raw) - _TOOL_KEYS
    _require(not unknown, toolset, f"tool {name!r} has unknown keys {sorted(unknown)}")
    _require(isinstance(raw.get("description"), str), toolset, f"tool {name!r}: no description")
    for key in ("inputSchema", "outputSchema"):
        schema = raw.get(key, {})
        _require(isinstance(schema, dict), toolset, f"tool {name!r}: {key} is not an object")
        _require(schema.get("type", "object") == "object", toolset, f"{name!r}: {key} type")
    _require("inputSchema" in raw, toolset, f"tool {name!r}: no inputSchema")
    aliases = raw.get("aliases", [])
    _require(
        isinstance(aliases, list) and all(isinstance(a, str) for a in aliases),
        toolset,
        f"tool {name!r}: aliases must be a list of names",
    )
    return ToolSpec(
        name=name,
        description=raw["description"],
        input_schema=raw["inputSchema"],
        output_schema=raw.get("outputSchema"),
        annotations=raw.get("annotations", {}),
        aliases=tuple(aliases),
        extra=raw.get("x-agora", {}),
    )


def parse_contract(data: Mapping[str, Any]) -> Contract:
    """Build a `Contract` from the decoded JSON of a contract file.

    Args:
        data: The decoded contract envelope.

    Returns:
        The contract, with tools keyed by canonical name.

    Raises:
        ContractError: The envelope is malformed, a name is used twice, or an alias points
            at no canonical tool.
    """
    toolset = data.get("toolset")
    if not isinstance(toolset, str) or not toolset:
        raise ContractError("contract without a toolset name")
    _require(data.get("format") == FORMAT, toolset, f"format {data.get('format')!r} != {FORMAT}")
    _require(isinstance(data.get("tools"), list), toolset, "no tools list")
    tools: dict[str, ToolSpec] = {}
    for raw in data["tools"]:
        tool = _parse_tool(toolset, raw)
        _require(tool.name not in tools, toolset, f"tool {tool.name!r} listed twice")
        tools[tool.name] = tool
    aliases = {alias: tool.name for tool in tools.values() for alias in tool.aliases}
    declared = data.get("aliases", {})
    _require(isinstance(declared, dict), toolset, "aliases must be an object")
    for alias, target in declared.items():
        _require(target in tools, toolset, f"alias {alias!r} points at unknown tool {target!r}")
        _require(aliases.setdefault(alias, target) == target, toolset, f"alias {alias!r} twice")
    clashes = sorted(set(aliases) & set(tools))
    _require(not clashes, toolset, f"aliases shadow canonical names: {clashes}")
    contract_id = data.get("contract_id")
    _require(isinstance(contract_id, str), toolset, "no contract_id")
    return Contract(toolset, str(contract_id), tools, aliases, data)


@functools.cache
def load_contract(name: str) -> Contract:
    """Load the packaged contract of one toolset (read once per process, then cached).

    Args:
        name: Toolset name; the file read is ``agora/contracts/<name>.json``.

    Returns:
        The parsed contract.

    Raises:
        ContractError: No such contract is packaged (`NoContract`), or it is malformed.
    """
    if not name.isidentifier():
        raise ContractError(f"not a toolset name: {name!r}")
    resource = importlib.resources.files("agora") / "contracts" / f"{name}.json"
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NoContract(f"no contract named {name!r} is packaged") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ContractError(f"contract {name!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ContractError(f"contract {name!r} is not a JSON object")
    contract = parse_contract(data)
    if contract.toolset != name:
        raise ContractError(f"contracts/{name}.json declares toolset {contract.toolset!r}")
    return contract
