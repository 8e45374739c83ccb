"""A table's current game as PGN, written by python-chess, for the page's "Download PGN".

The Seven Tag Roster names both players by role and colour (``Human`` and ``Agent``, ``?``
before the sides are chosen) and the result (``*`` while the game runs or when it was
abandoned); ``Termination`` says how it ended. Each move's note becomes a PGN comment
prefixed with who wrote it. Pure: no I/O; dates come from the moves' own timestamps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import chess
import chess.pgn

from agora.toolsets.chess.terms import other_color

if TYPE_CHECKING:
    from agora.toolsets.chess.table import Snapshot

PLAYER_NAMES: Final = {"human": "Human", "agent": "Agent"}
_TERMINATIONS: Final = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient_material": "insufficient material",
    "seventyfive_moves": "75-move rule",
    "fivefold_repetition": "fivefold repetition",
    "fifty_moves": "50-move rule",
    "threefold_repetition": "threefold repetition",
    "resignation": "resignation",
    "agreement": "draw by agreement",
    "abandoned": "abandoned",
}


def _date(snap: Snapshot) -> str:
    first = snap.moves[0].played_at if snap.moves else ""
    return first[:10].replace("-", ".") if len(first) >= 10 else "????.??.??"


def game_pgn(snap: Snapshot, site: str) -> str:
    """The current game of ``snap`` as a PGN document (headers, movetext, result).

    Args:
        snap: The table.
        site: The game's address, for the ``Site`` tag.

    Returns:
        PGN text ending in a newline.
    """
    game = chess.pgn.Game()
    game.headers["Event"] = f"agora chess, table {snap.table}"
    game.headers["Site"] = site
    game.headers["Date"] = _date(snap)
    game.headers["Round"] = str(snap.game_number)
    if snap.agent_color is not None:
        game.headers[snap.agent_color.capitalize()] = PLAYER_NAMES["agent"]
        game.headers[other_color(snap.agent_color).capitalize()] = PLAYER_NAMES["human"]
    game.headers["Result"] = snap.result.score if snap.result else "*"
    if snap.result is not None:
        game.headers["Termination"] = _TERMINATIONS[snap.result.reason]
    node: chess.pgn.GameNode = game
    for move in snap.moves:
        node = node.add_variation(chess.Move.from_uci(move.uci))
        if move.note:
            # PGN comments end at the first "}"; python-chess drops it, keep the words.
            node.comment = f"{PLAYER_NAMES[move.by]}: {move.note.replace('}', ')')}"
    return str(game) + "\n"
