"""What the human's browser page is sent: the table as the human (or a spectator) sees it.

`page_state` turns a `Snapshot` into `PageState`, the JSON the page renders and the body of
every ``state`` Server-Sent Event. The human with the table's token gets their legal moves
on their turn and the agent's token (to hand to their agent); a spectator gets neither.
Pure: no I/O, no trio, no HTML (the page escapes all text itself, agent notes included).

Every page stream renders each change, so the piece map is memoised by FEN like
`agora.toolsets.chess.position.position`; what it hands out is shared and read only.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final, Literal

import chess
import msgspec

from agora.toolsets.chess.game import answering_move, declined_by_agent, declined_draw
from agora.toolsets.chess.position import POSITION_CACHE, move_entry, position
from agora.toolsets.chess.render import REASON_WORDS, game_result
from agora.toolsets.chess.replies import GameResult, LegalMove, MoveEntry
from agora.toolsets.chess.terms import AgentAbsence, ColorName, Phase, Role, other_color

if TYPE_CHECKING:
    from agora.toolsets.chess.snapshot import Snapshot

_ENCODER: Final = msgspec.json.Encoder()


class AgentLinks(msgspec.Struct, frozen=True, rename="camel"):
    """Where an agent connects to play at this table."""

    mcp_http: str
    mcp_websocket: str


class PageState(msgspec.Struct, frozen=True, rename="camel"):
    """The table as the page shows it."""

    table: str
    version: int
    game_number: int
    role: Literal["human", "spectator"]
    phase: Phase
    status: str
    fen: str
    turn: ColorName
    board: dict[str, str]
    in_check: bool
    check_square: str | None
    human_color: ColorName | None
    agent_color: ColorName | None
    last_move: MoveEntry | None
    history: list[MoveEntry]
    legal_moves: list[LegalMove]
    draw_offer: Role | None
    #: The agent's last move declined the human's draw offer (the agent sees the converse
    #: as ``drawDeclined`` in its replies).
    draw_declined: bool
    #: The human's offer stood through the agent's last move: the agent moved before a
    #: reply had shown it the offer, so that move did not decline it.
    draw_offer_unseen: bool
    #: With ``draw_offer_unseen``: the server restarted since the offer and cannot tell
    #: whether the agent saw it (so the page does not say it did not).
    draw_offer_sight_unknown: bool
    #: The human's last move declined the agent's draw offer (the agent is told it as
    #: ``drawDeclined``), until the agent's next move.
    human_declined: bool
    result: GameResult | None
    agent_present: bool
    #: Why no agent is present, so the page says only what the server knows: its presence is
    #: kept in memory (`agora.toolsets.chess.snapshot.Snapshot.agent_absence`).
    agent_absence: AgentAbsence | None
    #: More than one connection holds the agent's seat (`Snapshot.agent_shared`): each may
    #: move for the agent.
    agent_shared: bool
    agent: AgentLinks
    agent_token: str | None
    #: The table's page without a token, for others to watch (the human's own link is
    #: their seat: it must not be the one they share).
    spectator_url: str


def agent_links(public_url: str, table: str, agent_token: str | None = None) -> AgentLinks:
    """The MCP endpoints of ``table`` (the default table also answers at ``/mcp/chess``).

    With ``agent_token`` they carry it (``?token=``) and hold the agent's seat; without,
    they only watch.
    """
    base = public_url.rstrip("/")
    ws = "ws" + base.removeprefix("http") if base.startswith("http") else base
    query = f"?token={agent_token}" if agent_token else ""
    return AgentLinks(
        mcp_http=f"{base}/mcp/chess/{table}{query}",
        mcp_websocket=f"{ws}/mcp/chess/{table}{query}",
    )


def spectator_url(public_url: str, table: str) -> str:
    """The URL of ``table``'s page without the token: it shows the game but cannot play."""
    return f"{public_url.rstrip('/')}/play/{table}"


def human_url(public_url: str, table: str, token: str) -> str:
    """The URL the human opens to play at ``table``."""
    return f"{spectator_url(public_url, table)}?token={token}"


def piece_code(piece: chess.Piece) -> str:
    """The page's name of a piece, e.g. ``wN``: a `PageState.board` value and its image's name."""
    return ("w" if piece.color == chess.WHITE else "b") + piece.symbol().upper()


@functools.lru_cache(maxsize=POSITION_CACHE)
def _squares(fen: str) -> dict[str, str]:
    """`PageState.board` of ``fen``: piece codes by square name, from a1 to h8."""
    board = position(fen).board
    return {chess.square_name(sq): piece_code(p) for sq, p in sorted(board.piece_map().items())}


