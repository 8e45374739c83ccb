"""Operator commands on chamber cards: ``agora cards sign``, ``agora cards verify FILE|URL``.

Plain functions the CLI calls. `sign_pending_cards` signs every card sealed while no key was
configured (it adds a signature; card bytes never change) on an open SQLite connection;
`cmd_sign` does that on a database file. `verify_card_bytes` / `cmd_verify` re-check a card
document: its body hash, its Ed25519 signature, and whether the reader trusts the key (keys
given, read from a trust file, or fetched from a key URL the reader names). They print through
the ``out`` callable they are given, their refusals through ``err`` (stderr, after the
``agora:`` every refusal of the command starts with), and return a process exit code.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Final

from agora.toolsets.chamber import cards, store
from agora.toolsets.chamber.signing import Signer, SigningKeyError, load_signer

Out = Callable[[str], None]


def _to_stderr(line: str) -> None:
    print(f"agora: {line}", file=sys.stderr)


#: Cards signed per transaction.
SIGN_BATCH = 500
#: Seconds `cmd_sign` waits for the database lock held by a running server's writer.
BUSY_SECONDS = 30.0


def sign_pending_cards(
    conn: sqlite3.Connection, signer: Signer, now: dt.datetime | None = None
) -> list[str]:
    """Sign every pending card, committing each batch of `SIGN_BATCH` cards.

    Short transactions let a running server's writer (which waits on SQLite's lock) go on
    between batches; the file may be signed while ``agora serve`` uses it.

    Args:
        conn: A connection to the agora database.
        signer: The operator's key.
        now: Signing time (default: the system clock, UTC).

    Returns:
        The ids of the cards signed.

    Raises:
        sqlite3.Error: if the database cannot be read or written (batches already committed
            stay signed).
    """
    when = now or dt.datetime.now(dt.UTC)
    signed: list[str] = []
    after = ""
    while batch := store.pending_cards(conn, limit=SIGN_BATCH, after=after):
        with conn:
            for card_id, body in batch:
                block = cards.signature_block(signer, body, when)
                sql, params = store.add_signature(card_id, block)
                if conn.execute(sql, params).rowcount:
                    signed.append(card_id)
                    conn.execute(*store.remember_key(block))
        after = batch[-1][0]
    return signed


def cmd_sign(
    db_path: str | Path, key_path: str | Path, *, out: Out = print, err: Out = _to_stderr
) -> int:
    """``agora cards sign``: sign all pending cards in the database at ``db_path``.

    ``agora cards sign`` holds the database's process lock around this (`agora.store.lock`),
    so it never runs beside a server on the same file; SQLite's busy wait (`BUSY_SECONDS`)
    still covers any other SQLite reader.

    Args:
        db_path: The agora SQLite file (it must exist; it is never created here).
        key_path: The signing key file (PEM Ed25519 private key, or 64 hex digits).
        out: Where to print what was signed.
        err: Where to say why nothing could be signed.

    Returns:
        0 on success, 2 if the key or the database cannot be used.
    """
    try:
        signer = load_signer(key_path)
    except SigningKeyError as exc:
        err(f"cannot sign: {exc}")
        return 2
    if not Path(db_path).is_file():
        err(f"cannot sign: no database at {db_path}")
        return 2
    try:
        conn = sqlite3.connect(str(db_path), timeout=BUSY_SECONDS)
        try:
            signed = sign_pending_cards(conn, signer)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        err(f"cannot sign: {db_path} is not a usable agora database ({exc})")
        return 2
    out(f"signed {len(signed)} card(s) with {signer.key_id}")
    for card_id in signed:
        out(f"  {card_id}")
    return 0


def import_legacy_cards(
    conn: sqlite3.Connection, documents: list[bytes], legacy_toolset_id: str
) -> list[str]:
    """Store 0.2.0 cards exactly as published (existing ids are left alone) and commit.

    Args:
        conn: A connection to the agora database.
        documents: The card documents, byte for byte.
        legacy_toolset_id: The contract's legacy toolset id (cards must be bound to it).

    Returns:
        The ids imported.

    Raises:
        CardFormatError: if a document is not a legacy card (nothing is imported then).
    """
    rows = [(cards.legacy_fields(d, legacy_toolset_id), d) for d in documents]
    imported = []
    with conn:
        for (card_id, date), document in rows:
            sql, params = store.import_legacy(card_id, date, document, legacy_toolset_id)
            if conn.execute(sql, params).rowcount:
                imported.append(card_id)
    return imported


def verify_card_bytes(data: bytes, trusted_keys: Collection[str] = ()) -> cards.Verification:
    """Re-check a card document (see `cards.verify_document`).

    Raises:
        CardFormatError: if ``data`` is not a card document.
    """
    return cards.verify_document(data, trusted_keys)


class TrustError(ValueError):
    """A trust file or key URL that cannot be read."""


_KEY_FORMS: Final = re.compile(r"[0-9a-f]{64}|ed25519:[0-9a-f]{16}", re.IGNORECASE)
_KEY_HELP: Final = (
    "is not a key: give an Ed25519 public key as 64 hex digits, or a key id like"
    " ed25519:0123456789abcdef"
)


def checked_key(key: str, where: str) -> str:
    """``key`` if it is a public key (64 hex) or a key id; ``where`` names it in the error.

    Raises:
        TrustError: if it is neither (say ``deadbeef``), which would trust nothing silently.
    """
    if not _KEY_FORMS.fullmatch(key):
        raise TrustError(f"{where}{key!r} {_KEY_HELP}")
    return key.lower()  # as cards and key documents write it: an upper-case copy trusts too


def keys_from_json(data: bytes) -> list[str]:
    """Key ids and public keys listed by a server's key document (``GET /chamber/keys``).

    Raises:
        TrustError: if ``data`` is not such a document.
    """
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise TrustError(f"not a key document: not JSON ({exc})") from exc
    try:
        keys = doc["keys"]
        return [str(k[f]) for k in keys for f in ("key_id", "public_key") if k.get(f)]
    except (KeyError, TypeError, AttributeError) as exc:
        raise TrustError(
            'not a key document: it has no "keys" list of objects with key_id and public_key'
            " (a server's is at /chamber/keys)"
        ) from exc


def keys_from_file(path: str | Path) -> list[str]:
    """Trusted keys from a file: a key document (JSON), or one key (hex or id) per line.

    Raises:
        TrustError: if the file cannot be read.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TrustError(f"cannot read {path}: {exc.strerror}") from exc
    if data.lstrip().startswith(b"{"):
        return keys_from_json(data)
    lines = (line.split("#", 1)[0].strip() for line in data.decode("utf-8", "replace").split("\n"))
    return [checked_key(line, f"{path} line {n}: ") for n, line in enumerate(lines, 1) if line]


