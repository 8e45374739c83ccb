"""Where ``agora cards verify`` reads from: the card (a file, or a card page's URL) and the
keys the reader trusts (``--trust``, ``--trust-file``, ``--keys-url``).

Every source is one the reader names; nothing here decides whether a card is genuine
(`verify` does) or prints anything (`cards_cli` does).
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Final

from agora.toolsets.chamber import signing

#: Where a warning about a trust source goes (``agora cards verify``: stderr).
Warn = Callable[[str], None]


def _ignore(line: str) -> None:
    """No warning wanted."""


class TrustError(ValueError):
    """A trust file or key URL that cannot be read."""


_PUBLIC_KEY: Final = re.compile(r"[0-9a-f]{64}", re.IGNORECASE)
_KEY_ID: Final = re.compile(r"ed25519:[0-9a-f]{16}", re.IGNORECASE)


def checked_key(key: str, where: str) -> str:
    """``key`` if it is an Ed25519 public key (64 hex digits), in lower case; ``where``
    names it in the error.

    Key ids are labels, not trust: one is 64 bits of the key's hash, and another key with the
    same id can be made with enough computing power, so a card is trusted by its full public
    key only (docs/evidence.md).

    Raises:
        TrustError: if it is a key id, or not a key at all (say ``deadbeef``, which would
            trust nothing silently).
    """
    if _KEY_ID.fullmatch(key):
        raise TrustError(
            f"{where}{key!r} is a key id, a label that cannot identify a key: give the key"
            " itself, its public key as 64 hex digits (as the server's /chamber/keys lists it)"
        )
    if not _PUBLIC_KEY.fullmatch(key):
        raise TrustError(
            f"{where}{key!r} is not a key: give an Ed25519 public key as 64 hex digits"
        )
    return key.lower()  # as cards and key documents write it: an upper-case copy trusts too


def keys_from_json(data: bytes, where: str = "", warn: Warn = _ignore) -> list[str]:
    """The public keys listed by a server's key document (``GET /chamber/keys``); their key
    ids are labels and trust nothing (`checked_key`). ``where`` names the document in errors.

    An entry whose ``key_id`` does not derive from its ``public_key`` was edited (a server
    writes both from one key): it is left out, and ``warn`` names it.

    Raises:
        TrustError: if ``data`` is not such a document, or a key in it is not a public key.
    """
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise TrustError(f"not a key document: not JSON ({exc})") from exc
    try:
        listed = [(k.get("key_id"), str(k["public_key"])) for k in doc["keys"]]
    except (KeyError, TypeError, AttributeError) as exc:
        raise TrustError(
            'not a key document: it has no "keys" list of objects with key_id and public_key'
            " (a server's is at /chamber/keys)"
        ) from exc
    trusted = []
    for label, public in listed:
        key = checked_key(public, f"{where}public_key ")
        if label is not None and str(label).lower() != signing.key_id(key):
            warn(
                f"{where}the entry of key_id {label} is not trusted: its public_key {key} has"
                f" the key id {signing.key_id(key)}, so the document was edited"
            )
            continue
        trusted.append(key)
    return trusted


def keys_from_file(path: str | Path, warn: Warn = _ignore) -> list[str]:
    """Trusted keys from a file: a key document (JSON, its edited entries left out and named
    on ``warn``: `keys_from_json`), or one public key (hex) per line.

    Raises:
        TrustError: if the file cannot be read.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TrustError(f"cannot read {path}: {exc.strerror}") from exc
    if data.lstrip().startswith(b"{"):
        return keys_from_json(data, f"{path}: ", warn)
    lines = (line.split("#", 1)[0].strip() for line in data.decode("utf-8", "replace").split("\n"))
    return [checked_key(line, f"{path} line {n}: ") for n, line in enumerate(lines, 1) if line]


def keys_from_url(url: str, timeout: float = 10.0, warn: Warn = _ignore) -> list[str]:
    """The keys a server publishes at ``url`` (its ``/chamber/keys``), fetched now (edited
    entries left out and named on ``warn``: `keys_from_json`).

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
    return keys_from_json(data, f"{url}: ", warn)


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


def read_card(path: str | Path) -> bytes:
    """A card document from a file, or from an http(s) URL (`card_from_url`)."""
    if str(path).startswith(("http://", "https://")):
        return card_from_url(str(path))
    return Path(path).read_bytes()


def named_card(path: str) -> str | None:
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
