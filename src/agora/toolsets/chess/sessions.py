"""What each agent connection was last shown, so that a move is played only where it was chosen.

Several connections may hold one table's agent token (a second client, a restarted agent
whose old session still waits). Each call with the token names its connection (the tools
give every MCP session an opaque id): `AgentSessions` keeps, per connection, the game and
the number of moves its last reply showed, and when it last called. A move from a
connection that was last shown another game or position is refused (`AgentSessions.stale`)
with what changed since; a connection it has no record of (a restart, a new connection, a
handler called directly) is not refused for that alone. All in memory, as presence is, and
bounded: the oldest records go first. Pure: no I/O, no trio.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Final

from agora.toolsets.chess.snapshot import AGENT_FRESH_SECONDS
from agora.toolsets.chess.terms import ChessError

if TYPE_CHECKING:
    from agora.toolsets.chess.game import Game, PlayedMove

#: The most connections remembered per table; the oldest caller is forgotten first.
MAX_SESSIONS: Final = 32
#: Who moved as the other connection: the refusal's words for it.
OTHER_CONNECTION: Final = "another connection with this table's agent token"
#: What the agent's replies add while more than one connection holds its seat.
SHARED_SEAT: Final = (
    "Another connection with this table's agent token has called in the last 2 minutes: it"
    " holds the agent's seat too, and either may move for the agent."
)


class AgentSessions:
    """Per agent connection: the (game number, moves) last shown, and its last call."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int]] = {}
        self._called: dict[str, float] = {}
        #: When two connections last took turns calling: both hold the seat.
        self._shared_at: float | None = None

    def called(self, session: str | None, mono: float) -> None:
        """Note a call with the agent token on ``session`` at monotonic time ``mono``.

        Another connection's call since this one's previous call means two hold the seat
        at once; a connection that replaces another (a client's new TCP connection, a
        relay that reconnected) never calls between the other's calls.
        """
        if session is None:
            return
        previous = self._called.pop(session, None)
        if previous is not None and any(at >= previous for at in self._called.values()):
            self._shared_at = mono
        self._called[session] = mono
        while len(self._called) > MAX_SESSIONS:
            oldest = next(iter(self._called))
            del self._called[oldest]
            self._seen.pop(oldest, None)

    def saw(self, session: str | None, game: Game) -> None:
        """``session``'s reply now shows ``game`` as it stands."""
        if session is not None and session in self._called:
            self._seen[session] = (game.number, len(game.moves))

    def shared(self, mono: float) -> bool:
        """Whether two connections took turns calling within `AGENT_FRESH_SECONDS`."""
        return self._shared_at is not None and mono - self._shared_at <= AGENT_FRESH_SECONDS

    def stale(self, session: str | None, game: Game) -> str | None:
        """Why a move from ``session`` was not chosen for ``game`` as it stands, or None.

        None also when the server has no record of what ``session`` was shown.
        """
        seen = self._seen.get(session) if session is not None else None
        if seen is None or seen == (game.number, len(game.moves)):
            return None
        number, plies = seen
        if number != game.number:
            return f"the human started game {game.number} since your last look (at game {number})"
        if plies > len(game.moves):  # cannot happen within a game; say the safe thing
            return "the board changed since your last look"
        return since_text(game.moves[plies:]) + " since your last look"


def since_text(moves: tuple[PlayedMove, ...]) -> str:
    """``moves``, played since a connection's last look, in words: whose each was."""
    parts: list[str] = []
    for move in moves:
        who = OTHER_CONNECTION if move.by == "agent" else "the human"
        verb = "replied" if parts and move.by == "human" else "moved"
        parts.append(f"{who} {verb} {move.san}")
    return ", then ".join(parts)


def same_token(given: object, secret: str) -> bool:
    """Compare a presented token with a stored one in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode(), secret.encode())


def check_agent_token(token: str | None, agent_token: str) -> None:
    """Refuse a caller without the table's current ``agent_token``.

    Raises:
        ChessError: ``AGENT_TOKEN_REQUIRED`` (no token) or ``AGENT_TOKEN_INVALID``.
    """
    if token is None:
        raise ChessError(
            "AGENT_TOKEN_REQUIRED",
            "only the seated agent may move, and this connection has no agent token.",
        )
    if not same_token(token, agent_token):
        raise ChessError(
            "AGENT_TOKEN_INVALID",
            "the agent token in this endpoint URL is not this table's: it is wrong or"
            " the human replaced it.",
        )