def keys_from_url(url: str, timeout: float = 10.0) -> list[str]:
    """The keys a server publishes at ``url`` (its ``/chamber/keys``), fetched now.

    Raises:
        TrustError: if the URL cannot be fetched or is not a key document.
    """
    if not url.startswith(("http://", "https://")):
        raise TrustError(f"{url}: only http(s) key URLs are fetched")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read(1 << 20)
    except (OSError, ValueError) as exc:
        raise TrustError(f"cannot fetch {url}: {exc}") from exc
    return keys_from_json(data)


#: The most bytes of a card fetched by URL (a card document is a few KiB).
CARD_URL_LIMIT: Final = 1 << 20


class CardFetchError(OSError):
    """A card URL that cannot be fetched."""


def card_from_url(url: str, timeout: float = 10.0) -> bytes:
    """The card document at ``url`` (a card page, ``/cards/<id>``), fetched now as JSON.

    The reader names the URL, as with ``--keys-url``; its ``format=`` is forced to ``json``,
    so a card page's address copied from a browser fetches the document, not its HTML view.

    Raises:
        CardFetchError: if it cannot be fetched in ``timeout`` seconds or is too large.
    """
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "format"]
    query.append(("format", "json"))
    target = parts._replace(query=urllib.parse.urlencode(query), fragment="").geturl()
    request = urllib.request.Request(target, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data: bytes = response.read(CARD_URL_LIMIT + 1)
    except (OSError, ValueError) as exc:
        raise CardFetchError(f"cannot fetch {url}: {exc}") from exc
    if len(data) > CARD_URL_LIMIT:
        raise CardFetchError(f"cannot fetch {url}: larger than {CARD_URL_LIMIT} bytes")
    return data


def _read_card(path: str | Path) -> bytes:
    """A card document from a file, or from an http(s) URL (`card_from_url`)."""
    if str(path).startswith(("http://", "https://")):
        return card_from_url(str(path))
    return Path(path).read_bytes()


def _verdict(result: cards.Verification) -> str:
    if result.signature == "missing":
        return "NOT signed (pending_signature): nothing vouches for this card yet"
    if result.signature == "invalid":
        return "INVALID signature"
    if not result.trusted:
        return (
            f"valid signature, key NOT trusted ({result.key_id}): pass --trust KEY, "
            "--trust-file FILE or --keys-url URL of the server you trust"
        )
    return f"valid signature, trusted key {result.key_id}"


def cmd_verify(
    path: str | Path,
    *,
    trusted_keys: Collection[str] = (),
    trust_files: Collection[str] = (),
    keys_urls: Collection[str] = (),
    out: Out = print,
    err: Out = _to_stderr,
) -> int:
    """``agora cards verify FILE|URL``: check a card's hash, signature and signer; given a
    seal's export bundle, also that its transcript chains to the card's transcript hash.

    A signature only counts when its key is trusted: given with ``--trust``, listed in a
    ``--trust-file``, or published at a ``--keys-url`` the reader names explicitly.

    Args:
        path: The card document (as served by ``GET /cards/<id>``), or the http(s) URL
            of a card page, fetched as JSON (`card_from_url`).
        trusted_keys: Public keys (hex) or key ids the reader trusts.
        trust_files: Files of trusted keys (see `keys_from_file`).
        keys_urls: Key URLs (a server's ``/chamber/keys``) whose keys the reader trusts.
        out: Where to print the verdict.
        err: Where to say why there is none (an unreadable card or trust source).

    Returns:
        0 if the hash is right and a trusted key signed the card; 1 if not (unsigned,
        invalid, or signed by a key not trusted), or if fields beside the card, its hash and
        its signature were added (nothing vouches for them); 2 if the card or a trust source is
        unreadable (or its URL cannot be fetched).
    """
    try:
        trusted = [checked_key(key, "--trust ") for key in trusted_keys]
        for file in trust_files:
            trusted += keys_from_file(file)
        for url in keys_urls:
            trusted += keys_from_url(url)
    except TrustError as exc:
        err(f"cannot verify: {exc}")
        return 2
    try:
        named = _named_card(str(path))
        data = _read_card(path)
        bundle = cards.read_bundle(data)
        result = verify_card_bytes(bundle.document if bundle else data, trusted)
    except CardFetchError as exc:
        err(f"cannot verify: {exc}")
        return 2
    except OSError as exc:  # no such file, no permission, a directory
        err(f"cannot verify: cannot read {path}: {exc.strerror or exc}")
        return 2
    except cards.CardFormatError as exc:
        err(f"{path}: not a card document ({exc})")
        return 2
    out(f"card {result.card_id} ({result.toolset_id})")
    out(f"  hash: {'ok' if result.hash_ok else 'MISMATCH'}")
    out(f"  {_verdict(result)}")
    if bundle is not None and not _transcript_checked(bundle, out):
        return 1
    if result.signature == "valid" and not result.status_signed:
        out("  note: signed before evidence_status was signed; the body alone is covered")
    if result.unsigned:
        out(
            f"  NOT covered by hash or signature: {', '.join(result.unsigned)} (added beside"
            " the card: nothing vouches for it)"
        )
    if named is not None and named != result.card_id:
        # A host may answer /cards/X with another genuine card: the signature is then
        # valid, but not for the card the reader looked at.
        out(f"  NOT the card the URL names ({named}): the server answered with another one")
        return 1
    return 0 if result.ok else 1


def _transcript_checked(bundle: cards.Bundle, out: Out) -> bool:
    """Say whether an export bundle's transcript chains to its card's transcript hash; False
    if it does not (a bundle whose session retired has no transcript to check)."""
    if bundle.transcript is None:
        out("  transcript: retired with the session, not checked")
        return True
    card = json.loads(bundle.document)["card"]
    if cards.transcript_matches(card, bundle.transcript):
        out(f"  transcript: ok ({len(bundle.transcript)} records give transcript_hash)")
        return True
    out("  transcript: MISMATCH (its records do not give the card's transcript_hash)")
    return False


def _named_card(path: str) -> str | None:
    """The card id a card page's URL names (``.../cards/<id>``), None for a file or another URL.

    Raises:
        CardFetchError: a path segment is ``.`` or ``..`` (encoded or not), empty, or holds an
            encoded slash: the server and the reader could each take the URL to name
            another card.
    """
    if not path.startswith(("http://", "https://")):
        return None
    raw = urllib.parse.urlsplit(path).path.split("/")[1:]  # (a path starts with "/")
    if raw and raw[-1] == "":
        raw.pop()  # one trailing slash, as a browser may add
    segments = [urllib.parse.unquote(s) for s in raw]
    if any(s in ("", ".", "..") or "/" in s for s in segments):
        raise CardFetchError(
            f"{path}: give the card's URL as the server shows it, without . or .., empty or"
            " encoded-slash segments"
        )
    return segments[-1] if len(segments) >= 2 and segments[-2] == "cards" else None
