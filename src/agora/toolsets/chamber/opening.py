"""The reply to an entry, with the room's part rendered ahead of time by the room pool.

`opening` renders what a just-created attempt's reply says of its room (title, objects, the
ops open before any lock, the lock count); the pool calls it in its worker thread. At entry,
`entry_reply` fills the attempt's fields around it without walking the room on the event
loop, and answers exactly what `Attempt.envelope` plus the room's title and objects answer,
key for key and in the same order. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.toolsets.chamber.attempt import OPEN_TOOLS, READ_OPS, iso

if TYPE_CHECKING:
    import datetime as dt

    from agora.toolsets.chamber.attempt import Attempt
    from agora.toolsets.chamber.room import Room


@dataclass(frozen=True, slots=True)
class Opening:
    """What a just-created attempt's reply says of its room."""

    title: str
    objects: tuple[str, ...]
    #: The ops allowed before any lock is open.
    ops: tuple[str, ...]
    locks_total: int


def opening(room: Room) -> Opening:
    """Render ``room``'s part of an entry reply."""
    lock = room.current(0)
    ops = (*READ_OPS, lock.op) if lock else READ_OPS
    return Opening(room.title, room.object_ids, ops, len(room.locks))


def entry_reply(a: Attempt, now: dt.datetime, pre: Opening | None = None) -> dict[str, Any]:
    """The reply to the entry that created ``a``: its envelope, the room's title and objects.

    With ``pre`` (``opening(a.room)``) and an attempt still as it was created, the fields are
    filled in from it; otherwise (no opening, or an attempt that is not fresh) they come the
    long way, from `Attempt.envelope` and the room.
    """
    fresh = (
        a.action_index == 0
        and a.opened == 0
        and a.card is None
        and now < a.expires_at
        and a.rules.max_actions > 0
    )
    if pre is None or not fresh or pre.locks_total == 0:
        room = a.room
        return {**a.envelope(now), "room": room.title, "objects": list(room.object_ids)}
    return {
        "ok": True,
        "attempt_handle": a.handle,
        "attempt_state": "created",
        "toolset_id": a.rules.toolset_id,
        "suite_id": a.suite_id,
        "action_index": 0,
        "remaining_actions": a.rules.max_actions,
        "allowed_ops": list(pre.ops),
        "allowed_next_tools": list(OPEN_TOOLS),
        "terminal": False,
        "must_seal": False,
        "expires_at": iso(a.expires_at),
        "locks_open": 0,
        "locks_total": pre.locks_total,
        "room": pre.title,
        "objects": list(pre.objects),
    }
