"""Checking a published card offline: its hash, its signature, whose key signed it; and
reading a seal's export bundle, whose transcript must chain to the card's transcript hash.

What a reader runs (``agora cards verify``, `cards_cli`) on bytes it was handed; docs/evidence.md
says the same steps in words, for readers checking with their own code. Pure: no store, no
network (the caller fetches), no printing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.toolsets import strict_json
from agora.toolsets.chamber import signing
from agora.toolsets.chamber.cards import (
    SCHEME,
    SIGNED_STATUS,
    CardFormatError,
    canonical,
    sha256_tag,
    statement,
)
from agora.toolsets.chamber.transcript import chain, genesis

if TYPE_CHECKING:
    from collections.abc import Collection


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
    evidence only when that key is one the reader trusts (``trusted_keys``). Trust goes by
    the whole public key: a key id is a 64-bit label another key can be made to share.

    Args:
        data: The document bytes (any JSON formatting; the body is re-canonicalized).
        trusted_keys: Public keys (64 hex digits) the reader trusts.

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
    trusted = good and str(public).lower() in {k.lower() for k in trusted_keys}
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
