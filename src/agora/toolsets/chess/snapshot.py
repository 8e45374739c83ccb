"""`Snapshot`: the immutable view of a chess table that every reply and page is built from.

`agora.toolsets.chess.table.ChessTable.snapshot` makes one per table version; the replies,
the page, the PGN and the waiters only read it. Pure data: no I/O, no trio.
"""

from __future__ import annotations

from typing import Final

import msgspec

from agora.toolsets.chess.game import PastGame, PlayedMove, Result
from agora.toolsets.chess.terms import AgentAbsence, ColorName, Phase, Role

#: How long after its last call with the agent token an agent still counts as present (the
#: page's "An agent has joined this table."). Longer than the longest ``wait_for_turn`` (55 s), so a
#: parked wait keeps the agent present while it is parked.
AGENT_FRESH_SECONDS: Final = 120.0


class Snapshot(msgspec.Struct, frozen=True):
    """An immutable view of a table after a command: all a reply or a page needs."""

    table: str
    version: int
    game_number: int
    fen: str
    phase: Phase
    agent_color: ColorName | None
    moves: tuple[PlayedMove, ...]
    draw_offer: Role | None
    result: Result | None
    #: An agent called with this table's agent token within `AGENT_FRESH_SECONDS` (any tool,
    #: in this server process: a restart starts with no agent seen).
    agent_present: bool
    #: The agent's credential: for the human's page only, never in an agent reply or a
    #: spectator's view.
    agent_token: str
    #: The ply of the move that declined the last pending draw offer (`Game.declined_ply`).
    declined_ply: int | None = None
    #: The moves played at each of the human's draw offers (`Game.human_offers`).
    human_offers: tuple[int, ...] = ()
    #: The agent's moves that did not answer the human's offer: it had not been shown it
    #: (`Game.unseen_plies`).
    unseen_plies: tuple[int, ...] = ()
    #: The human has come to the table in this server process: a page with the human token
    #: connected, or the human acted.
    human_came: bool = False
    #: A page with the human token has its live stream open now.
    human_connected: bool = False
    #: When the human's last open page closed (ISO 8601), while none is open; None when one
    #: is, or none closed since the server started.
    human_left_at: str | None = None
    #: The agent's last move let the human's offer stand (`unseen_plies`) because the server
    #: restarted since the offer and cannot tell whether a reply had shown it to the agent.
    offer_sight_unknown: bool = False
    #: Why no agent is present (None while one is): none has called with the agent token
    #: since it was issued ("token"), since the server started ("restart": presence is kept
    #: in memory), or within `AGENT_FRESH_SECONDS` ("stale").
    agent_absence: AgentAbsence | None = None
    #: Only in the reply to the seated agent's first call since the human replaced the game
    #: it last saw unfinished: how that game ended (`ChessTable.handle`).
    missed: PastGame | None = None
    #: More than one connection holds the agent's seat: a stale move found another
    #: connection's move within `AGENT_FRESH_SECONDS` (`AgentSessions.shared`); any may move.
    agent_shared: bool = False
