"""Evidence 0.2 cards: building a sealed attempt's card, publishing it, verifying it offline.

A card body is RFC 8785 canonical JSON, written once and stored as bytes; it never changes. The
published document wraps those exact bytes: ``{"card": <body>, "card_sha256": ...,
"evidence_status": ..., "signature": {...} | null}`` (keys in canonical order, so the document
is canonical too). The signature is Ed25519 over a statement naming the body's hash, the key id,
the signing time and the evidence status; signing later only adds the signature, never touches
the body. A valid signature counts only with a trusted key. Cards sealed under 0.2.0 are kept as
the bytes they arrived as. This module is pure apart from `signing`'s crypto; it must not touch
the store.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import rfc8785

from agora.toolsets import strict_json
from agora.toolsets.chamber import signing
from agora.toolsets.chamber.attempt import iso
from agora.toolsets.chamber.transcript import chain, genesis

if TYPE_CHECKING:
    from collections.abc import Collection

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
    """The public document of a card: its exact body bytes plus hash and signature."""
    status = "signed" if signature else "pending_signature"
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


@dataclass(frozen=True, slots=True)
class Verification:
    """The result of checking a card document offline.

    Attributes:
        card_id: The card's id, if it has one.
        toolset_id: The toolset the card is bound to.
        hash_ok: The body hashes to ``card_sha256``.
        signature: ``valid``, ``invalid`` or ``missing``.
        key_id: The signing key's id, when signed.
        trusted: Whether the signing key is one the reader trusts.
        status_signed: Whether the evidence status is inside the signed part (cards signed
            before `SCHEME` existed sign the body alone).
        unsigned: Fields the document carries beside the card, its hash and its signature
            (``signature.X`` for one in the signature block), which nothing vouches for and a
            reader might take for the card's own.
    """

    card_id: str | None
    toolset_id: str | None
    hash_ok: bool
    signature: str
    key_id: str | None = None
    trusted: bool = False
    status_signed: bool = False
    unsigned: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Hash right, signature valid, the key trusted, and no field beside them."""
        return self.hash_ok and self.signature == "valid" and self.trusted and not self.unsigned


#: The members of a published document (`publish`) and of its signature block
#: (`signature_block`): any other is covered by neither the hash nor the signature.
DOCUMENT_KEYS = frozenset({"card", "card_sha256", "evidence_status", "signature"})
SIGNATURE_KEYS = frozenset(
    {"alg", "evidence_status", "key_id", "public_key", "scheme", "signed_at", "value"}
)


def _signature_valid(doc: dict[str, Any], body: bytes, sig: dict[str, Any]) -> tuple[bool, bool]:
    """(signature valid, evidence status signed) of a signature block."""
    public = str(sig.get("public_key", ""))
    try:
        named = sig.get("key_id") == signing.key_id(public)
    except ValueError:
        named = False
    if not named:
        return False, False
    value = str(sig.get("value", ""))
    if "scheme" not in sig:
        return signing.verify(public, value, body), False
    if sig.get("scheme") != SCHEME or doc.get("evidence_status") != SIGNED_STATUS:
        return False, False
    if sig.get("evidence_status") != SIGNED_STATUS:
        return False, False
    signed = statement(sha256_tag(body), str(sig["key_id"]), str(sig.get("signed_at", "")))
    return signing.verify(public, value, signed), True


@dataclass(frozen=True, slots=True)
class Bundle:
    """A seal's export bundle as read: its card document and its transcript records.

    Attributes:
        document: The card document (as `verify_document` reads it).
        transcript: The records, in order; None when the bundle says the session had
            retired (and has none).
    """

    document: bytes
    transcript: list[Any] | None


#: The keys of a seal's export bundle, all of them and no other (`read_bundle`).
BUNDLE_KEYS = frozenset({"document", "evidence_status", "transcript", "transcript_retired"})


