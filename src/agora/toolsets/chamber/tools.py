"""The chamber's tool table: every canonical tool name and alias of the contract -> its handler.

This module maps names to the `service.Chamber` handlers and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.toolsets.base import Handler
    from agora.toolsets.chamber.service import Chamber


def handlers(chamber: Chamber) -> dict[str, Handler]:
    """Canonical names and aliases of ``chamber.contract`` -> handlers.

    Raises:
        KeyError: if the contract names a tool this toolset does not implement.
    """
    canonical: dict[str, Handler] = {
        "enter_open_challenge": chamber.enter,
        "observe_chamber": chamber.observe,
        "chamber_action": chamber.act,
        "call_for_help": chamber.call_for_help,
        "seal_attempt": chamber.seal,
    }
    table = {name: canonical[name] for name in chamber.contract.tool_names}
    for alias, name in chamber.contract.aliases.items():
        table[alias] = canonical[name]
    return table
