"""What each agent connection, and the seat, was last shown, so that a move is played only
where it was chosen.

Several connections may hold one table's agent token (a second client, a restarted agent
whose old session still waits), and one agent may use several (over Streamable HTTP at the
stateless revision a connection is the TCP connection, which the server closes after 15 s
idle, and two calls at once go out on two). Each call with the token names its connection
(the tools give every MCP session an opaque id): `AgentSessions` keeps, per connection and
for the seat as a whole, the game and the number of moves the last reply showed. A move is
refused (`AgentSessions.stale`) with what changed since when its connection was last shown
another game or position, or, from a connection with no record of its own (a move after a
long think arrives on a new TCP connection), when the seat's last look (by any connection)
was. With no record at all (a restart, a new token, a handler called directly) it is not
refused for that alone. The seat counts as shared only on evidence: a connection's stale
move finds a move another connection made since its last look. All in memory, as presence
is, and bounded: the oldest records go first. Pure: no I/O, no trio.
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
    "Another connection with this table's agent token has moved for the agent in the last 2"
    " minutes: it holds the agent's seat too, and either may move for the agent."
)


class AgentSessions:
    """Per agent connection and for the seat: the (game number, moves) last shown."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int]] = {}
        self._called: dict[str, float] = {}
        #: What the last look by any connection showed: a connection without a record of
        #: its own (a new TCP connection after a long think) was shown at most that.
        self._seat_seen: tuple[int, int] | None = None
        #: When a connection's stale move last found another connection's move: both hold
        #: the seat.
        self._shared_at: float | None = None

    def called(self, session: str | None, mono: float) -> None:
        """Note a call with the agent token on ``session`` at monotonic time ``mono``.

        Calls alone are no evidence of a second holder: one agent's two calls at once, or
        a client's new TCP connection, come on two connections.
        """
        if session is None:
            return
        self._called.pop(session, None)
        self._called[session] = mono
        while len(self._called) > MAX_SESSIONS:
            oldest = next(iter(self._called))
            del self._called[oldest]
            self._seen.pop(oldest, None)

    def saw(self, session: str | None, game: Game) -> None:
        """``session``'s reply now shows ``game`` as it stands."""
        if session is not None and session in self._called:
            self._seen[session] = self._seat_seen = (game.number, len(game.moves))

    def shared(self, mono: float) -> bool:
        """Whether a stale move found another connection's within `AGENT_FRESH_SECONDS`."""
        return self._shared_at is not None and mono - self._shared_at <= AGENT_FRESH_SECONDS

    def stale(self, session: str | None, game: Game, mono: float) -> str | None:
        """Why a move from ``session`` was not chosen for ``game`` as it stands, or None.

        ``session``'s own record first, else the seat's last look; None also when the
        server has no record of either, and when the seat's last look (by another
        connection) showed the position as it stands and no move for the agent came since
        ``session``'s own look (one agent whose calls went out on two connections). A move
        another connection made since ``session``'s own last look marks the seat shared at
        ``mono``.
        """
        if session is None:
            return None
        own = self._seen.get(session)
        if own is not None and self._seat_seen == (game.number, len(game.moves)):
            # Another connection was just shown this position: one agent's two calls at once
            # (two TCP connections) look so, unless a move for the agent came in between.
            since_own = game.moves[own[1] :] if own[0] == game.number else game.moves
            if not any(move.by == "agent" for move in since_own):
                return None
        seen = own if own is not None else self._seat_seen
        if seen is None or seen == (game.number, len(game.moves)):
            return None
        number, plies = seen
        if number != game.number:
            return f"the human started game {game.number} since your last look (at game {number})"
        if plies > len(game.moves):  # cannot happen within a game; say the safe thing
            return "the board changed since your last look"
        since = game.moves[plies:]
        if own is not None and any(move.by == "agent" for move in since):
            self._shared_at = mono
        return since_text(since) + " since your last look"


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
