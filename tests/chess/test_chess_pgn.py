"""The PGN download: players, result, notes as comments, and what the server adds itself.

What the server says (how the game ended, draw offers and their answers) is a comment of its
own, never inside a player's note; notes lose the bidi controls that could disguise them,
and a right brace (which would end a PGN comment) is written as U+FF5D, said once at the
start.
"""

from __future__ import annotations

import io

import chess.pgn
import pytest
from page_routes import api, http

from agora.toolsets.chess.commands import AcceptDraw, NewGame, OfferDraw, Resign

PUBLIC_URL = "http://127.0.0.1:8765"
RLO = "\u202e"


def _flat(text: str) -> str:
    """The PGN's movetext on one line, one space between tokens."""
    return " ".join(text.split("\n\n", 1)[1].split())


async def _pgn(table) -> tuple[str, chess.pgn.Game]:
    text = (await http(table.runtime, "GET", "/play/default/pgn")).body.decode()
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    return text, game


async def test_the_pgn_names_both_players_and_the_result(table):
    await table.choose("black")
    for uci, by in (("f2f3", "h"), ("e7e5", "a"), ("g2g4", "h"), ("d8h4", "a")):
        if by == "h":
            await table.human_move(uci, "hm} {" if uci == "f2f3" else None)
        else:
            await table.tool("move_piece", **{"from": uci[:2], "to": uci[2:], "note": "mate"})
    response = await http(table.runtime, "GET", "/play/default/pgn")
    assert response.status == 200
    assert response.content_type.startswith("application/x-chess-pgn")
    assert 'filename="agora-default-game1.pgn"' in dict(response.headers)["Content-Disposition"]
    text = response.body.decode()
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    assert game.headers["White"] == "Human"
    assert game.headers["Black"] == "Agent"
    assert game.headers["Result"] == "0-1"
    assert game.headers["Termination"] == "normal"  # one of the standard's values
    assert game.headers["Site"] == f"{PUBLIC_URL}/play/default"
    assert [m.uci() for m in game.mainline_moves()] == ["f2f3", "e7e5", "g2g4", "d8h4"]
    assert [n.comment for n in game.mainline()][:2] == ["Human: hm\uff5d {", "Agent: mate"]
    # The ending is the server's own comment after the agent's note, not inside it.
    assert "{ Agent: mate } { The agent (Black) wins by checkmate. } 0-1" in _flat(text)
    assert game.end().board().is_checkmate()


async def test_the_pgn_keeps_to_the_export_format(table):
    # Lines of at most 79 characters, printing characters only (a note's control
    # characters become spaces), a standard Termination value.
    await table.choose("white")
    moves = [
        "e2e4",
        "e7e5",
        "g1f3",
        "b8c6",
        "f1c4",
        "g8f6",
        "d2d3",
        "f8c5",
        "b1c3",
        "d7d6",
        "c1g5",
        "h7h6",
    ]
    for i, uci in enumerate(moves):
        if i % 2 == 0:
            # Control characters; a word that fills a line exactly; a "%" that wrapping
            # could put in column 1, where PGN reads an escape.
            note = "\x01\x7f" * 40 + "\u00e9" if i % 4 == 0 else "x" * 69 + " %y" * 30
            args = {"from": uci[:2], "to": uci[2:], "note": note}
            await table.tool("move_piece", **args)
        else:
            await table.human_move(uci)
    await table.human(Resign(table.token))
    text = (await http(table.runtime, "GET", "/play/default/pgn")).body.decode()
    assert max(len(line) for line in text.splitlines()) <= 79, text
    assert not [line for line in text.splitlines() if line.startswith("%")], text
    assert not [c for c in text if (ord(c) < 32 and c != "\n") or 127 <= ord(c) < 160]
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    assert game.headers["Termination"] == "normal"
    assert game.headers["Result"] == "1-0"
    assert [m.uci() for m in game.mainline_moves()] == moves
    assert _flat(text).endswith(" h6 { The human (Black) resigned: the agent (White) wins. } 1-0")
    assert "\u00e9" in game.next().comment  # printing characters stay as they are


async def test_no_word_of_a_note_is_split_across_lines(table):
    """A tester's finding: notes were wrapped at 79 columns inside words (and at hyphens),
    so a URL in a note came out broken."""
    long_url = "https://example.org/a-very-long/path-with-hyphens/" + "x" * 40 + "?q=1"
    short_url = "https://lichess.org/analysis/standard/some-opening-line-to-look-at"
    note = f"See {long_url} and the line after it"
    await table.choose("white")
    await table.tool("move_piece", **{"from": "e2", "to": "e4", "note": note})
    await table.human_move("e7e5", f"{'words ' * 9}{short_url}")
    text, game = await _pgn(table)
    lines = text.splitlines()
    for url in (short_url, long_url):
        assert [line for line in lines if url in line], (url, text)
    assert [line for line in lines if len(line) > 79] == [f" {long_url}"]  # its own line
    assert not [line for line in lines if line.startswith("%")]
    assert " ".join(game.next().comment.split()) == f"Agent: {note}"
    assert [m.uci() for m in game.mainline_moves()] == ["e2e4", "e7e5"]


