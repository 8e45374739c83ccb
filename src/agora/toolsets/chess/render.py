"""Turn a table `Snapshot` into the agent's replies.

Decides the statusCode and the exact nextAction for each state and seat, and fills every
field of `agora.toolsets.chess.replies`. The board details (picture, legal moves, SAN, the
evaluation guide) are read from the snapshot's FEN with python-chess. Pure: no I/O, no
trio, and no rule decisions (those belong to `agora.toolsets.chess.game`).

A refused command's body is `agora.toolsets.chess.refusals`; the refusal of arguments that
fail the inputSchema is `agora.toolsets.chess.arguments`.
What is read off a position, and memoised, lives in `agora.toolsets.chess.position`;
here only the per-reply parts: the status, the message and the result (the next action
each status names is `agora.toolsets.chess.actions`);
`agora.toolsets.chess.fit` keeps a ``move_piece`` or ``wait_for_turn`` reply within its
byte budget.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.chess.actions import NEXT_GAME, NEXT_GAME_NO_PAGE, RECONNECT, next_action
from agora.toolsets.chess.fit import fit
from agora.toolsets.chess.game import Result, declined_by_agent, declined_draw
from agora.toolsets.chess.guide import CONTRACT, evaluation_guide
from agora.toolsets.chess.notes import shown_note
from agora.toolsets.chess.position import POSITION_CACHE, movetext, pieces, position
from agora.toolsets.chess.replies import (
    PROTOCOL_VERSION,
    BoardReply,
    GameResult,
    HumanSeat,
    JoinReply,
    LastMove,
    MoveReply,
    NextAction,
    Ownership,
    Seat,
    StatusCode,
    WaitReply,
)
from agora.toolsets.chess.sessions import SHARED_SEAT

if TYPE_CHECKING:
    from agora.toolsets.chess.guide import EvaluationGuide
    from agora.toolsets.chess.snapshot import Snapshot
    from agora.toolsets.chess.terms import ColorName, Role
    from agora.toolsets.chess.waiting import WaitCondition

_STATUS: Final[dict[str, StatusCode]] = {
    "side_choice": "SIDE_CHOICE_REQUIRED",
    "agent_turn": "AGENT_TURN",
    "human_turn": "HUMAN_TURN",
    "over": "GAME_OVER",
}
#: A result reason in words: "won by checkmate", "drawn by agreement".
REASON_WORDS: Final = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient_material": "insufficient material",
    "seventyfive_moves": "the 75-move rule",
    "fivefold_repetition": "fivefold repetition",
    "fifty_moves": "the 50-move rule",
    "threefold_repetition": "threefold repetition",
    "resignation": "resignation",
    "agreement": "agreement",
    "abandoned": "a new game",
}


def status_code(snap: Snapshot) -> StatusCode:
    """The statusCode of a snapshot (never WAIT_TIMEOUT, which only a wait can produce)."""
    return _STATUS[snap.phase]


def ownership(agent_color: ColorName | None) -> Ownership:
    """Who plays which colour."""
    if agent_color is None:
        return Ownership(white=None, black=None)
    agent: Role = "agent"
    human: Role = "human"
    white, black = (agent, human) if agent_color == "white" else (human, agent)
    return Ownership(white=white, black=black)


def _winner_role(result: Result, agent_color: ColorName | None) -> Role | None:
    if result.winner is None or agent_color is None:
        return None
    return "agent" if result.winner == agent_color else "human"


def _outcome(result: Result, agent_color: ColorName | None) -> str:
    """``1-0: white (agent) wins by checkmate``, ``1/2-1/2: drawn by agreement``."""
    how = REASON_WORDS[result.reason]
    if result.winner is None:
        return f"{result.score}: drawn by {how}"
    return f"{result.score}: {result.winner} ({_winner_role(result, agent_color)}) wins by {how}"


def missed_text(snap: Snapshot) -> str:
    """What the agent is told first about the game it missed the end of (``snap.missed``,
    replaced since by ``snap``'s), or "" if none."""
    missed = snap.missed
    if missed is None:
        return ""
    result = missed.result
    if result is None or result.reason == "abandoned":
        ended = "the human abandoned it (no result: *)"
    else:
        ended = f"it ended {_outcome(result, missed.agent_color)}"
    number = snap.game_number
    return f"Game {missed.number} is over: {ended}; this is game {number}, the human's new game."


def game_result(snap: Snapshot) -> GameResult | None:
    """The result of a finished game, with who won in the players' terms."""
    result = snap.result
    if result is None:
        return None
    role = _winner_role(result, snap.agent_color)
    summary = _outcome(result, snap.agent_color) + "."
    if result.reason == "abandoned":
        summary = "Abandoned: the human started a new game."
    return GameResult(
        score=result.score,
        reason=result.reason,
        winner=result.winner,
        winner_role=role,
        summary=summary,
    )


def _message(
    snap: Snapshot, status: StatusCode, seat: Seat, result: GameResult | None, shutting_down: bool
) -> str:
    match status:
        case "SIDE_CHOICE_REQUIRED":
            text = "The human has not chosen sides yet."
        case "AGENT_TURN":
            text = f"Your move as {snap.agent_color}."
            if seat == "watcher":
                text = f"The agent ({snap.agent_color}) is to move."
        case "HUMAN_TURN":
            text = "The human is to move."
        case "WAIT_TIMEOUT" if shutting_down:
            text = "The server is shutting down; nothing changed before it did."
        case "WAIT_TIMEOUT":
            text = "No change before the timeout."
        case _:
            text = f"Game over. {result.summary if result else ''}".strip()
    text += _draw_text(snap, seat)
    if seat == "watcher":
        text += " You are watching: moves need the table's agent token."
    elif snap.agent_shared:
        text += f" {SHARED_SEAT}"
    if snap.missed is not None:
        text = f"{missed_text(snap)} {text}"
    return text


def _draw_text(snap: Snapshot, seat: Seat) -> str:
    """What the reply says of draws: the human declined the agent's offer, the human offers
    one, or what the agent's own last move did to one."""
    text = ""
    if declined_draw(snap.moves) == "human" and snap.result is None:
        text += f" The human declined your draw offer by playing {snap.moves[-1].san}."
    if snap.draw_offer == "human":
        text += _offer_text(snap)
    elif seat == "agent" and snap.result is None and snap.moves and snap.moves[-1].by == "agent":
        text += _own_draw_text(snap)
    return text


def _own_draw_text(snap: Snapshot) -> str:
    """What the agent's own last move did to a draw: declined the human's offer (a move
    without (=) does, and an agent that meant to accept must hear it), or offered one."""
    if declined_by_agent(snap.moves, snap.declined_ply):
        return (
            f" Your move {snap.moves[-1].san} declined the human's draw offer (no (=) in its note)."
        )
    if snap.draw_offer == "agent":
        return " You offered a draw: the human accepts it on the page or declines it by moving."
    return ""


def _offer_text(snap: Snapshot) -> str:
    """The human's pending draw offer: how to accept it, and that a move declines it; said
    with the agent's move that passed it unseen (the agent had not been shown it)."""
    moves = snap.moves
    if moves and moves[-1].ply in snap.unseen_plies and snap.offer_sight_unknown:
        return (
            " The server restarted since the human offered a draw and cannot tell whether you"
            " saw this offer: it stands (this move did not decline it). Write (=) in your next"
            " move's note to accept; a move without (=) declines it."
        )
    if moves and moves[-1].by == "agent" and moves[-1].ply in snap.unseen_plies:
        return (
            " The human offered a draw after your last look at the board, so this move did not"
            " decline it: it stands. Write (=) in your next move's note to accept; a move"
            " without (=) declines it."
        )
    return " The human offers a draw; write (=) in your move note to accept."


@functools.lru_cache(maxsize=POSITION_CACHE)
def _guide(fen: str, agent_color: ColorName | None) -> EvaluationGuide:
    pos = position(fen)
    return evaluation_guide(pos.board, agent_color, pos.sans)


def _last_move(snap: Snapshot) -> LastMove | None:
    if not snap.moves:
        return None
    last = snap.moves[-1]  # the human's note as the page shows it (`notes`)
    note = shown_note(last.note) if last.by == "human" else last.note
    return LastMove(san=last.san, uci=last.uci, by=last.by, note=note)


def _fields(
    snap: Snapshot,
    status: StatusCode,
    seat: Seat,
    wait_for_human: bool = False,
    shutting_down: bool = False,
) -> dict[str, Any]:
    pos = position(snap.fen)
    may_move = seat == "agent" and snap.phase == "agent_turn"
    result = game_result(snap)
    action = next_action(status, wait_for_human, seat)
    if shutting_down:
        action = NextAction("wait_for_turn", action.arguments, RECONNECT)
    return {
        "ok": True,
        "protocol_version": PROTOCOL_VERSION,
        "status_code": status,
        "message": _message(snap, status, seat, result, shutting_down),
        "next_action": action,
        "agent_may_move": may_move,
        "seat": seat,
        "table": snap.table,
        "game_number": snap.game_number,
        "fen": snap.fen,
        "board": pos.picture,
        "side_to_move": pos.side_to_move,
        "in_check": pos.in_check,
        "agent_color": snap.agent_color,
        "last_move": _last_move(snap),
        "legal_moves": pos.legal_by_square if may_move else {},
        "draw_offer": snap.draw_offer,
        "draw_declined": declined_draw(snap.moves) == "human" and snap.result is None,
        "result": result,
    }


def human_presence(snap: Snapshot) -> HumanSeat:
    """Whether the human's page is connected now, or they came and left, or never came."""
    if snap.human_connected:
        return "connected"
    return "away" if snap.human_came else "absent"


def join_reply(snap: Snapshot, seat: Seat) -> JoinReply:
    """The ``join_game`` reply."""
    return JoinReply(
        **_fields(snap, status_code(snap), seat),
        history=movetext(snap.moves),
        collaboration_contract=CONTRACT,
    )


def board_reply(snap: Snapshot, seat: Seat) -> BoardReply:
    """The ``get_board`` reply."""
    return BoardReply(
        **_fields(snap, status_code(snap), seat),
        history=movetext(snap.moves),
        pieces=pieces(snap.fen),
        ownership=ownership(snap.agent_color),
        human=human_presence(snap),
        evaluation_guide=_guide(snap.fen, snap.agent_color),
    )


def move_reply(snap: Snapshot) -> MoveReply:
    """The ``move_piece`` reply: the board after the agent's move."""
    return fit(MoveReply(**_fields(snap, status_code(snap), "agent")))


def wait_reply(
    snap: Snapshot, condition: WaitCondition, seat: Seat, shutting_down: bool = False
) -> WaitReply:
    """The ``wait_for_turn`` reply; WAIT_TIMEOUT when ``condition`` is still unmet.

    A wait that began on an unfinished game which the human then replaced with a new one
    (the page's "New game") is answered GAME_OVER for the game it waited on: its last
    board, an abandoned result, and a next action to wait for the new game.

    ``shutting_down`` says the server began shutting down, which ends a parked wait at once
    with its latest snapshot. If that snapshot still leaves ``condition`` unmet, the
    WAIT_TIMEOUT is marked ``shuttingDown: true`` and its message and next action tell the
    caller to wait a few seconds (its client or relay reconnects by itself) before waiting
    again; a wait whose condition is met is not marked.
    """
    ready = condition(snap)
    first = condition.first
    if first is not None and first.game_number != snap.game_number and first.phase != "over":
        return fit(_abandoned_reply(first, snap, seat))
    if first is not None and first.missed is not None and snap.missed is None:
        snap = msgspec.structs.replace(snap, missed=first.missed)  # told at the wait's start
    status: StatusCode = status_code(snap) if ready else "WAIT_TIMEOUT"
    no_new_game = snap.phase == "over" and not ready  # a wait for the next game, unmet
    if snap.phase == "over":
        # A wait for the human's next game that timed out is still answered GAME_OVER, never
        # WAIT_TIMEOUT: an agent waiting there learns the game is over as any other would.
        ready, status = True, "GAME_OVER"
    cut_short = shutting_down and not ready
    for_sides = condition.for_sides and snap.phase == "side_choice"
    fields = _fields(snap, status, seat, condition.wait_for_human or for_sides, cut_short)
    if status == "SIDE_CHOICE_REQUIRED" and seat == "agent" and not for_sides:
        fields["message"] += " This call returned at once, without waiting."
    if status == "WAIT_TIMEOUT" and seat == "agent" and not cut_short and not snap.human_connected:
        fields["message"] += _human_gone(snap)
        args = fields["next_action"].arguments
        fields["next_action"] = NextAction("wait_for_turn", args, _KEEP_WAITING_OR_STOP)
    if no_new_game:  # it keeps its way to wait on: the agent chose to play the next game
        fields["message"] += " No new game yet: the human has not started one."
        fields["next_action"] = NEXT_GAME
        if seat == "agent" and not snap.human_connected:  # said as any other timed-out wait
            fields["message"] += _human_gone(snap)
            fields["next_action"] = NEXT_GAME_NO_PAGE
    guide = _guide(snap.fen, snap.agent_color) if fields["agent_may_move"] else None
    human = human_presence(snap)
    if cut_short:
        return fit(WaitReply(**fields, human=human, evaluation_guide=guide, shutting_down=True))
    return fit(WaitReply(**fields, human=human, evaluation_guide=guide))


#: The next action of a wait that timed out while no page of the human's is open.
_KEEP_WAITING_OR_STOP: Final = (
    "Nothing new yet, and no page of the human's is open: call wait_for_turn again to keep"
    " waiting, or stop and tell your user that no page of the human's is open."
)


def _human_gone(snap: Snapshot) -> str:
    """What a wait that timed out says of the human when no page of theirs is open."""
    if snap.human_left_at is not None:
        when = dt.datetime.fromisoformat(snap.human_left_at).astimezone(dt.UTC)
        gone = f"The human's page has been closed since {when:%Y-%m-%d %H:%M:%S} UTC"
    elif snap.human_came:
        gone = "No page of the human's is open"
    else:
        gone = "No page of the human's has been open since the server started"
    return f" {gone}: you may keep waiting, or stop and tell your user."


def _abandoned_reply(waited_on: Snapshot, now: Snapshot, seat: Seat) -> WaitReply:
    """GAME_OVER for ``waited_on``, the unfinished game the human replaced with ``now``'s."""
    ended = Result(score="*", reason="abandoned", winner=None, ended_at="")
    over = msgspec.structs.replace(waited_on, phase="over", result=ended, draw_offer=None)
    old, new = waited_on.game_number, now.game_number
    fields = _fields(over, "GAME_OVER", seat)
    fields["message"] = (
        f"Game over. The human abandoned game {old} (no result: *) and started game {new}."
    )
    fields["next_action"] = NextAction(
        "wait_for_turn",
        {"wait_for_human": True},
        f"Game {old} is over. To play game {new}, call wait_for_turn with wait_for_human"
        " true: it answers once the human has chosen sides. Otherwise stop.",
    )
    return WaitReply(**fields, human=human_presence(now), evaluation_guide=None)
