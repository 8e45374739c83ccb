"""Evidence 0.2 cards: building a sealed attempt's card, signing it, publishing it.

A card body is RFC 8785 canonical JSON, written once and stored as bytes; it never changes. The
published document wraps those exact bytes: ``{"card": <body>, "card_sha256": ...,
"evidence_status": ..., "signature": {...} | null}`` (keys in canonical order, so the document
is canonical too). The signature is Ed25519 over a statement naming the body's hash, the key id,
the signing time and the evidence status; signing later only adds the signature, never touches
the body. A valid signature counts only with a trusted key. Cards sealed under 0.2.0 are kept as
the bytes they arrived as. Checking a published card is `verify`'s. This module is pure apart
from `signing`'s crypto; it must not touch the store.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import rfc8785

from agora.toolsets.chamber import signing
from agora.toolsets.chamber.attempt import iso
from agora.toolsets.chamber.consistency import evidence_status

if TYPE_CHECKING:
    from agora.toolsets.chamber.attempt import Attempt

EVIDENCE_VERSION = "0.2"
CARD_KIND = "scoreia-chamber-card"


class CardFormatError(ValueError):
    """Bytes that are not a chamber card document."""


def sha256_tag(data: bytes) -> str:
    """``sha256:`` + hex digest of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def card_id_for(handle: str, sealed_at: dt.datetime) -> str:
    """The public id of the card of attempt ``handle`` (dated, not revealing the handle)."""
    digest = hashlib.sha256(f"scoreia-chamber-card\n{handle}".encode()).hexdigest()[:16]
    return f"card-{sealed_at.astimezone(dt.UTC):%Y%m%d}-{digest}"


@dataclass(frozen=True, slots=True)
class Sealing:
    """What the contract and the seal call add to a card besides the attempt itself."""

    outcome: str
    sealed_at: dt.datetime
    schema_bundle_hash: str
    notice_hash: str | None = None
    next_candidate: str | None = None
    quarantine_reason: str | None = None
    #: Who sealed: ``participant`` (seal_attempt), ``expiry`` (the server's sweep, when an
    #: attempt's TTL passed unsealed) or ``operator`` (quarantine).
    sealed_by: str = "participant"


def card_body(attempt: Attempt, sealing: Sealing) -> dict[str, Any]:
    """The card of ``attempt`` sealed as described by ``sealing``.

    Args:
        attempt: The attempt being sealed.
        sealing: Outcome, time and contract facts.

    Returns:
        The card body as a JSON-able dict.
    """
    end = min(sealing.sealed_at, attempt.expires_at)
    identity = {k: v for k, v in attempt.identity.items() if v}
    identity["assurance"] = attempt.assurance
    body: dict[str, Any] = {
        "evidence_version": EVIDENCE_VERSION,
        "kind": CARD_KIND,
        "card_id": card_id_for(attempt.handle, sealing.sealed_at),
        "toolset_id": attempt.rules.toolset_id,
        "sealed_at": iso(sealing.sealed_at),
        "date": f"{sealing.sealed_at.astimezone(dt.UTC):%Y-%m-%d}",
        "suite": {
            "id": attempt.suite_id,
            "generation": attempt.generation,
            "engine": attempt.engine,
        },
        "seed_commitment": attempt.seed_commitment,
        "seed_source": attempt.seed_source,
        "practice": attempt.seed_source != "server",
        "outcome": sealing.outcome,
        "locks": {"opened": attempt.opened, "total": len(attempt.room.locks)},
        "actions_used": attempt.action_index,
        "action_limit": attempt.rules.max_actions,
        "hints_used": attempt.hints_used,
        "wrong_submissions": attempt.wrong,
        "elapsed_seconds": max(0, int((end - attempt.created_at).total_seconds())),
        "identity": identity,
        "preflight": attempt.preflight,
        "schema_bundle_hash": sealing.schema_bundle_hash,
        "transcript_hash": "sha256:" + attempt.head,
        "transcript_length": len(attempt.transcript),
        "allies": [ally for ally, _ in attempt.allies],
        "sealed_by": sealing.sealed_by,
    }
    if attempt.seed_source != "server":
        # A chosen seed can be replayed: the unsalted room id links every run of one room.
        body["room_id"] = attempt.room_id
    if sealing.notice_hash:
        body["publication_notice"] = sealing.notice_hash
    if sealing.next_candidate:
        body["next_candidate"] = sealing.next_candidate
    if sealing.quarantine_reason is not None:
        body["quarantine"] = {"reason": sealing.quarantine_reason}
    return body


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical JSON bytes of ``value``."""
    return rfc8785.dumps(value)


#: The signature scheme of cards signed since the key URL: the signature covers a statement
#: naming the card's hash, the key and the evidence status. Signatures without a scheme
#: (cards signed before) cover the body bytes alone and stay verifiable as they are.
SCHEME = "scoreia-chamber-signed-card/1"
SIGNED_STATUS = "signed"


def statement(card_sha256: str, key_id: str, signed_at: str) -> bytes:
    """The canonical bytes a `SCHEME` signature covers."""
    return canonical(
        {
            "card_sha256": card_sha256,
            "evidence_status": SIGNED_STATUS,
            "key_id": key_id,
            "scheme": SCHEME,
            "signed_at": signed_at,
        }
    )


def signature_block(signer: signing.Signer, body: bytes, when: dt.datetime) -> dict[str, Any]:
    """Sign ``body`` (a card's canonical bytes) and describe the signature.

    The signed part names the body's hash, the key id, the signing time and the evidence
    status, so none of them can be edited without breaking the signature.
    """
    signed_at = iso(when)
    signed = statement(sha256_tag(body), signer.key_id, signed_at)
    return {
        "alg": signing.ALGORITHM,
        "evidence_status": SIGNED_STATUS,
        "key_id": signer.key_id,
        "public_key": signer.public_key_hex,
        "scheme": SCHEME,
        "signed_at": signed_at,
        "value": signer.sign(signed),
    }


def publish(body: bytes, signature: dict[str, Any] | None) -> bytes:
    """The public document of a card: its exact body bytes plus hash and signature (its
    ``evidence_status``: `consistency.evidence_status`)."""
    status = evidence_status(body, signature is not None)
    return b"".join(
        (
            b'{"card":',
            body,
            b',"card_sha256":',
            canonical(sha256_tag(body)),
            b',"evidence_status":',
            canonical(status),
            b',"signature":',
            canonical(signature),
            b"}",
        )
    )


def legacy_fields(document: bytes, legacy_toolset_id: str) -> tuple[str, str]:
    """The card id and UTC date of a 0.2.0 card document (flat or wrapped).

    Args:
        document: The card as it was published.
        legacy_toolset_id: The toolset id such cards are bound to.

    Returns:
        ``(card_id, "YYYY-MM-DD")``.

    Raises:
        CardFormatError: if it is not a card bound to ``legacy_toolset_id``.
    """
    try:
        doc = json.loads(document)
    except ValueError as exc:
        raise CardFormatError(f"not JSON: {exc}") from exc
    card = doc.get("card", doc) if isinstance(doc, dict) else None
    if not isinstance(card, dict) or card.get("toolset_id") != legacy_toolset_id:
        raise CardFormatError(f"not a card bound to {legacy_toolset_id}")
    card_id, sealed_at = card.get("card_id"), str(card.get("sealed_at", ""))
    if not isinstance(card_id, str) or len(sealed_at) < 10:
        raise CardFormatError("a legacy card needs card_id and sealed_at")
    return card_id, sealed_at[:10]