async def test_the_ending_names_who_resigned_apart_from_the_last_note(table):
    await table.choose("black")  # the human plays White
    await table.human_move("e2e4")
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "no thanks"})
    await table.human(Resign(table.token))
    text, game = await _pgn(table)
    assert game.headers["Termination"] == "normal"  # one of the standard's values
    assert _flat(text) == (
        "1. e4 e5 { Agent: no thanks } { The human (White) resigned: the agent (Black) wins. } 0-1"
    )


async def test_draw_offers_and_their_answers_are_comments_on_their_moves(table):
    await table.choose("black")  # the human plays White
    await table.human(OfferDraw(table.token))  # before any move
    await table.human_move("e2e4")
    await table.tool("wait_for_turn")  # shows the agent the offer
    await table.tool("move_piece", **{"from": "e7", "to": "e5"})  # declines it
    await table.human_move("g1f3")
    await table.tool("move_piece", **{"from": "b8", "to": "c6", "note": "Shall we? (=)"})
    await table.human_move("f1c4")  # declines the agent's offer
    await table.tool("move_piece", **{"from": "g8", "to": "f6"})
    await table.human(OfferDraw(table.token))  # on the human's turn, after Nf6
    await table.human_move("d2d3")
    await table.tool("move_piece", **{"from": "f8", "to": "c5", "note": "agreed (=)"})
    text, game = await _pgn(table)
    assert game.headers["Result"] == "1/2-1/2"
    assert _flat(text) == (
        "{ The human offers a draw. } 1. e4 e5 { The agent declines the draw offer. } 2. Nf3"
        " Nc6 { Agent: Shall we? (=) } { The agent offers a draw. } 3. Bc4"
        " { The human declines the draw offer. } 3... Nf6 { The human offers a draw. } 4. d3"
        " Bc5 { Agent: agreed (=) } { The agent accepts the draw offer. } { Drawn by agreement. }"
        " 1/2-1/2"
    )
    await table.human(NewGame(table.token))  # game 1 is now read back from the store
    stored = await http(table.runtime, "GET", "/play/default/pgn", query={"game": "1"})
    assert stored.body.decode() == text


async def test_a_decline_by_moving_comes_before_an_offer_made_after_that_move(table):
    """Newcomer finding: the agent offered with Nc6, the human declined by playing Bc4 and then
    offered with the button: the PGN read "3. Bc4 { The human offers a draw. } { The human
    declines the draw offer. }", as if the human had declined an offer of its own."""
    await table.choose("black")  # the human plays White
    await table.human_move("e2e4")
    await table.tool("move_piece", **{"from": "e7", "to": "e5"})
    await table.human_move("g1f3")
    await table.tool("move_piece", **{"from": "b8", "to": "c6", "note": "Shall we? (=)"})
    await table.human_move("f1c4")  # declines the agent's offer
    await table.human(OfferDraw(table.token))  # and offers one of its own
    await table.tool("wait_for_turn")  # shows the agent the offer
    await table.tool("move_piece", **{"from": "g8", "to": "f6"})  # declines it
    text, _ = await _pgn(table)
    assert _flat(text) == (
        "1. e4 e5 2. Nf3 Nc6 { Agent: Shall we? (=) } { The agent offers a draw. } 3. Bc4"
        " { The human declines the draw offer. } { The human offers a draw. } 3... Nf6"
        " { The agent declines the draw offer. } *"
    )


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(OfferDraw, id="offer-crossing-the-agents"),
        pytest.param(AcceptDraw, id="accept-button"),
    ],
)
async def test_a_draw_agreed_says_whose_offer_the_human_accepted(table, answer):
    # The human's offer while the agent's stands agrees the draw at once: it is an acceptance.
    await table.choose("black")  # the human plays White
    await table.human_move("e2e4")
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "draw? (=)"})
    await table.human(answer(table.token))
    text, game = await _pgn(table)
    assert game.headers["Result"] == "1/2-1/2"
    assert _flat(text) == (
        "1. e4 e5 { Agent: draw? (=) } { The agent offers a draw. }"
        " { The human accepts the draw offer. } { Drawn by agreement. } 1/2-1/2"
    )


async def test_a_right_brace_in_a_note_is_marked_not_silently_changed(table):
    await table.choose("black")
    await table.human_move("e2e4", "a } b")
    text, _ = await _pgn(table)
    assert _flat(text) == (
        "{ A right brace in a note is written as \uff5d (U+FF5D): a PGN comment ends at the"
        " first right brace. } 1. e4 { Human: a \uff5d b } *"
    )
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": "plain"})
    text, _ = await _pgn(table)
    assert "U+FF5D" in text  # said while any note needs it


async def test_bidi_controls_are_taken_out_of_notes(table):
    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    await table.choose("black")
    await table.human_move("e2e4", f"mine {RLO}desrever")
    await table.tool("move_piece", **{"from": "e7", "to": "e5", "note": f"Qh4 {controls}mates"})
    text, game = await _pgn(table)
    assert [n.comment for n in game.mainline()] == ["Human: mine desrever", "Agent: Qh4 mates"]
    assert not set(controls) & set(text)
    _, state = await api(table.runtime, "GET", "/play/default/state", query={"token": table.token})
    assert [m["note"] for m in state["history"]] == ["mine desrever", "Qh4 mates"]
    assert not set(controls) & set(state["status"] + str(state["lastMove"]))