def read_bundle(data: bytes) -> Bundle | None:
    """``data`` as a seal's export bundle (``seal_attempt``'s ``export_bundle``, saved as it
    came); None if it is a card document instead (it has a ``card``).

    Raises:
        CardFormatError: not JSON, a key given twice in one object, or neither a card
            document nor a well-formed bundle: a bundle has exactly `BUNDLE_KEYS`; one whose
            transcript is retired has no records, any other has a list of them.
    """
    doc = _strict(data)
    if not isinstance(doc, dict) or "card" in doc:
        return None  # a card document, or not a document at all: `verify_document` says
    if set(doc) != BUNDLE_KEYS or not isinstance(doc["document"], dict):
        raise CardFormatError(
            f"neither a card document nor an export bundle ({sorted(BUNDLE_KEYS)})"
        )
    if doc["evidence_status"] != doc["document"].get("evidence_status"):
        raise CardFormatError("the bundle's evidence_status is not its document's")
    retired, records = doc["transcript_retired"], doc["transcript"]
    if retired is True and records in ([], None):
        return Bundle(json.dumps(doc["document"]).encode(), None)
    if retired is not False or not isinstance(records, list):
        raise CardFormatError("an export bundle's transcript is a list, or retired and empty")
    return Bundle(json.dumps(doc["document"]).encode(), records)


def transcript_matches(card: dict[str, Any], records: list[Any]) -> bool:
    """Whether ``records``, chained from the card's seed commitment, give its transcript hash
    and length (`agora.toolsets.chamber.transcript`)."""
    if not all(isinstance(r, dict) for r in records):
        return False
    head = genesis(str(card.get("seed_commitment", "")))
    try:
        for record in records:
            head, _ = chain(head, record)
    except (TypeError, ValueError):  # a value RFC 8785 cannot encode
        return False
    length_ok = card.get("transcript_length") == len(records)
    return length_ok and card.get("transcript_hash") == "sha256:" + head


def _strict(data: bytes) -> Any:
    try:
        return strict_json.loads(data)
    except strict_json.DuplicateKey as twice:
        # Readers keeping the first value would see another card than the one checked.
        raise CardFormatError(f"the key {twice.args[0]!r} appears twice in one object") from None
    except ValueError as exc:
        raise CardFormatError(f"not JSON: {exc}") from exc


def verify_document(data: bytes, trusted_keys: Collection[str] = ()) -> Verification:
    """Re-check a published card document: its hash, its signature, and whose key signed it.

    A valid signature proves only that the holder of *some* key signed the card; it is
    evidence only when that key is one the reader trusts (``trusted_keys``).

    Args:
        data: The document bytes (any JSON formatting; the body is re-canonicalized).
        trusted_keys: Public keys (hex) or key ids the reader trusts.

    Returns:
        The verification result.

    Raises:
        CardFormatError: if ``data`` is not a card document.
    """
    doc = _strict(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("card"), dict):
        raise CardFormatError("no card object")
    card = doc["card"]
    if not (isinstance(card.get("card_id"), str) and isinstance(card.get("toolset_id"), str)):
        # A signature checks out over other signed bytes too (a statement): only a card is one.
        raise CardFormatError("the card object has no card_id and toolset_id: not a card")
    body = canonical(card)
    hash_ok = doc.get("card_sha256") == sha256_tag(body)
    sig = doc.get("signature")
    if not sig:
        return Verification(card.get("card_id"), card.get("toolset_id"), hash_ok, "missing")
    if not isinstance(sig, dict) or sig.get("alg") != signing.ALGORITHM:
        return Verification(card.get("card_id"), card.get("toolset_id"), hash_ok, "invalid")
    good, status_signed = _signature_valid(doc, body, sig)
    public = sig.get("public_key")
    trusted = good and (public in trusted_keys or sig.get("key_id") in trusted_keys)
    unsigned = sorted(doc.keys() - DOCUMENT_KEYS) + [
        f"signature.{k}" for k in sorted(sig.keys() - SIGNATURE_KEYS)
    ]
    return Verification(
        card.get("card_id"),
        card.get("toolset_id"),
        hash_ok,
        "valid" if good else "invalid",
        sig.get("key_id"),
        trusted,
        status_signed,
        tuple(unsigned),
    )
