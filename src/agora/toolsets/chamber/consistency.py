"""Whether a card's figures can be true together, and whether its transcript gives them.

A signature says who sealed a card, not that its figures are possible: a process whose
database was edited (``agora stdio --db`` on the participant's own machine) would sign "solved,
4 of 3 locks, 0 actions" as readily as a real run. The seal (`entity`) and ``agora cards sign``
refuse to sign a card `contradictions` finds fault with, and ``agora cards verify`` reports the
same faults, and those `transcript_contradictions` finds between an export bundle's records and
its card, as making the card not genuine. Each check reads only fields the card has (cards sealed
under 0.2.0 carry fewer), so an old card is judged by what it says.

Such a card is `CONTRADICTORY` for good (`body_faults` reads a stored body): its document says
so as its ``evidence_status``, its attempt is ``quarantined`` (`sealed_state`), its page says
why, and the board never counts it. Pure: no I/O.
"""

from __future__ import annotations

import functools
import json
from typing import Any

#: The ``evidence_status`` of an unsigned card whose figures contradict each other: no key
#: will ever sign it (``pending_signature`` would say a signature is only waiting).
CONTRADICTORY = "contradictory"

#: Hints a lock gives at most (README: "up to 3 hints per lock").
HINTS_PER_LOCK = 3


def _count(card: dict[str, Any], *path: str) -> float | None:
    """The number at ``path`` in ``card`` (None if absent or not a number)."""
    value: Any = card
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def contradictions(card: dict[str, Any]) -> list[str]:
    """What in ``card``'s figures cannot be true together, in words (none: consistent).

    Args:
        card: A card body (the ``card`` member of a document).

    Returns:
        One sentence per contradiction found.
    """
    return [*_negatives(card), *_locks(card), *_actions(card), *_labels(card)]


@functools.lru_cache(maxsize=1024)
def body_faults(body: bytes) -> tuple[str, ...]:
    """`contradictions` of a stored card body (its canonical bytes, which never change);
    none for bytes that are no card object."""
    try:
        card = json.loads(body)
    except ValueError:
        return ()
    return tuple(contradictions(card)) if isinstance(card, dict) else ()


def evidence_status(body: bytes, signed: bool) -> str:
    """A card's ``evidence_status``: ``signed``, `CONTRADICTORY` (never to be signed), or
    ``pending_signature`` (a key may sign it later)."""
    if signed:
        return "signed"
    return CONTRADICTORY if body_faults(body) else "pending_signature"


def sealed_state(outcome: str, body: bytes, signed: bool, quarantined: bool) -> str:
    """The contract's ``attempt_state`` of a sealed attempt: ``quarantined`` (by an operator,
    or set apart because its card's figures contradict each other), ``expired``, then
    ``sealed`` (signed) or ``pending_signature``."""
    if quarantined or body_faults(body):
        return "quarantined"
    if outcome == "expired":
        return "expired"  # published, but the contract's word for it stays expired
    return "sealed" if signed else "pending_signature"


def unsigned_note(faults: tuple[str, ...] | list[str]) -> str:
    """What a seal's reply says of a card left unsigned for good (``note``)."""
    return (
        f"This card will never be signed, and the board does not count it: its figures"
        f" contradict each other ({'; '.join(faults)}). The attempt's stored figures were"
        " changed outside play (was the server's database edited?). Enter a new attempt for"
        " a card that counts."
    )


def _negatives(card: dict[str, Any]) -> list[str]:
    names = ("actions_used", "hints_used", "wrong_submissions", "transcript_length")
    found = [(n, _count(card, n)) for n in (*names, "elapsed_seconds")]
    found.append(("locks.opened", _count(card, "locks", "opened")))
    return [f"{n} is negative ({v})" for n, v in found if v is not None and v < 0]


def _locks(card: dict[str, Any]) -> list[str]:
    opened, total = _count(card, "locks", "opened"), _count(card, "locks", "total")
    if opened is None or total is None:
        return []
    found = []
    if opened > total:
        found.append(f"{opened} locks opened of a room that has {total}")
    outcome = card.get("outcome")
    if outcome == "solved" and opened != total:
        found.append(f"solved with {opened} of {total} locks opened")
    if outcome == "failed" and opened >= total:
        found.append(f"failed with every lock ({opened} of {total}) opened")
    hints = _count(card, "hints_used")
    if hints is not None and hints > HINTS_PER_LOCK * total:
        found.append(f"{hints} hints in a room of {total} locks ({HINTS_PER_LOCK} each at most)")
    return found


def _actions(card: dict[str, Any]) -> list[str]:
    actions = _count(card, "actions_used")
    if actions is None:
        return []
    found = []
    limit, records = _count(card, "action_limit"), _count(card, "transcript_length")
    if limit is not None and actions > limit:
        found.append(f"{actions} actions used of a limit of {limit}")
    if records is not None and records != actions:
        found.append(f"{records} transcript records for {actions} actions (one each)")
    opened, wrong = _count(card, "locks", "opened"), _count(card, "wrong_submissions")
    hints = _count(card, "hints_used")
    spent = [v for v in (opened, wrong, hints) if v is not None]
    if len(spent) == 3 and sum(spent) > actions:
        found.append(
            f"{opened} locks opened, {wrong} wrong submissions and {hints} hints take more"
            f" than the {actions} actions used (each takes one)"
        )
    return found


def _labels(card: dict[str, Any]) -> list[str]:
    found = []
    source = card.get("seed_source")
    if "practice" in card and source is not None and card["practice"] is not (source != "server"):
        found.append(f"practice {card['practice']} with seed_source {source}")
    outcome = card.get("outcome")
    if card.get("sealed_by") == "expiry" and outcome not in ("expired", "solved"):
        found.append(f"sealed by the expiry with outcome {outcome}")
    return found


def transcript_contradictions(card: dict[str, Any], records: list[Any]) -> list[str]:
    """What an export bundle's ``records`` say against ``card``'s figures (none: they agree).

    Every action is one record; a submission's record says ``accepted`` true or false.
    """
    found: list[str] = []
    rows = [r for r in records if isinstance(r, dict)]
    accepted = sum(1 for r in rows if r.get("accepted") is True)
    refused = sum(1 for r in rows if r.get("accepted") is False)
    opened, wrong = _count(card, "locks", "opened"), _count(card, "wrong_submissions")
    actions = _count(card, "actions_used")
    if actions is not None and len(records) != actions:
        found.append(f"{len(records)} transcript records for {actions} actions")
    if opened is not None and accepted != opened:
        found.append(f"{accepted} accepted submissions in the transcript, {opened} locks opened")
    if wrong is not None and refused != wrong:
        found.append(f"{refused} refused submissions in the transcript, {wrong} wrong ones")
    return found