def draw_accepter(snap: Snapshot) -> Role | None:
    """Who accepted the draw that ended the game; None if no draw was agreed.

    The agent, when its last move (marked ``(=)``) answered the human's standing offer: the
    first agent move after an offer, save one made before the agent was shown the offer,
    answers it, as the PGN says. Otherwise the human, with
    the button or an offer of their own crossing the agent's.
    """
    moves = snap.moves
    if snap.result is None or snap.result.reason != "agreement" or not moves:
        return None
    last = moves[-1]
    answered = (answering_move(moves, count, snap.unseen_plies) for count in snap.human_offers)
    return "agent" if last.by == "agent" and any(move is last for move in answered) else "human"


def ending(result: GameResult, human: bool, accepter: Role | None = None) -> str:
    """A finished game as the page says it: from the human's side, the score last.

    The agent replies' ``summary`` names colours ("0-1: black (human) wins by checkmate.");
    the page says who won, that the human resigned when they did, and who accepted whose
    offer of an agreed draw (``accepter``, `draw_accepter`).
    """
    you = "you" if human else "the human"
    how = REASON_WORDS[result.reason]
    score = f"({result.score})"
    if result.reason == "abandoned":
        return f"Abandoned: {you} started a new game."
    if accepter == "agent":
        your = "your" if human else "the human's"
        return f"The agent accepted {your} draw offer: drawn by {how} {score}."
    if accepter == "human":
        return f"{you.capitalize()} accepted the agent's draw offer: drawn by {how} {score}."
    if result.winner_role is None:
        return f"Drawn by {how} {score}."
    if result.winner_role == "human":
        return f"{you.capitalize()} won by {how} {score}."
    if result.reason == "resignation":  # only the human can resign (the agent has no tool)
        return f"The agent won by resignation: {you} resigned {score}."
    return f"The agent won by {how} {score}."


def _status(snap: Snapshot, human: bool, result: GameResult | None, in_check: bool) -> str:
    # A check is said whoever gave it: the side to move is the one in check.
    check = "Check! " if in_check else ""
    match snap.phase:
        case "side_choice":
            return "Choose your side." if human else "Waiting for the human to choose sides."
        case "agent_turn":
            if not snap.agent_present:
                return check + "Waiting for the agent to connect."
            return check + "The agent is thinking."
        case "human_turn":
            return check + ("Your move." if human else "The human is to move.")
        case _:
            return ending(result, human, draw_accepter(snap)) if result else "Game over."


def page_state(snap: Snapshot, *, human: bool, public_url: str) -> PageState:
    """The page's view of a table.

    Args:
        snap: The table.
        human: Whether the viewer holds the table's token.
        public_url: The server's base URL, for the agent's endpoints.

    Returns:
        The state; ``legalMoves`` is filled only for the human on the human's turn, and
        ``agentToken`` (and the token in the agent's links) only for the human.
    """
    pos = position(snap.fen)
    history = [move_entry(m) for m in snap.moves]
    result = game_result(snap)
    king = pos.board.king(pos.board.turn)
    human_color = None if snap.agent_color is None else other_color(snap.agent_color)
    return PageState(
        table=snap.table,
        version=snap.version,
        game_number=snap.game_number,
        role="human" if human else "spectator",
        phase=snap.phase,
        status=_status(snap, human, result, pos.in_check),
        fen=snap.fen,
        turn=pos.side_to_move,
        board=_squares(snap.fen),
        in_check=pos.in_check,
        check_square=chess.square_name(king) if pos.in_check and king is not None else None,
        human_color=human_color,
        agent_color=snap.agent_color,
        last_move=history[-1] if history else None,
        history=history,
        legal_moves=pos.legal_moves if human and snap.phase == "human_turn" else [],
        draw_offer=snap.draw_offer,
        draw_declined=declined_by_agent(snap.moves, snap.declined_ply) and result is None,
        human_declined=declined_draw(snap.moves) == "human" and result is None,
        draw_offer_unseen=snap.draw_offer == "human"
        and bool(snap.moves)
        and snap.moves[-1].ply in snap.unseen_plies,
        draw_offer_sight_unknown=snap.offer_sight_unknown,
        result=result,
        agent_present=snap.agent_present,
        agent_absence=snap.agent_absence,
        agent_shared=snap.agent_shared,
        agent=agent_links(public_url, snap.table, snap.agent_token if human else None),
        agent_token=snap.agent_token if human else None,
        spectator_url=spectator_url(public_url, snap.table),
    )


def encode(state: PageState) -> bytes:
    """The state as compact JSON (one line, fit for an SSE ``data:`` field)."""
    return _ENCODER.encode(state)
