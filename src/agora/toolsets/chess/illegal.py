"""Why a move cannot be played, said the way a chess player would say it.

`explain_illegal` turns a refused move into one sentence: the same square twice, an empty
square, the opponent's piece, a king left in check, a castling through attack, or a piece
that cannot reach the square (with the squares it can reach). It reads the position with
python-chess and decides nothing: legality itself is `chess.Board.legal_moves`.
"""

from __future__ import annotations

import chess


def _color(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


def explain_illegal(board: chess.Board, move: chess.Move) -> str:
    """Say why ``move``, which is not legal on ``board``, cannot be played.

    Args:
        board: The position; ``board.turn`` is the side that tried to move.
        move: A move whose squares are well formed but which is not in ``board.legal_moves``.

    Returns:
        One sentence naming what was wrong and, where it helps, what the piece can do instead.
    """
    origin, target = chess.square_name(move.from_square), chess.square_name(move.to_square)
    mover = _color(board.turn)
    if move.from_square == move.to_square:
        return f"from and to are both {origin}: a move takes a piece to another square."
    piece = board.piece_at(move.from_square)
    if piece is None:
        return f"there is no piece on {origin}; {mover} is to move."
    name = chess.piece_name(piece.piece_type)
    if piece.color != board.turn:
        return f"the piece on {origin} is a {_color(piece.color)} {name}; {mover} is to move."
    if piece.piece_type == chess.KING and board.is_castling(move):
        return _castling(board, move)
    if board.is_pseudo_legal(move):
        if piece.piece_type == chess.KING:
            return f"{origin}{target} would put the {mover} king on an attacked square."
        if board.is_check():
            return f"{origin}{target} does not get the {mover} king out of check."
        return f"{origin}{target} would leave the {mover} king in check (the {name} is pinned)."
    own = sorted(
        chess.square_name(m.to_square)
        for m in board.legal_moves
        if m.from_square == move.from_square
    )
    blocked = board.piece_at(move.to_square)
    why = f"the {name} on {origin} cannot move to {target}"
    if blocked is not None and blocked.color == board.turn:
        why += f" (a {mover} {chess.piece_name(blocked.piece_type)} stands there)"
    if not own:
        return f"{why}; it has no legal move now."
    return f"{why}; from {origin} it can move to {', '.join(dict.fromkeys(own))}."


def _castling(board: chess.Board, move: chess.Move) -> str:
    side = (
        "kingside"
        if chess.square_file(move.to_square) > chess.square_file(move.from_square)
        else "queenside"
    )
    rook_file = 7 if side == "kingside" else 0
    rook = chess.square(rook_file, chess.square_rank(move.from_square))
    if not board.castling_rights & chess.BB_SQUARES[rook]:
        why = "the king or that rook has already moved"
    elif board.is_check():
        why = "the king is in check"
    else:
        why = "a square between them is taken, or the king would cross or land on an attack"
    uci = move.uci()
    return f"castling {side} ({uci}) is not allowed now: {why}."
