"""A table's game rebuilt from its stored rows, for the entity and for past games' PGN.

`replay` plays the stored moves again on a fresh `Game` and restores its sides, draw offers
and result, checking what it reads: a row that makes no sense is a `LookupError`, never a
game in a state the rules could not reach. Pure: it reads the rows it is given, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agora.toolsets.chess.game import Game, Result

if TYPE_CHECKING:
    from agora.toolsets.chess import sql
    from agora.toolsets.chess.terms import ColorName, Role


def replay(key: str, number: int, stored: sql.StoredTable) -> Game:
    """Game ``number`` replayed from its stored rows.

    Raises:
        LookupError: if a stored move is not legal where it stands.
    """
    g = stored.game
    game = Game(number, start_fen=g.start_fen)
    for move in stored.moves:
        try:
            game.restore(move.uci, move.san, _role(move.by), move.note, move.played_at)
        except ValueError as exc:
            raise LookupError(f"chess table {key!r}: {exc}") from exc
    game.agent_color = _color(g.agent_color)
    game.draw_offer = None if g.draw_offer is None else _role(g.draw_offer)
    game.declined_ply = g.declined_ply
    game.human_offers = _offers(g.human_offers)
    game.unseen_plies = _offers(g.unseen_plies)
    if g.score is not None:
        game.result = msgspec.convert(
            {"score": g.score, "reason": g.reason, "winner": g.winner, "ended_at": g.ended_at},
            Result,
        )
    return game


def _offers(value: str | None) -> tuple[int, ...]:
    try:
        return () if value is None else msgspec.json.decode(value, type=tuple[int, ...])
    except msgspec.DecodeError as exc:  # ValidationError included
        raise LookupError(f"stored {value!r} is not a list of move counts") from exc


def _role(value: str) -> Role:
    if value not in ("human", "agent"):
        raise LookupError(f"stored role {value!r} is not human or agent")
    return "human" if value == "human" else "agent"


def _color(value: str | None) -> ColorName | None:
    if value is None:
        return None
    if value not in ("white", "black"):
        raise LookupError(f"stored colour {value!r} is not white or black")
    return "white" if value == "white" else "black"
