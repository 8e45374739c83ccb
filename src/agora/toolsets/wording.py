"""A contract's tools as a toolset serves them, with sentences of their descriptions reworded.

The contract files hold the seeds' words verbatim; a toolset whose seed misleads a model
(a tool that does not exist, two tools that both say to start with them) serves other words
in their place. Only descriptions change here: schemas and annotations are the contract's.
This module must hold no state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.mcp.contracts import Contract


def reworded_tools(
    contract: Contract, reworded: Mapping[str, Mapping[str, str]]
) -> list[dict[str, Any]]:
    """The tools/list entries of ``contract``'s canonical tools, each sentence of
    ``reworded[tool]`` (contract words -> served words) replaced in its description.

    Raises:
        ValueError: if a sentence to reword is not in the description (a new contract needs
            its words reviewed), naming the toolset and the tool.
    """
    tools = []
    for spec in contract.tools.values():
        entry = spec.to_mcp()
        for old, new in reworded.get(spec.name, {}).items():
            if old not in entry["description"]:
                raise ValueError(
                    f"contract {contract.toolset}: the description of {spec.name} no longer"
                    f" says {old!r}"
                )
            entry["description"] = entry["description"].replace(old, new)
        tools.append(entry)
    return tools
