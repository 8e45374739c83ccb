"""When a ``wait_for_turn`` long-poll may answer: `WaitCondition`, judged on table snapshots.

Pure: it reads `Snapshot` values and keeps only the first one it saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.toolsets.chess.snapshot import Snapshot


@dataclass
class WaitCondition:
    """When ``wait_for_turn`` may answer, judged against the first snapshot it saw.

    For the seated agent it answers at once on the agent's turn or a finished game, and
    when the sides are still open, unless ``wait_for_human`` asks to wait for the human: for
    the side choice, or, on a finished game, for the human to start the next one. A call that
    gives ``timeout_ms`` (``patient``) asks to wait too: it waits for the side choice as
    ``wait_for_human`` does (only a bare call, the bootstrap, answers the open sides at once).
    Otherwise it answers when the sides get chosen (if they were open) or a new game replaces
    the one it started on. A watcher (no agent token) has no turn to wait for: it is answered
    at the next change of the game (a move, a side choice, an offer, a result, a new game), not
    of the seat's token or the agent's presence.
    """

    wait_for_human: bool
    watching: bool = False
    patient: bool = False
    first: Snapshot | None = None

    def __call__(self, snap: Snapshot) -> bool:
        """Whether the wait is over at ``snap``."""
        if self.first is None:
            self.first = snap
        if self.watching:  # the game as a watcher sees it, not the seat's token or presence
            return _game_view(snap) != _game_view(self.first)
        if snap.game_number != self.first.game_number or snap.phase == "agent_turn":
            return True
        if snap.phase == "over":
            return not (self.wait_for_human and self.first.phase == "over")
        if snap.phase == "side_choice":
            return not self.for_sides
        return self.first.phase == "side_choice"

    @property
    def for_sides(self) -> bool:
        """Whether the wait waits for the human's side choice (else it answers it at once)."""
        return self.wait_for_human or self.patient


def _game_view(snap: Snapshot) -> tuple[object, ...]:
    """What a watcher's wait answers a change of: the game, its moves, offers and result."""
    return (snap.game_number, len(snap.moves), snap.phase, snap.draw_offer, snap.result)
