"""Checking a published card offline: its hash, its signature, whose key signed it; and
reading a seal's export bundle, whose transcript must chain to the card's transcript hash.

What a reader runs (``agora cards verify``, `cards_cli`) on bytes it was handed; docs/evidence.md
says the same steps in words, for readers checking with their own code. Pure: no store, no
network (the caller fetches), no printing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora.toolsets import strict_json
from agora.toolsets.chamber import signing, verify_shapes
from agora.toolsets.chamber.cards import (
    SCHEME,
    SIGNED_STATUS,
    CardFormatError,
    canonical,
    sha256_tag,
    statement,
)
from agora.toolsets.chamber.consistency import contradictions
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
        public_key: The signing key (64 hex digits, lower case), when the signature is valid.
        trusted: Whether the signing key is one the reader trusts.
        status_signed: Whether the evidence status is inside the signed part (cards signed
            before `SCHEME` existed sign the body alone).
        unsigned: Fields the document carries beside the card, its hash and its signature
            (``signature.X`` for one in the signature block), which nothing vouches for and a
            reader might take for the card's own.
        status: The document's ``evidence_status``, as written.
        reason: Why the signature is invalid ("" unless it is).
        practice: Why the card is no evidence of a fresh room (`practice_reason`), or "".
        outcome: The card's outcome.
        contradictions: What in the card's figures cannot be true together
            (`consistency.contradictions`): a card that says so is not genuine, signed or not.
    """

    card_id: str | None
    toolset_id: str | None
    hash_ok: bool
    signature: str
    key_id: str | None = None
    public_key: str | None = None
    trusted: bool = False
    status_signed: bool = False
    unsigned: tuple[str, ...] = ()
    status: Any = None
    reason: str = ""
    practice: str = ""
    outcome: Any = None
    contradictions: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Hash right, signature valid, the key trusted, no field beside them, and figures
        that can be true together."""
        signed = self.hash_ok and self.signature == "valid" and self.trusted
        return signed and not self.unsigned and not self.contradictions


#: The members of a published document (`publish`) and of its signature block
#: (`signature_block`): any other is covered by neither the hash nor the signature.
DOCUMENT_KEYS = frozenset({"card", "card_sha256", "evidence_status", "signature"})
SIGNATURE_KEYS = frozenset(
    {"alg", "evidence_status", "key_id", "public_key", "scheme", "signed_at", "value"}
)
_PUBLIC_KEY = re.compile(r"[0-9a-fA-F]{64}")


def practice_reason(card: dict[str, Any]) -> str:
    """Why ``card`` is no evidence of a fresh room ("" when the server drew its seed, or the
    card predates seed sources): what its card page and ``agora cards verify`` both say."""
    source = card.get("seed_source")
    if source is None or source == "server":
        return ""
    if source == "participant":
        return "the participant chose this room's seed, so the room may have been played before"
    return "this attempt began before the server recorded who drew its seed"


def _key_problem(sig: dict[str, Any]) -> str:
    """What is wrong with a signature block's algorithm or key ("" if nothing)."""
    if sig.get("alg") != signing.ALGORITHM:
        return f"alg {sig.get('alg')!r} not supported (only {signing.ALGORITHM})"
    public = sig.get("public_key")
    if not isinstance(public, str) or not _PUBLIC_KEY.fullmatch(public):
        return "public_key is not an Ed25519 public key (64 hex digits)"
    if sig.get("key_id") != signing.key_id(public):
        return "key_id does not match public_key"
    return ""


def _statement_problem(doc: dict[str, Any], sig: dict[str, Any]) -> str:
    """What keeps a `SCHEME` signature from covering this document's status ("" if nothing)."""
    if sig.get("scheme") != SCHEME:
        return f"scheme {sig.get('scheme')!r} not supported (only {SCHEME!r})"
    if sig.get("evidence_status") != SIGNED_STATUS:
        return (
            f"the signature block's evidence_status {sig.get('evidence_status')!r} differs from"
            f" the signed one ({SIGNED_STATUS!r})"
        )
    if doc.get("evidence_status") != SIGNED_STATUS:
        return (
            f"evidence_status differs from the signed one: the document says"
            f" {doc.get('evidence_status')!r}, the signature covers {SIGNED_STATUS!r}"
        )
    return ""


def _signature_problem(doc: dict[str, Any], body: bytes, sig: dict[str, Any]) -> str:
    """Why ``sig`` is not a valid signature of the card whose canonical bytes are ``body``
    in document ``doc``; "" when it is. Each check says what it found, so a reader learns
    which part was edited where that can be told (docs/evidence.md, "The checks").
    """
    problem = _key_problem(sig)
    if problem:
        return problem
    public, value = str(sig["public_key"]), str(sig.get("value", ""))
    if "scheme" not in sig:  # signed before the scheme: over the body bytes alone
        ok = signing.verify(public, value, body)
        return "" if ok else "the signature (over the card's bytes) does not cover this card"
    problem = _statement_problem(doc, sig)
    if problem:
        return problem
    key_id, at = str(sig["key_id"]), str(sig.get("signed_at", ""))
    if signing.verify(public, value, statement(sha256_tag(body), key_id, at)):
        return ""
    written = doc.get("card_sha256")
    if written != sha256_tag(body) and signing.verify(
        public, value, statement(str(written), key_id, at)
    ):
        return (
            "the card was edited after it was signed (the signature covers the card_sha256"
            " written beside it, not the card's hash)"
        )
    return "signed for another card hash (or its signed_at or value was edited)"


