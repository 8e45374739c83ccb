"""The pure game model: sides, turns, notes, draw offers and every ending."""

from __future__ import annotations

import chess
import pytest
from games import LOYD_STALEMATE, SCHOLARS_MATE

from agora.toolsets.chess.game import ChessError, Game, declined_draw

AT = "2026-11-30T00:00:00+00:00"
KNIGHT_DANCE = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"]


def play(game: Game, moves: list[str]) -> None:
    for uci in moves:
        by = game.role_to_move()
        assert by is not None
        game.play(by, uci[:2], uci[2:4], uci[4:] or None, None, AT)


def started(agent_color: str = "white", fen: str = chess.STARTING_FEN) -> Game:
    game = Game(1, start_fen=fen)
    game.choose_side(agent_color)  # type: ignore[arg-type]
    return game


def test_a_new_game_waits_for_the_side_choice():
    game = Game(1)
    assert game.phase == "side_choice"
    assert game.role_to_move() is None
    with pytest.raises(ChessError) as info:
        game.play("agent", "e2", "e4", None, None, AT)
    assert info.value.code == "SIDE_NOT_CHOSEN"
    assert game.board.fen() == chess.STARTING_FEN


@pytest.mark.parametrize(
    ("agent_color", "phase"),
    [
        pytest.param("white", "agent_turn", id="agent-plays-white"),
        pytest.param("black", "human_turn", id="human-plays-white"),
    ],
)
def test_the_side_choice_decides_who_moves_first(agent_color, phase):
    assert started(agent_color).phase == phase


def test_sides_are_chosen_once():
    game = started("white")
    with pytest.raises(ChessError) as info:
        game.choose_side("black")
    assert info.value.code == "SIDE_ALREADY_CHOSEN"
    assert game.agent_color == "white"


def test_moves_alternate_and_carry_notes_and_history():
    game = started("black")
    game.play("human", "e2", "e4", None, "king's pawn", AT)
    with pytest.raises(ChessError) as info:
        game.play("human", "d2", "d4", None, None, AT)
    assert info.value.code == "NOT_YOUR_TURN"
    played = game.play("agent", "c7", "c5", None, "Sicilian", AT)
    assert (played.ply, played.move_number, played.color, played.san) == (2, 1, "black", "c5")
    assert [(m.san, m.uci, m.by, m.note) for m in game.moves] == [
        ("e4", "e2e4", "human", "king's pawn"),
        ("c5", "c7c5", "agent", "Sicilian"),
    ]


@pytest.mark.parametrize(
    ("from_sq", "to_sq", "promotion", "note", "code"),
    [
        pytest.param("e9", "e4", None, None, "MALFORMED_SQUARE", id="rank-9"),
        pytest.param("E2", "e4", None, None, "MALFORMED_SQUARE", id="upper-case"),
        pytest.param("e2", "", None, None, "MALFORMED_SQUARE", id="empty"),
        pytest.param("e2", "e4\n", None, None, "MALFORMED_SQUARE", id="trailing-newline"),
        pytest.param("e2", "e4", "k", None, "MALFORMED_PROMOTION", id="promote-to-king"),
        pytest.param("e2", "e4", None, "x" * 161, "NOTE_TOO_LONG", id="note-161"),
        pytest.param("e2", "e5", None, None, "ILLEGAL_MOVE", id="three-squares"),
        pytest.param("e2", "e4", "q", None, "ILLEGAL_MOVE", id="promotion-on-e4"),
        pytest.param("e7", "e5", None, None, "ILLEGAL_MOVE", id="opponent-piece"),
    ],
)
def test_bad_moves_are_refused_and_change_nothing(from_sq, to_sq, promotion, note, code):
    game = started("white")
    with pytest.raises(ChessError) as info:
        game.play("agent", from_sq, to_sq, promotion, note, AT)
    assert info.value.code == code
    assert game.board.fen() == chess.STARTING_FEN
    assert game.moves == ()
    if code == "ILLEGAL_MOVE":
        assert len(info.value.legal_moves) == 20


def test_a_note_of_exactly_160_characters_is_accepted():
    game = started("white")
    played = game.play("agent", "e2", "e4", None, "n" * 160, AT)
    assert played.note == "n" * 160


def test_scholars_mate_ends_the_game():
    game = started("white")
    play(game, SCHOLARS_MATE)
    assert game.phase == "over"
    assert game.result is not None
    assert (game.result.score, game.result.reason, game.result.winner) == (
        "1-0",
        "checkmate",
        "white",
    )
    assert game.moves[-1].san == "Qxf7#"
    with pytest.raises(ChessError) as info:
        game.play("human", "a7", "a6", None, None, AT)
    assert info.value.code == "GAME_OVER"


