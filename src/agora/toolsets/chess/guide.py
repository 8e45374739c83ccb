"""What the agent is told about how to think: the collaboration contract and the evaluation guide.

The collaboration contract (returned by ``join_game``) is fixed text: the turn loop, the
deterministic evaluation checklist and the safety invariants. The evaluation guide (returned
by ``get_board`` and ``wait_for_turn``) is computed from the position alone, so the same FEN
always gives the same guide. Neither plays chess for the agent: there is no search and no
engine, only facts that python-chess reads off the board. No I/O, no trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

import chess
import msgspec

from agora.toolsets.chess.terms import DRAW_MARK, NOTE_MAX_CHARS, ColorName

if TYPE_CHECKING:
    from collections.abc import Mapping

PieceName = Literal["pawn", "knight", "bishop", "rook", "queen", "king"]

PIECE_VALUES: Final = {
    chess.PAWN: 1,
    chess.KNIGHT: 3,
    chess.BISHOP: 3,
    chess.ROOK: 5,
    chess.QUEEN: 9,
    chess.KING: 0,
}


def piece_name(piece_type: chess.PieceType) -> PieceName:
    """The English name of a python-chess piece type."""
    name: PieceName = chess.piece_name(piece_type)  # type: ignore[assignment]
    return name


class EvaluationGuide(msgspec.Struct, frozen=True, rename="camel"):
    """Facts read off the position for the side to move; deterministic per FEN.

    ``material`` is the agent's lead in pawns (P=1, N=3, B=3, R=5, Q=9; negative when
    behind; null before the sides are chosen). Moves are in UCI (from, to, any promotion
    letter: ``e2e4``, ``a7a8q``).
    ``hanging`` lists pieces (kings excepted) that the opponent attacks and nobody defends,
    as piece letter and square, uppercase for White as on the board: ``Nf3``, ``pe5``.
    """

    material: int | None
    hanging: list[str]
    checks: list[str]
    mates_in_one: list[str]
    captures: list[str]


class EvaluationStep(msgspec.Struct, frozen=True, rename="camel"):
    """One step of the fixed evaluation checklist."""

    step: int
    name: str
    question: str


class CollaborationContract(msgspec.Struct, frozen=True, rename="camel"):
    """How the agent and the human play together; returned by ``join_game``."""

    roles: str
    turn_loop: list[str]
    evaluation_path: list[EvaluationStep]
    safety_invariants: list[str]
    notes: str
    draw_offers: str
    endings: str
    status_codes: dict[str, str]


STATUS_CODES: Final = {
    "SIDE_CHOICE_REQUIRED": "The human has not chosen sides; call wait_for_turn with "
    "wait_for_human true.",
    "AGENT_TURN": "The agent is to move: if agentMayMove, call move_piece with a move from "
    "legalMoves.",
    "HUMAN_TURN": "The human is to move; call wait_for_turn.",
    "GAME_OVER": "The game has ended; result says how. Stop (or, to play the human's next"
    " game, wait_for_turn with wait_for_human true).",
    "WAIT_TIMEOUT": "wait_for_turn timed out with nothing new; call it again with the same "
    "arguments. With shuttingDown true the server is shutting down: wait a few seconds first"
    " (if it restarted, the call is answered).",
    "AGENT_TOKEN_REQUIRED": "Refused: only the seated agent may move. Connect to the table's "
    "chess endpoint with its agent token (/mcp/chess/<table>?token=...); without it you can "
    "only watch.",
    "AGENT_TOKEN_INVALID": "Refused on every tool: the agent token in the endpoint URL is not "
    "this table's. Wrong or replaced by the human: ask the human for the current agent URL; "
    "another table's: reconnect to the endpoint error and nextAction name.",
    "INVALID_ARGUMENTS": "Refused: the arguments do not match the tool's inputSchema.",
    "TABLE_NOT_FOUND": "Refused: there is no such table; ask the human for the endpoint.",
    "SERVER_ERROR": "The call failed inside the server and changed nothing; call get_board.",
}

_CHECKLIST: Final = (
    ("checks", "Which checks do I have, and does any of them mate (evaluationGuide.matesInOne)?"),
    ("captures", "Which captures are available, and does each win material after the recapture?"),
    ("threats", "What does the opponent threaten: which of my pieces are attacked and undefended?"),
    ("material", "What is the material balance, and does my candidate move keep or improve it?"),
    ("king safety", "Is my king safe after the move (castling, pawn shield, open lines)?"),
    ("development", "Does the move develop a piece, take the centre, or activate a rook?"),
    ("pawn structure", "Does the move create weaknesses (isolated, doubled or backward pawns)?"),
    (
        "blunder check",
        "Before moving: after this move, can the opponent mate, fork or win a piece?",
    ),
)

CONTRACT: Final = CollaborationContract(
    roles="One authoritative game per table. The human chooses sides first, in the browser "
    "(the human retains first choice of White), and plays there; you play the other side "
    "through these four tools. Only a connection whose endpoint URL carries the table's "
    "agent token (?token=..., shown to the human on the page) holds the agent's seat "
    '(seat "agent"); any other connection watches (seat "watcher") and cannot move.',
    turn_loop=[
        "Call wait_for_turn (START HERE). If statusCode is SIDE_CHOICE_REQUIRED, call it "
        'again with {"wait_for_human": true}.',
        "On AGENT_TURN with agentMayMove: follow evaluationPath, pick a move from legalMoves "
        '(grouped by from-square: {"e2": "e3 e4"}) and call move_piece with from (the key), '
        "to (one of its squares), promotion (a 5th letter, if any) and a short note.",
        "After every move_piece, call wait_for_turn immediately.",
        "On HUMAN_TURN or WAIT_TIMEOUT: call wait_for_turn again (if shuttingDown is true, "
        "the server is shutting down: wait a few seconds first).",
        "On GAME_OVER: stop. Always do exactly what nextAction says.",
    ],
    evaluation_path=[
        EvaluationStep(step=i, name=name, question=question)
        for i, (name, question) in enumerate(_CHECKLIST, start=1)
    ],
    safety_invariants=[
        "Never call move_piece while agentMayMove is false.",
        'Only play moves listed in legalMoves (e.g. {"e2": "e4"} is e2 to e4, {"a7": "a8q"} '
        "promotes to a queen).",
        "One move per turn: after a successful move_piece, call wait_for_turn.",
        "Never assume a position: read fen and board from the latest reply.",
        "Never choose sides, resign or start games for the human; only the human does that.",
    ],
    notes=f"Every move may carry a note of at most {NOTE_MAX_CHARS} characters; the human "
    "sees it live. Say in one sentence why you chose the move. The human's note on their "
    "last move is lastMove.note.",
    draw_offers=f"To offer a draw, or to accept the human's pending offer (drawOffer is "
    f'"human"), include {DRAW_MARK} in your move note. Your next move without it declines '
    "the human's offer, once a reply has shown you the offer (one made while you were "
    "thinking stands through that move, and its reply says so). The human accepts yours in "
    "the browser or declines it by moving: drawDeclined is then true in your next reply.",
    endings="The game ends by checkmate, stalemate, insufficient material, the 75-move rule "
    "or fivefold repetition; threefold repetition and the 50-move rule end it as a draw the "
    "moment the position qualifies (no claim needed). The human may also resign, agree a "
    "draw, or start a new game (the unfinished one is recorded as abandoned).",
    status_codes=dict(STATUS_CODES),
)


def _material(board: chess.Board, color: chess.Color) -> int:
    return sum(
        PIECE_VALUES[piece_type] * len(board.pieces(piece_type, color))
        for piece_type in chess.PIECE_TYPES
    )


def attacked_undefended(board: chess.Board, color: chess.Color) -> list[str]:
    """Pieces of ``color`` (kings excepted) that the opponent attacks and nobody defends.

    Attacks are python-chess's `Board.attackers`: pinned pieces still count, en passant
    does not. Squares are listed from a1 to h8, each as its piece's symbol (uppercase for
    White) and square.
    """
    found = []
    for square in chess.SquareSet(board.occupied_co[color] & ~board.kings):
        if board.attackers(not color, square) and not board.attackers(color, square):
            piece = board.piece_at(square)
            assert piece is not None
            found.append(piece.symbol() + chess.square_name(square))
    return found


def san_map(board: chess.Board) -> dict[chess.Move, str]:
    """Every legal move of the side to move with its SAN, in generation order.

    SAN is the costly part of a reply (python-chess plays each move to add ``+`` or ``#``),
    so a reply computes this once and hands it to both `evaluation_guide` and the
    ``legalMoves`` list.
    """
    return {move: board.san(move) for move in board.legal_moves}


def evaluation_guide(
    board: chess.Board,
    agent_color: ColorName | None,
    sans: Mapping[chess.Move, str] | None = None,
) -> EvaluationGuide:
    """Read the facts of a position for the side to move.

    Args:
        board: The position; only its FEN matters (history is not consulted).
        agent_color: The agent's colour, for ``material.agentAdvantage``; None before
            the sides are chosen.
        sans: `san_map` of ``board`` when the caller already has it.

    Returns:
        The guide; equal inputs give equal guides, with every list in a fixed order.
    """
    white, black = _material(board, chess.WHITE), _material(board, chess.BLACK)
    balance = white - black
    moves = san_map(board) if sans is None else sans
    checks, mates, captures = [], [], []
    for move, san in moves.items():
        entry = move.uci()
        if board.is_capture(move):
            captures.append(entry)
        # SAN ends in "+" exactly when the move gives check, "#" when it also mates.
        if san[-1] in "+#":
            checks.append(entry)
            if san[-1] == "#":
                mates.append(entry)
    return EvaluationGuide(
        material=None if agent_color is None else (balance if agent_color == "white" else -balance),
        hanging=attacked_undefended(board, chess.WHITE) + attacked_undefended(board, chess.BLACK),
        checks=sorted(checks),
        mates_in_one=sorted(mates),
        captures=sorted(captures),
    )