@dataclass(frozen=True, slots=True)
class Bundle:
    """A seal's export bundle as read: its card document and its transcript records.

    Attributes:
        document: The card document (as `verify_document` reads it).
        transcript: The records, in order; None when the bundle says the session had
            retired (and has none).
        extra: Members the bundle has beside its own four, which nothing vouches for.
    """

    document: bytes
    transcript: list[Any] | None
    extra: tuple[str, ...] = ()


#: Why a whole ``seal_attempt`` reply is refused: its ``card`` has no hash or signature
#: beside it, and its other fields are the reply's, not the card's.
SEAL_REPLY = (
    "a whole seal_attempt reply: save its export_bundle alone as JSON (seal with"
    " include_export_bundle: true) and verify that, or verify its card_url"
)

#: Why a bare card (a seal reply's ``card`` member, a document's ``card``) is refused: its
#: hash and signature are beside it, in the document, not inside it.
BARE_CARD = (
    "the bare card, without its hash and signature: check its document, the object"
    " {card, card_sha256, evidence_status, signature} that GET /cards/<id>?format=json"
    " serves and a seal's export_bundle holds as document (or that export_bundle itself)"
)

#: The keys of a seal's export bundle, all of them and no other (`read_bundle`).
BUNDLE_KEYS = frozenset({"document", "evidence_status", "transcript", "transcript_retired"})


def read_bundle(data: bytes) -> Bundle | None:
    """``data`` as a seal's export bundle (``seal_attempt``'s ``export_bundle``, saved as it
    came); None if it is a card document instead (it has a ``card``).

    Raises:
        CardFormatError: not JSON, a key given twice in one object, or neither a card
            document nor a well-formed bundle: a bundle has `BUNDLE_KEYS` (any other member
            is kept in `Bundle.extra`, for the checker to name); one whose transcript is
            retired has no records, any other has a list of them.
    """
    doc = _strict(data)
    if not isinstance(doc, dict) or "card" in doc:
        return None  # a card document, or not a document at all: `verify_document` says
    if isinstance(doc.get("card_id"), str) and isinstance(doc.get("toolset_id"), str):
        raise CardFormatError(BARE_CARD)
    if not doc.keys() >= BUNDLE_KEYS or not isinstance(doc["document"], dict):
        raise CardFormatError(verify_shapes.not_a_card(doc))
    extra = tuple(sorted(doc.keys() - BUNDLE_KEYS))
    if doc["evidence_status"] != doc["document"].get("evidence_status"):
        raise CardFormatError("the bundle's evidence_status is not its document's")
    retired, records = doc["transcript_retired"], doc["transcript"]
    if retired is True and records in ([], None):
        return Bundle(json.dumps(doc["document"]).encode(), None, extra)
    if retired is not False or not isinstance(records, list):
        raise CardFormatError("an export bundle's transcript is a list, or retired and empty")
    return Bundle(json.dumps(doc["document"]).encode(), records, extra)


def retired_too_soon(card: dict[str, Any], now: dt.datetime, retention: int) -> str:
    """Why a bundle cannot truly say that ``card``'s transcript retired by ``now`` ("" if it
    can): a session is kept ``retention`` seconds (the contract's
    ``finished_session_retention_seconds``) after its card's ``sealed_at``, and a bundle made
    before then holds its transcript, so one without it had its records dropped."""
    sealed = card.get("sealed_at")
    try:
        at = dt.datetime.fromisoformat(str(sealed).replace("Z", "+00:00"))
    except ValueError:
        return f"the card's sealed_at ({sealed!r}) is not a time, so nothing dates a retirement"
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    until = at + dt.timedelta(seconds=retention)
    if now < until:
        return (
            f"sessions are kept {retention} s after their card, so this one's transcript"
            f" exists until {until.astimezone(dt.UTC):%Y-%m-%dT%H:%M:%SZ}"
        )
    return ""


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
        if verify_shapes.looks_like_html(data):
            raise CardFormatError(verify_shapes.html_page(data)) from None
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
        CardFormatError: if ``data`` is not a card document (a whole seal reply included).
    """
    doc = _strict(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("card"), dict):
        raise CardFormatError(verify_shapes.not_a_card(doc))
    if "attempt_handle" in doc and "card_sha256" not in doc:
        raise CardFormatError(SEAL_REPLY)
    card = doc["card"]
    if not (isinstance(card.get("card_id"), str) and isinstance(card.get("toolset_id"), str)):
        # A signature checks out over other signed bytes too (a statement): only a card is one.
        raise CardFormatError("the card object has no card_id and toolset_id: not a card")
    body = canonical(card)
    sig = doc.get("signature")
    extra = sorted(doc.keys() - DOCUMENT_KEYS)
    if isinstance(sig, dict):
        extra += [f"signature.{k}" for k in sorted(sig.keys() - SIGNATURE_KEYS)]
    found = Verification(
        card.get("card_id"),
        card.get("toolset_id"),
        doc.get("card_sha256") == sha256_tag(body),
        "missing",
        unsigned=tuple(extra),
        status=doc.get("evidence_status"),
        practice=practice_reason(card),
        outcome=card.get("outcome"),
        contradictions=tuple(contradictions(card)),
    )
    if not sig:
        return found
    if not isinstance(sig, dict):
        return dataclasses.replace(found, signature="invalid", reason="not a signature block")
    problem = _signature_problem(doc, body, sig)
    trusted = not problem and str(sig["public_key"]).lower() in {k.lower() for k in trusted_keys}
    return dataclasses.replace(
        found,
        signature="invalid" if problem else "valid",
        key_id=sig.get("key_id"),
        public_key=None if problem else str(sig["public_key"]).lower(),
        trusted=trusted,
        status_signed=not problem and "scheme" in sig,
        reason=problem,
    )