def test_stalemate_is_a_draw():
    game = started("black")
    play(game, LOYD_STALEMATE)
    assert game.result is not None
    assert (game.result.score, game.result.reason, game.result.winner) == (
        "1/2-1/2",
        "stalemate",
        None,
    )


def test_threefold_repetition_ends_the_game_as_soon_as_the_position_recurs():
    game = started("white")
    play(game, KNIGHT_DANCE[:-1])
    assert game.result is None
    play(game, KNIGHT_DANCE[-1:])
    assert game.result is not None
    assert game.result.reason == "threefold_repetition"


@pytest.mark.parametrize(
    ("fen", "move", "reason"),
    [
        pytest.param(
            "k7/8/8/8/8/8/1r6/KN6 w - - 0 1", "a1b2", "insufficient_material", id="kn-v-k"
        ),
        pytest.param("k7/8/8/8/8/8/8/KR6 w - - 99 80", "b1b2", "fifty_moves", id="fifty"),
        pytest.param("k7/8/8/8/8/8/8/KR6 w - - 149 80", "b1b2", "seventyfive_moves", id="75"),
    ],
)
def test_automatic_and_claimable_endings(fen, move, reason):
    game = started("white", fen)
    play(game, [move])
    assert game.result is not None
    assert game.result.reason == reason
    assert game.result.score == "1/2-1/2"


def test_checkmate_outranks_the_fifty_move_rule():
    game = started("white", "k7/8/1K6/8/8/8/8/7R w - - 99 80")
    play(game, ["h1h8"])
    assert game.result is not None
    assert game.result.reason == "checkmate"


@pytest.mark.parametrize("piece", ["q", "r", "b", "n"])
def test_promotion_to_each_piece(piece):
    game = started("white", "8/P6k/8/8/8/8/8/K7 w - - 0 1")
    played = game.play("agent", "a7", "a8", piece, None, AT)
    assert played.uci == f"a7a8{piece}"
    assert game.board.piece_at(chess.A8) == chess.Piece.from_symbol(piece.upper())


def test_a_promotion_piece_on_another_move_is_refused_in_words():
    # The contract's "defaults to queen" is for a promoting pawn: any other move is refused.
    game = started("white")
    with pytest.raises(ChessError, match="not a promotion: send it again without promotion"):
        game.play("agent", "b1", "c3", "q", None, AT)
    assert game.moves == ()


def test_promotion_defaults_to_a_queen():
    game = started("white", "8/P6k/8/8/8/8/8/K7 w - - 0 1")
    assert game.play("agent", "a7", "a8", None, None, AT).san == "a8=Q"


@pytest.mark.parametrize(
    ("by", "agent_color", "fen", "onto_rook", "uci", "san"),
    [
        ("agent", "white", "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1h1", "e1g1", "O-O"),
        ("agent", "white", "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1a1", "e1c1", "O-O-O"),
        ("human", "white", "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8h8", "e8g8", "O-O"),
        ("human", "white", "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8a8", "e8c8", "O-O-O"),
    ],
)
def test_castling_onto_the_rook_is_recorded_as_the_kings_move(
    by, agent_color, fen, onto_rook, uci, san
):
    # Standard chess UCI: the king's destination (king onto rook is Chess960's form).
    game = started(agent_color, fen)
    played = game.play(by, onto_rook[:2], onto_rook[2:], None, None, AT)
    assert (played.uci, played.san) == (uci, san)
    restored = Game(1, start_fen=fen, agent_color=agent_color)
    restored.restore(onto_rook, san, by, None, AT)  # a row stored before the fix
    assert restored.moves[0].uci == uci
    assert restored.board.fen() == game.board.fen()


def test_the_human_resigns_and_the_agent_wins():
    game = started("black")
    result = game.resign("human", AT)
    assert (result.score, result.reason, result.winner) == ("0-1", "resignation", "black")


def test_resigning_needs_chosen_sides():
    with pytest.raises(ChessError) as info:
        Game(1).resign("human", AT)
    assert info.value.code == "SIDE_NOT_CHOSEN"


def test_a_draw_offer_stands_until_the_opponent_moves():
    game = started("white")
    assert game.offer_draw("human", AT) is None
    assert game.draw_offer == "human"
    play(game, ["e2e4"])  # the agent moves without (=): declined
    assert game.draw_offer is None
    assert game.result is None


