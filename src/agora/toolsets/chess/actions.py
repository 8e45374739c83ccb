"""The next call each reply names: `next_action` for every status and seat, and the fixed
next actions of a wait cut short by shutdown (`RECONNECT`) or one for the human's next game
that none answered (`NEXT_GAME`, `NEXT_GAME_NO_PAGE`). Pure: no I/O, no trio.
"""

from __future__ import annotations

from typing import Any, Final

from agora.toolsets.chess.replies import NextAction, Seat, StatusCode
from agora.toolsets.chess.terms import DRAW_MARK

_MOVE_TEMPLATE: Final = {"from": "<square>", "to": "<square>", "note": "<why>"}

#: The next action of a wait cut short by shutdown: the client (or the stdio relay)
#: reconnects by itself if the server is back, so the agent only waits and calls again. A
#: SIGTERM may stop the server for good: nothing promises a restart.
RECONNECT: Final = (
    "The server is shutting down: wait a few seconds and call wait_for_turn again; if it"
    " restarted, that call is answered (your client or relay reconnects by itself)."
)


#: The next action of a wait for the human's next game that ended with none started.
NEXT_GAME: Final = NextAction(
    "wait_for_turn",
    {"wait_for_human": True},
    "No new game has started yet. To keep waiting for the human's next game, call"
    " wait_for_turn with wait_for_human true again; to stop playing, stop.",
)
#: `NEXT_GAME` while no page of the human's is open (a human playing through the page's
#: POST API has none, so nothing says the human left).
NEXT_GAME_NO_PAGE: Final = NextAction(
    "wait_for_turn",
    {"wait_for_human": True},
    "No new game has started yet, and no page of the human's is open: call wait_for_turn with"
    " wait_for_human true again to keep waiting for the human's next game, or stop and tell"
    " your user that no page of the human's is open.",
)


def next_action(
    status: StatusCode, wait_for_human: bool = False, seat: Seat = "agent"
) -> NextAction:
    """The exact call the caller in ``seat`` should make next in ``status``."""
    if seat == "watcher" and status not in ("GAME_OVER", "TABLE_NOT_FOUND"):
        return NextAction(
            "wait_for_turn",
            {},
            "You are watching (no agent token): call wait_for_turn to see the next change.",
        )
    match status:
        case "SIDE_CHOICE_REQUIRED":
            return NextAction(
                "wait_for_turn",
                {"wait_for_human": True},
                "Call wait_for_turn with wait_for_human true: it waits for the human's choice"
                " of sides (without it, wait_for_turn answers this at once).",
            )
        case "AGENT_TURN":
            return NextAction(
                "move_piece",
                dict(_MOVE_TEMPLATE),
                # The seed's move_piece description (kept verbatim) says nothing of draws,
                # and an agent that starts at wait_for_turn never reads join_game's contract.
                "from: a legalMoves key; to: one of its squares; a 5th letter goes in promotion. "
                f"{DRAW_MARK} in the note offers or accepts a draw.",
            )
        case "HUMAN_TURN":
            return NextAction("wait_for_turn", {}, "The human is to move; wait for your turn.")
        case "WAIT_TIMEOUT":
            args: dict[str, Any] = {"wait_for_human": True} if wait_for_human else {}
            return NextAction("wait_for_turn", args, "Nothing new yet; call wait_for_turn again.")
        case "AGENT_TOKEN_REQUIRED":
            return NextAction(
                None,
                {},
                "Only the seated agent may move: reconnect to the table's chess endpoint,"
                " /mcp/chess/<table>?token=<the table's agent token> (the human's page shows"
                " that URL). Until then you may watch with get_board and wait_for_turn.",
            )
        case "AGENT_TOKEN_INVALID":
            return NextAction(
                None,
                {},
                "Every tool refuses this endpoint's token (wrong, or replaced by the human)."
                " Reconnect with ?token=<the table's current agent token, shown to the human on"
                " the page> to play, or without ?token= to watch.",
            )
        case "INVALID_ARGUMENTS":
            return NextAction(
                "get_board",
                {},
                "Re-read the board, then call again with arguments from legalMoves.",
            )
        case "TABLE_NOT_FOUND":
            return NextAction(None, {}, "Ask the human for the table's agent endpoint.")
        case "SERVER_ERROR":
            return NextAction(
                "get_board", {}, "Nothing was changed: re-read the board, then act on it."
            )
        case _:
            return NextAction(
                None,
                {},
                "The game is over; stop. To play the human's next game instead, call"
                " wait_for_turn with wait_for_human true: it answers when one starts (or"
                " says GAME_OVER again at its timeout).",
            )
