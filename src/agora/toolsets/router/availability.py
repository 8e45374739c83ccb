"""What tools/list says first of a router tool that cannot run on this server as configured.

All 20 tools of the contract are listed (README), but 13 of them can do nothing on a server
with no options: the verified-host tools never run here, the evaluation tools need
``[options.router.adapter]`` and the Memory tools ``[options.router] memory_policy``. A
model read their descriptions (some 12k tokens in every chat) and learnt it only by calling
them. So the description of each such tool starts by saying so, with the setting it needs
(the router's `Toolset.describe`, computed once at start from ``[options.router]``, which
is fixed for the server's life); a tool that can run keeps its description as served.

A ``memory_policy`` that names no file yet is set: the file may be written after the start
(a warning at start says so), and ``get_memory_status`` then says why Memory is off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router.bounds import ADAPTER_TOOLS, NEVER_HERE
from agora.toolsets.router.described import MEMORY

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

#: What a verified-host tool's description starts with, always.
NEVER: Final = (
    "Unavailable on agora: needs a verified host's authority (Codex's), which no client of"
    " this server has, so every call answers capability-unavailable whatever its arguments."
)

#: What an evaluation tool's description starts with when no adapter is configured.
NO_ADAPTER: Final = (
    "Unavailable on this server: needs an evaluation adapter, which only the server's"
    " operator can configure ([options.router.adapter] in agora.toml), and none is, so every"
    " call answers capability-unavailable whatever its arguments."
)

#: What a Memory tool's description starts with when no Memory policy is configured.
MEMORY_OFF: Final = (
    "Memory is off on this server: [options.router] memory_policy (the Memory policy file,"
    " which only the server's operator can set, in agora.toml) is not set, so no run is"
    " remembered and no candidate or Profile update is made."
)


def unavailable(options: Mapping[str, Any]) -> dict[str, str]:
    """Tool -> why it cannot run on a server with ``options`` (``[options.router]``), for
    each tool that cannot."""
    why = dict.fromkeys(sorted(NEVER_HERE), NEVER)
    if not options.get("adapter"):
        why |= dict.fromkeys(sorted(ADAPTER_TOOLS), NO_ADAPTER)
    if not options.get("memory_policy"):
        why |= dict.fromkeys(sorted(MEMORY), MEMORY_OFF)
    return why


def describing(
    served: Sequence[Mapping[str, Any]],
) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    """The router's `Toolset.describe` for its ``served`` tools/list entries: under
    ``[options.router]``, each tool that cannot run has its description after `unavailable`'s
    sentence."""
    descriptions = {tool["name"]: tool["description"] for tool in served}

    def describe(options: Mapping[str, Any]) -> dict[str, str]:
        return {name: f"{why} {descriptions[name]}" for name, why in unavailable(options).items()}

    return describe
