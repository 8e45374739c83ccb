"""A contract's tools as a toolset serves them: sentences of their descriptions reworded,
descriptions added to the arguments the contract leaves bare.

The contract files hold the seeds' words verbatim; a toolset whose seed misleads a model
(a tool that does not exist, two tools that both say to start with them) serves other words
in their place, and one whose arguments are bare enums and patterns says what they are for.
Only descriptions change here: schemas and annotations are the contract's, and validation is
unchanged. This module must hold no state.
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


def describe_arguments(
    entry: dict[str, Any],
    texts: Mapping[str, str],
    toolset: str,
    *,
    keep: bool = False,
    append: bool = False,
) -> None:
    """Set, in the tools/list ``entry`` (a copy the caller may change), the description of
    each argument ``texts`` names: a dotted path (``preflight.tools_visible`` is a field of
    the object argument ``preflight``) -> its description.

    Args:
        keep: a description the contract gives stays (only bare arguments get one).
        append: the text follows the description the contract gives (if any).

    Raises:
        ValueError: if the schema has no argument at a path (a new contract needs its words
            reviewed), naming the toolset, the tool and the path.
    """
    for path, text in texts.items():
        schema = entry["inputSchema"]
        for name in path.split("."):
            properties = schema.get("properties", {})
            if name not in properties:
                raise ValueError(f"{toolset}: {entry['name']} has no argument {path!r}")
            schema = properties[name]
        said = schema.get("description")
        if append and said:
            schema["description"] = f"{said} {text}"
        elif not (keep and said):
            schema["description"] = text
