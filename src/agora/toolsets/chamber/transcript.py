"""The attempt transcript's hash chain: canonical record bytes and how each links to the last.

Every accepted action becomes one record; its RFC 8785 canonical bytes are hashed onto the
previous head, starting from a genesis value bound to the attempt's seed commitment, so a
published card's ``transcript_hash`` commits to every action in order. This module only
encodes and hashes; it must not know attempts, rooms or the store.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785


def genesis(seed_commitment: str) -> str:
    """The transcript hash chain's starting value for an attempt."""
    return hashlib.sha256(f"scoreia-chamber-transcript/v1\n{seed_commitment}".encode()).hexdigest()


#: Sorted keys, no whitespace, UTF-8 as is: RFC 8785 for the plain values `_plain` admits.
_compact = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode
_SAFE_INT = 2**53


def _plain(value: Any) -> bool:
    # Strings are held to ASCII so that no escaping or key-order rule can differ between
    # the two encoders; ints to the range RFC 8785 numbers represent exactly.
    if isinstance(value, str):
        return value.isascii()
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -_SAFE_INT < value < _SAFE_INT
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False


def canonical_record(record: dict[str, Any]) -> bytes:
    """The RFC 8785 canonical bytes of a transcript record.

    Records hold ASCII keys, ASCII strings, small ints, bools and lists of strings. For those,
    sorted-key compact JSON from the C encoder is byte-identical to RFC 8785 and several times
    cheaper per action; any other record is encoded by ``rfc8785`` itself.
    """
    if all(k.isascii() and _plain(v) for k, v in record.items()):
        return _compact(record).encode()
    return rfc8785.dumps(record)


def chain(head: str, record: dict[str, Any]) -> tuple[str, bytes]:
    """Append ``record`` to the chain at ``head``: (new head, the record's canonical bytes)."""
    raw = canonical_record(record)
    return hashlib.sha256(bytes.fromhex(head) + raw).hexdigest(), raw
