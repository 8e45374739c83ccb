"""A generated room and everything an agent can read in it.

A `Room` is a title, objects and a chain of locks opened in order. Objects may be sealed
until an earlier lock opens; each lock's clues are spread over several objects. The functions
here render every observation: `look` (the room), `inspect` (one object in detail),
`summary` (what `observe_chamber` shows), `hint` (graded nudges) and the reply to a right
answer. They depend only on the room and how many locks are open, so the same room always
reads the same, and `look` and `inspect` (most of an agent's actions) keep each text they
made on the room. This module must not generate rooms, check answers or keep other state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping

    from agora.toolsets.chamber.lock import LockPuzzle

#: A wrong submission's observation: what it costs and what to do, never how near it was.
NOT_ACCEPTED = (
    "Not accepted: a wrong submission, counted on the card. Read the lock's clues again"
    " (inspect its objects) or ask for a hint."
)


@dataclass(frozen=True, slots=True)
class RoomObject:
    """One thing in the room.

    Attributes:
        id: What agents pass as ``object``.
        name: How text names it (``the ledger``).
        summary: One line, shown by ``look`` and ``observe_chamber``.
        flavor: The first line of ``inspect``.
        gate: How many locks must be open before it can be examined.
    """

    id: str
    name: str
    summary: str
    flavor: str
    gate: int = 0


@dataclass(frozen=True, slots=True)
class Lock:
    """One lock of the chain: its puzzle and where its clues are."""

    puzzle: LockPuzzle
    holders: tuple[str, ...]

    @property
    def op(self) -> str:
        """The submit op that opens it."""
        return self.puzzle.spec.op

    @property
    def label(self) -> str:
        """How observations name it."""
        return self.puzzle.spec.label

    @property
    def solved(self) -> str:
        """``<label> is solved``, the verb agreeing with the label's noun (``the master key
        depths are solved``: the only plural quantity ends in s)."""
        return f"{self.label} {'are' if self.puzzle.spec.quantity.endswith('s') else 'is'} solved"


@dataclass(frozen=True)
class Room:
    """A generated room.

    Attributes:
        suite: Suite id.
        template: Template id.
        title: Room title.
        intro: One paragraph setting the scene.
        objects: The objects, in display order.
        locks: The chain of locks, in the order they open.
        clues: Object id -> lock index -> clue sentences on that object.
    """

    suite: str
    template: str
    title: str
    intro: str
    objects: tuple[RoomObject, ...]
    locks: tuple[Lock, ...]
    clues: Mapping[str, Mapping[int, tuple[str, ...]]]
    #: Texts already rendered, by (render function, arguments): see `_kept`.
    _texts: dict[tuple[object, ...], str] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def object_ids(self) -> tuple[str, ...]:
        """Object ids in display order."""
        return tuple(o.id for o in self.objects)

    def object(self, object_id: str) -> RoomObject | None:
        """The object ``object_id``, or None if the room has no such object."""
        return next((o for o in self.objects if o.id == object_id), None)

    def current(self, opened: int) -> Lock | None:
        """The lock to open next, or None when all are open."""
        return self.locks[opened] if opened < len(self.locks) else None


def _status(room: Room, index: int, opened: int) -> str:
    lock = room.locks[index]
    if index < opened:
        return "open"
    if index != opened:
        return f"waiting: {lock.op} with value = {lock.puzzle.fmt.describe()}"
    # The lock to open now says exactly what its answer is (`lock.ANSWER_IS`): a time reckoned
    # from a faulty clock is the true time, which its label alone leaves to the reader.
    value = lock.puzzle.fmt.describe()
    return f"CURRENT: {lock.op} with value = {value}; the answer is {lock.puzzle.spec.answer_is}"


def _kept(room: Room, render: Callable[..., str], *args: Hashable) -> str:
    """``render(room, *args)``, made once per room and arguments and then kept on the room."""
    key = (render, *args)
    text = room._texts.get(key)
    if text is None:
        text = room._texts[key] = render(room, *args)
    return text


def look(room: Room, opened: int) -> str:
    """What ``look`` shows: the room, its objects and the state of each lock."""
    return _kept(room, _look, opened)


def _look(room: Room, opened: int) -> str:
    lines = [room.title, room.intro, "", "Objects (ids for inspect and observe_chamber):"]
    for obj in room.objects:
        sealed = ""
        if obj.gate > opened:
            sealed = f" (sealed until {room.locks[obj.gate - 1].solved})"
        lines.append(f"- {obj.id}: {obj.summary}{sealed}")
    lines.append("")
    lines.append("Locks, in the order they must be opened:")
    for i, lock in enumerate(room.locks):
        lines.append(f"{i + 1}. {lock.label}: {_status(room, i, opened)}")
    if opened >= len(room.locks):
        lines.append("Every lock is open: call seal_attempt.")
    return "\n".join(lines)


def summary(room: Room, object_id: str, opened: int, *, playing: bool = True) -> str:
    """What ``observe_chamber`` shows for one object (no clues); ``playing``: the attempt
    still takes actions (else nothing invites an inspect it would refuse)."""
    obj = room.object(object_id)
    if obj is None:
        raise KeyError(object_id)
    if obj.gate > opened:
        return f"{obj.summary} Sealed until {room.locks[obj.gate - 1].solved}."
    if not playing:
        return obj.summary
    return f"{obj.summary} Inspect it to examine it closely."


def inspect(room: Room, object_id: str, opened: int) -> str:
    """What ``inspect`` shows for one object: its clues, or that it is still sealed.

    Raises:
        KeyError: the room has no object ``object_id``.
    """
    return _kept(room, _inspect, object_id, opened)


def _inspect(room: Room, object_id: str, opened: int) -> str:
    obj = room.object(object_id)
    if obj is None:
        raise KeyError(object_id)
    if obj.gate > opened:
        # No verb agrees with the name: object names may be plural ("the key hooks").
        return f"Sealed until {room.locks[obj.gate - 1].solved}: {obj.name} cannot be examined yet."
    lines = [obj.flavor]
    for index, clues in sorted(room.clues.get(object_id, {}).items()):
        lines.append(f"Concerning {room.locks[index].label}:")
        lines.extend(f"- {clue}" for clue in clues)
    if len(lines) == 1:
        lines.append("Nothing here bears on the locks.")
    return "\n".join(lines)


#: Nudges per lock: where to look, then the lock's two graded hints.
HINT_LEVELS = 3


def gives_hint(room: Room, opened: int, level: int) -> bool:
    """Whether the ``level``-th hint call (1-based) on the current lock gives a nudge (a card
    counts only those: a call past the last nudge, or with every lock open, gives none)."""
    return room.current(opened) is not None and 1 <= level <= HINT_LEVELS


def hint(room: Room, opened: int, level: int) -> str:
    """The ``level``-th nudge (1-based) for the current lock."""
    lock = room.current(opened)
    if lock is None:
        return "Every lock is open: call seal_attempt."
    if level == 1:
        names = " and ".join(o.name for o in room.objects if o.id in lock.holders)
        return (
            f"Hint 1 for {lock.label}: its clues are on {names}; you need every one of them. "
            f"Answer with {lock.op}: {lock.puzzle.fmt.describe()}."
        )
    if 2 <= level <= HINT_LEVELS:
        return f"Hint {level} for {lock.label}: {lock.puzzle.hints[level - 2]}"
    return f"No further hints for {lock.label}."


def accepted(room: Room, opened_now: int) -> str:
    """The reply to a right answer, once ``opened_now`` locks are open."""
    lock = room.locks[opened_now - 1]
    lines = [f"Accepted: {lock.solved}."]
    freed = [o.id for o in room.objects if o.gate == opened_now]
    if freed:
        lines.append(f"Now unsealed: {', '.join(freed)}.")
    following = room.current(opened_now)
    if following is None:
        lines.append("Every lock is open: call seal_attempt.")
    else:
        lines.append(f"Next: {following.label}, solved with {following.op}.")
    return " ".join(lines)


def every_text(room: Room) -> list[str]:
    """Every observation the room can ever produce (for the no-verbatim-answer check)."""
    texts: list[str] = []
    for opened in range(len(room.locks) + 1):
        texts.append(look(room, opened))
        for obj in room.objects:
            texts.append(summary(room, obj.id, opened))
            texts.append(inspect(room, obj.id, opened))
        texts.extend(hint(room, opened, level) for level in range(1, 5))
        if opened:
            texts.append(accepted(room, opened))
    return texts
