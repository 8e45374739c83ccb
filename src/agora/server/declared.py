"""The tools a toolset declares, by name: from its packaged contract or from `Toolset.tools`.

Part of the start-up checks of `agora.server.entries`: a toolset defined in code whose
``tools`` is not a list of tools/list entries (a dict keyed by name, say), or whose entries
lack a name, or a tool name outside what MCP allows, is refused here with a `ValueError`
naming the toolset (and the tool), before anything opens. Nothing here touches the store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agora.mcp.contracts import Contract
    from agora.toolsets.base import Toolset

#: A tool name as MCP's specification asks: 1-128 ASCII letters, digits, ``_``, ``-``, ``.``.
TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def contract_of(toolset: Toolset) -> Contract:
    """The packaged contract ``toolset`` names (its own name unless it says another).

    Raises:
        ContractError: it is malformed, or none is packaged (`NoContract`): then naming the
            toolset and saying that a toolset defined in code needs ``contract=None``.
    """
    from agora.mcp.contracts import NoContract, load_contract

    try:
        return load_contract(toolset.contract or toolset.name)
    except NoContract as exc:
        raise NoContract(
            f"toolset {toolset.name}: {exc}; a toolset defined in code has no contract file:"
            " give it `contract=None` and list its tools in `tools=[...]`"
        ) from None


def tools_in_code(toolset: Toolset) -> Sequence[dict[str, Any]]:
    """``toolset.tools``, checked to be a list of tools/list entries, each named.

    Raises:
        ValueError: ``tools`` is not a sequence (a list, a tuple), or an entry is not a dict with a
            ``name`` (naming the toolset, what was expected and what was given).
    """
    tools: object = toolset.tools  # declared a Sequence; an embedder's may be anything
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        hint = "; list the dict's values" if isinstance(tools, Mapping) else ""
        raise ValueError(
            f"toolset {toolset.name}: tools must be a list of tools/list entries (dicts with"
            f" name, description and inputSchema), not {type(tools).__name__}{hint}"
        )
    for i, spec in enumerate(tools):
        if not isinstance(spec, dict):
            raise ValueError(
                f"toolset {toolset.name}: tools[{i}] must be a tools/list entry (a dict with"
                f" name, description and inputSchema), not {type(spec).__name__}"
            )
        if not isinstance(spec.get("name"), str):
            raise ValueError(f"toolset {toolset.name}: tools[{i}] has no name (a str)")
    return toolset.tools


def tool_names(toolset: Toolset) -> list[str]:
    """Every tool name ``toolset`` serves, canonical names and aliases.

    Raises:
        ValueError: see `tools_in_code`; or a name MCP does not allow (`TOOL_NAME`),
            naming the toolset and the tool.
    """
    if toolset.contract is None:
        names = [spec["name"] for spec in tools_in_code(toolset)]
        for alias, canonical in toolset.aliases.items():
            if canonical not in names:
                raise ValueError(
                    f"toolset {toolset.name}: alias {alias!r} names {canonical!r},"
                    " which none of its tools is named"
                )
        names += list(toolset.aliases)
    else:
        contract = contract_of(toolset)
        names = [name for tool in contract.tools.values() for name in (tool.name, *tool.aliases)]
    for name in names:
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(
                f"toolset {toolset.name}: tool name {name!r} is not one MCP allows: use 1-128"
                " ASCII letters, digits, _, - and . (no spaces)"
            )
    return names
