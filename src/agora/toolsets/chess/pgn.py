"""A table's current game as PGN, written by python-chess, for the page's "Download PGN".

The Seven Tag Roster names both players by role and colour (``Human`` and ``Agent``, ``?``
before the sides are chosen) and the result (``*`` while the game runs or when it was
abandoned). In the export format the standard asks for: ``Termination`` takes one of its
values (``normal``, or ``abandoned``); movetext lines are at most 79 characters, save a
line that holds one word longer than that (a long URL in a note): words are never split, so
a link in a note still works once copied (such a line stays far inside the 255 characters
the import format allows, since a note is at most 160 characters).

Comments: each move's note, prefixed with who wrote it; then, each in a comment of its own
(never inside a player's note), what the server saw: a draw offered, accepted or declined,
on the move it came with (the human's offers, made with a button, after the last move
played), and how the game ended (who resigned, who won by what) just before the result.
A note's bidi controls are taken out (`agora.toolsets.chess.notes`), its control characters
(which PGN forbids) become spaces and it is wrapped to the movetext's width between words
only (never inside a word, nor at a hyphen). A PGN comment cannot hold a right brace (it
ends the comment, and the standard has no escape), so a note's right brace is written as
U+FF5D, which looks the same, and a comment before the first move says so. Pure: no I/O;
dates come from the moves' own timestamps.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from typing import TYPE_CHECKING, Final

import chess
import chess.pgn

from agora.toolsets.chess.game import answering_move
from agora.toolsets.chess.notes import shown_note
from agora.toolsets.chess.terms import DRAW_MARK, other_color

if TYPE_CHECKING:
    from agora.toolsets.chess.game import Result
    from agora.toolsets.chess.snapshot import Snapshot

PLAYER_NAMES: Final = {"human": "Human", "agent": "Agent"}
#: Movetext line length of the PGN export format.
COLUMNS: Final = 79
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: What a note's right brace is written as, and the comment that says so.
BRACE: Final = "\uff5d"
BRACE_NOTICE: Final = (
    f"A right brace in a note is written as {BRACE} (U+FF5D): a PGN comment ends at the first"
    " right brace."
)
#: Between one node's comments (control characters never survive into a comment).
_SPLIT: Final = "\x1e"
#: Each result reason in words, for the comment before the result.
_ENDINGS: Final = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient_material": "insufficient material",
    "seventyfive_moves": "the 75-move rule",
    "fivefold_repetition": "fivefold repetition",
    "fifty_moves": "the 50-move rule",
    "threefold_repetition": "threefold repetition",
    "resignation": "resignation",
    "agreement": "agreement",
    "abandoned": "abandonment",
}


class _Exporter(chess.pgn.StringExporter):
    """python-chess's exporter, writing each of a node's comments in braces of its own and
    the game's ending as a comment before the result."""

    def __init__(self, ending: str | None) -> None:
        super().__init__(headers=True, variations=True, comments=True, columns=COLUMNS)
        self.ending = ending

    def visit_comment(self, comment: str) -> None:
        for part in comment.split(_SPLIT):
            super().visit_comment(part)

    def visit_result(self, result: str) -> None:
        if self.ending:
            super().visit_comment(self.ending)
        super().visit_result(result)


def _date(snap: Snapshot) -> str:
    first = snap.moves[0].played_at if snap.moves else ""
    return first[:10].replace("-", ".") if len(first) >= 10 else "????.??.??"


def _player(snap: Snapshot, color: str) -> str:
    """``the agent (Black)``: a player by role and colour."""
    role = "agent" if color == snap.agent_color else "human"
    return f"the {role} ({color.capitalize()})"


def _ending(snap: Snapshot, result: Result) -> str:
    """How the game ended, in the server's words."""
    how = _ENDINGS[result.reason]
    if result.reason == "abandoned":
        return "Abandoned: the human started a new game."
    if result.winner is None:
        return f"Drawn by {how}."
    winner = _player(snap, result.winner)
    if result.reason == "resignation":
        loser = _player(snap, other_color(result.winner))
        return f"{loser[0].upper()}{loser[1:]} resigned: {winner} wins."
    return f"{winner[0].upper()}{winner[1:]} wins by {how}."


def _offers(snap: Snapshot) -> dict[int, list[str]]:
    """The draw offers and their answers, by the ply of the move they came with (0: before
    the first move): what a move said (an offer with its note, an answer) first, then an
    offer the human made with the button after it."""
    said: dict[int, list[str]] = defaultdict(list)
    after: dict[int, list[str]] = defaultdict(list)  # the human's offers, after their ply
    moves = snap.moves
    answered: set[int] = set()  # agent moves that answered a human offer
    for count in snap.human_offers:
        after[count].append("The human offers a draw.")
        reply = answering_move(moves, count, snap.unseen_plies)
        if reply is not None and reply.ply not in answered:
            answered.add(reply.ply)
            accepts = reply.note is not None and DRAW_MARK in reply.note
            said[reply.ply].append(
                f"The agent {'accepts' if accepts else 'declines'} the draw offer."
            )
    for move in moves:
        if move.by != "agent" or move.ply in answered or DRAW_MARK not in (move.note or ""):
            continue
        said[move.ply].append("The agent offers a draw.")
        if move.ply < len(moves):
            said[move.ply + 1].append("The human declines the draw offer.")
        elif snap.result is not None and snap.result.reason == "agreement":
            said[move.ply].append("The human accepts the draw offer.")
    for count, offers in after.items():
        said[count].extend(offers)
    return said


def _comments(snap: Snapshot) -> dict[int, list[str]]:
    """Every comment, by the ply of its move (0: before the first move), notes first."""
    out: dict[int, list[str]] = defaultdict(list)
    if any("}" in (move.note or "") for move in snap.moves):
        out[0].append(BRACE_NOTICE)
    for move in snap.moves:
        note = shown_note(move.note)
        if note:
            out[move.ply].append(f"{PLAYER_NAMES[move.by]}: {note.replace('}', BRACE)}")
    for ply, said in _offers(snap).items():
        out[ply].extend(said)
    return out


def _fill(comment: str) -> str:
    # One space between words, in lines that fit the movetext's width with "{ " and " } "
    # around them (python-chess wraps between tokens, never inside a comment); continuation
    # lines start with a space: a "%" in column 1 would be an escape. A word (a URL) longer
    # than a line gets a line of its own rather than being cut, and hyphens are no breaks.
    words = _CONTROL.sub(" ", comment).split()
    return textwrap.fill(
        " ".join(words),
        COLUMNS - 4,
        subsequent_indent=" ",
        break_long_words=False,
        break_on_hyphens=False,
    )


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
    comments = _comments(snap)
    nodes: list[chess.pgn.GameNode] = [game]
    for move in snap.moves:
        nodes.append(nodes[-1].add_variation(chess.Move.from_uci(move.uci)))
    for ply, said in comments.items():
        nodes[ply].comment = _SPLIT.join(_fill(each) for each in said)
    ending = None if snap.result is None else _fill(_ending(snap, snap.result))
    return game.accept(_Exporter(ending)) + "\n"
