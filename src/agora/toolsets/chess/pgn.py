"""A table's current game as PGN, written by python-chess, for the page's "Download PGN".

The Seven Tag Roster names both players by role and colour (``Human`` and ``Agent``, ``?``
before the sides are chosen) and the result (``*`` while the game runs or when it was
abandoned). In the export format the standard asks for: ``Termination`` takes one of its
values (``normal``, or ``abandoned``) and the game's own ending (checkmate, resignation, ...)
is the comment after the last move; movetext lines are at most 79 characters; each move's note
becomes a comment prefixed with who wrote it, its control characters (which PGN forbids)
turned to spaces and its words wrapped to that width. Pure: no I/O; dates come from the
moves' own timestamps.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Final

import chess
import chess.pgn

from agora.toolsets.chess.terms import other_color

if TYPE_CHECKING:
    from agora.toolsets.chess.table import Snapshot

PLAYER_NAMES: Final = {"human": "Human", "agent": "Agent"}
#: Movetext line length of the PGN export format.
COLUMNS: Final = 79
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: The ending of each result reason, said in the comment after the last move.
_ENDINGS: Final = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient_material": "insufficient material",
    "seventyfive_moves": "the 75-move rule",
    "fivefold_repetition": "fivefold repetition",
    "fifty_moves": "the 50-move rule",
    "threefold_repetition": "threefold repetition",
    "resignation": "resignation",
    "agreement": "a draw by agreement",
    "abandoned": "abandonment: the human started a new game",
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
        reason = snap.result.reason
        game.headers["Termination"] = "abandoned" if reason == "abandoned" else "normal"
    node: chess.pgn.GameNode = game
    for move in snap.moves:
        node = node.add_variation(chess.Move.from_uci(move.uci))
        if move.note:
            # PGN comments end at the first "}"; python-chess drops it, keep the words.
            node.comment = f"{PLAYER_NAMES[move.by]}: {move.note.replace('}', ')')}"
    if snap.result is not None:  # the server's words, set apart from the last note's
        ending = f"[agora: the game ended by {_ENDINGS[snap.result.reason]}]"
        node.comment = f"{node.comment} {ending}" if node.comment else ending
    for each in game.mainline():
        if each.comment:
            # One space between words, in lines that fit the movetext's width with "{ " and
            # " } " around them (python-chess wraps between tokens, never inside a comment);
            # continuation lines start with a space: a "%" in column 1 would be an escape.
            words = _CONTROL.sub(" ", each.comment).split()
            each.comment = textwrap.fill(" ".join(words), COLUMNS - 4, subsequent_indent=" ")
    exporter = chess.pgn.StringExporter(
        headers=True, variations=True, comments=True, columns=COLUMNS
    )
    return game.accept(exporter) + "\n"
