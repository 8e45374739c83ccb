"""What a seal produced and how it is answered: `SealOutcome`, `seal_reply`, `RetiredCard`.

The attempt entity answers `Seal` (and a repeated seal) with a `SealOutcome`; the handler
turns it into the ``seal_attempt`` reply with `seal_reply`, given the card's signature as
now committed. `RetiredCard` is what remains of an attempt past retention: its card and
owner, so the handle -> card link outlives the session. Pure data and formatting: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.toolsets.chamber import cards
from agora.toolsets.chamber.consistency import (
    CONTRADICTORY,
    body_faults,
    evidence_status,
    sealed_state,
    unsigned_note,
)
from agora.toolsets.chamber.replies import failure

if TYPE_CHECKING:
    from agora.toolsets.chamber.attempt import SealedCard


@dataclass(frozen=True, slots=True)
class SealOutcome:
    """What a seal (or a repeated seal) produced; `seal_reply` turns it into the reply."""

    envelope: dict[str, Any]
    card: SealedCard
    already_sealed: bool
    quarantined: bool
    handle: str
    transcript: tuple[bytes, ...] = ()
    include_export_bundle: bool = False
    key_broken: bool = False
    transcript_retired: bool = False
    #: Why the card was left unsigned though a key was at hand: its figures contradict each
    #: other (`consistency.contradictions`).
    contradictions: tuple[str, ...] = ()


def seal_reply(
    outcome: SealOutcome, signature: dict[str, Any] | None, public_url: str = ""
) -> dict[str, Any]:
    """The ``seal_attempt`` reply for ``outcome``, given the card's current signature.

    Args:
        outcome: The entity's answer to `Seal`.
        signature: The card's signature as now committed (it may have been added by an
            operator since the entity loaded).
        public_url: The server's base URL, so that ``card_url`` is one an agent can open
            (empty in an embedded server that has none: the URL is then a path).

    Returns:
        The ``ok: true`` reply.

    Raises:
        ToolError: ``signature_unavailable`` (a configured key could not be used); it still
            carries the card fields, because the card exists.
    """
    card = outcome.card
    status = evidence_status(card.body, signature is not None)
    state = sealed_state(card.outcome, card.body, signature is not None, outcome.quarantined)
    fields = {
        "attempt_handle": outcome.handle,
        "attempt_state": state,
        "already_sealed": outcome.already_sealed,
        "card_id": outcome.card.card_id,
        "card_url": f"{public_url.rstrip('/')}/cards/{outcome.card.card_id}",
        "evidence_status": status,
        "outcome": outcome.card.outcome,
    }
    if status == CONTRADICTORY:
        # Never to be signed: a broken key changes nothing, and the reply says why.
        fields["note"] = unsigned_note(body_faults(card.body))
    elif outcome.key_broken and not signature:
        raise failure(
            "signature_unavailable",
            "The card is sealed, but the configured signing key could not be used.",
            "Nothing to redo: the card exists and an operator will sign it (agora cards sign).",
            **fields,
        )
    reply = {**outcome.envelope, **fields, "card": json.loads(outcome.card.body)}
    if outcome.include_export_bundle:
        # The bundle is an extra fold: unsigned, it says so, and the seal stands either way.
        reply["export_bundle"] = {
            "evidence_status": status,
            "document": json.loads(cards.publish(outcome.card.body, signature)),
            "transcript": [json.loads(r) for r in outcome.transcript],
            "transcript_retired": outcome.transcript_retired,
        }
    return reply


@dataclass(frozen=True, slots=True)
class RetiredCard:
    """The card of an attempt whose session is past retention: the handle's link to it."""

    card: SealedCard
    principal: str
    suite_id: str
    quarantined: bool