def test_the_agent_accepts_a_draw_offer_with_the_scoresheet_mark():
    game = started("white")
    game.offer_draw("human", AT)
    game.play("agent", "e2", "e4", None, "A draw suits me (=)", AT)
    assert game.result is not None
    assert (game.result.score, game.result.reason) == ("1/2-1/2", "agreement")
    assert game.moves[-1].uci == "e2e4"


def test_the_human_accepts_the_agents_draw_offer():
    game = started("white")
    game.play("agent", "e2", "e4", None, "(=)", AT)
    assert game.draw_offer == "agent"
    result = game.accept_draw("human", AT)
    assert result.reason == "agreement"


def test_offers_that_cross_agree_the_draw():
    game = started("white")
    game.play("agent", "e2", "e4", None, "(=)", AT)
    result = game.offer_draw("human", AT)
    assert result is not None
    assert result.reason == "agreement"


def test_the_human_declines_the_agents_offer_by_moving():
    game = started("white")
    game.play("agent", "e2", "e4", None, "(=)", AT)
    play(game, ["e7e5"])
    assert game.draw_offer is None
    with pytest.raises(ChessError) as info:
        game.accept_draw("human", AT)
    assert info.value.code == "NO_DRAW_OFFER"


def test_abandoning_records_no_result_only_once():
    game = started("white")
    result = game.abandon(AT)
    assert result is not None
    assert (result.score, result.reason) == ("*", "abandoned")
    assert game.abandon(AT) is None


def test_restore_replays_moves_and_refuses_an_illegal_one():
    game = Game(1)
    game.restore("e2e4", "e4", "agent", "note", AT)
    assert game.moves[0].san == "e4"
    with pytest.raises(ValueError, match="illegal"):
        game.restore("e2e4", "e4", "human", None, AT)


@pytest.mark.parametrize(
    ("fen", "uci", "says"),
    [
        pytest.param(chess.STARTING_FEN, "a1a1", "from and to are both a1", id="same-square"),
        pytest.param(chess.STARTING_FEN, "e3e4", "there is no piece on e3", id="empty-square"),
        pytest.param(chess.STARTING_FEN, "e7e5", "is a black pawn; white is to move", id="theirs"),
        pytest.param(
            chess.STARTING_FEN,
            "g1g3",
            "knight on g1 cannot move to g3; from g1 it can move to f3, h3",
            id="knight",
        ),
        pytest.param(
            chess.STARTING_FEN,
            "a1a3",
            "rook on a1 cannot move to a3; it has no legal move",
            id="boxed-in",
        ),
        pytest.param(
            "4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1",
            "e2d3",
            "would leave the white king in check",
            id="pinned",
        ),
        pytest.param(
            "4k3/8/8/8/8/8/4r3/4K3 w - - 0 1",
            "e1d2",
            "king on an attacked square",
            id="king-into-check",
        ),
        pytest.param(
            "4k3/8/8/8/8/8/8/r3K2R w K - 0 1",
            "h1h2",
            "does not get the white king out of check",
            id="check",
        ),
        pytest.param("4k3/8/8/8/8/8/8/R3K1r1 w Q - 0 1", "e1c1", "castling", id="castle-in-check"),
    ],
)
def test_an_illegal_move_is_explained(fen, uci, says):
    game = started("white", fen)
    with pytest.raises(ChessError) as info:
        game.play("agent", uci[:2], uci[2:4], None, None, AT)
    assert info.value.code == "ILLEGAL_MOVE"
    assert says in info.value.message
    assert "0000" not in info.value.message
    assert game.board.fen() == fen


def test_a_declined_draw_offer_is_read_from_the_history():
    game = started("white")
    game.play("agent", "e2", "e4", None, "I offer a draw (=)", AT)
    assert declined_draw(game.moves) is None
    play(game, ["e7e5"])
    assert declined_draw(game.moves) == "human"
    play(game, ["g1f3"])
    assert declined_draw(game.moves) is None


def test_a_replayed_game_has_the_history_the_live_one_made():
    # Castling, captures, a promotion and checks: the stored notation restores the same moves.
    live = Game(1, start_fen="r3k2r/1P6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    played = []
    for uci in ("b7a8q", "e8e7", "e1c1", "h8h1", "d1h1"):
        move = chess.Move.from_uci(uci)
        played.append(live._push(move, "human" if live.board.turn else "agent", None, AT))
    again = Game(1, start_fen="r3k2r/1P6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    for p in played:
        again.restore(p.uci, p.san, p.by, p.note, p.played_at)
    assert again.moves == live.moves
    assert again.board.fen() == live.board.fen()
    assert [p.san for p in again.moves] == ["bxa8=Q+", "Ke7", "O-O-O", "Rxh1", "Rxh1"]
