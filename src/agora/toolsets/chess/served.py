"""The chess tools as tools/list serves them: the contract's, with one first call.

The seed gives two tools a "start" sentence: ``wait_for_turn`` says "START HERE" and
``join_game`` "Discover the collaboration contract and announce agent presence", so a model
could not tell which to call first. The collaboration contract and the endpoint's
instructions start with ``wait_for_turn``; `TOOLS` says ``join_game`` is optional and not
the first call. Schemas are served as the contract has them.
"""

from __future__ import annotations

from typing import Any, Final

from agora.mcp.contracts import load_contract
from agora.toolsets.wording import reworded_tools

#: Tool -> sentence of its contract description -> what is served instead.
REWORDED: Final = {
    "join_game": {
        "Discover the collaboration contract and announce agent presence.": (
            "Optional, and not the first call (start with wait_for_turn): read the "
            "collaboration contract (roles, turn loop, draw convention) with the board."
        ),
    },
}


def served_tools() -> list[dict[str, Any]]:
    """The tools/list entries of contracts/chess.json, with `REWORDED` applied."""
    return reworded_tools(load_contract("chess"), REWORDED)
