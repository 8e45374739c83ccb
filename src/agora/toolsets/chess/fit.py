"""A ``move_piece`` or ``wait_for_turn`` reply kept within `REPLY_BUDGET` bytes (`fit`).

An agent makes hundreds of such calls a game, so each reply has a byte budget; what a reply
can lose, it loses in order of need. Pure: the replies are `agora.toolsets.chess.render`'s.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

from agora.toolsets.chess.replies import REPLY_BUDGET, MoveReply, WaitReply


def reply_size(reply: msgspec.Struct) -> int:
    """Bytes of ``reply`` as compact UTF-8 JSON, as the result's text block carries it."""
    return len(msgspec.json.encode(reply))


_Fitted = TypeVar("_Fitted", MoveReply, WaitReply)


def fit(reply: _Fitted, budget: int = REPLY_BUDGET) -> _Fitted:
    """``reply`` cut to at most ``budget`` bytes, dropping the least needed part first.

    Most replies fit untouched. Otherwise the evaluation guide goes first (``get_board``
    still has it), then the echoed ``lastMove.note`` is shortened to end in "…". FEN,
    board, legal moves, status and next action are never cut: with them alone the largest
    reply (218 legal moves, every note and message at its longest) stays under the budget,
    which the tests check.
    """
    excess = reply_size(reply) - budget
    if excess <= 0:
        return reply
    if isinstance(reply, WaitReply) and reply.evaluation_guide is not None:
        reply = msgspec.structs.replace(reply, evaluation_guide=None)
        excess = reply_size(reply) - budget
        if excess <= 0:
            return reply
    last = reply.last_move
    if last is None or not last.note:
        return reply
    note = last.note
    while note and excess > 0:
        # A character costs 1 to 6 encoded bytes (UTF-8, JSON escapes): cut, re-measure.
        note = note[: len(note) - max(1, excess // 6)]
        reply = msgspec.structs.replace(
            reply, last_move=msgspec.structs.replace(last, note=note + "…")
        )
        excess = reply_size(reply) - budget
    return reply
