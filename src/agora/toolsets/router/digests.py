"""Content digests and stable identifiers of the router.

Every digest the router hands out is ``sha256:`` followed by the hex SHA-256 of the RFC 8785
(JCS) canonical JSON of a value, so any client can recompute it from the same JSON. Stable
identifiers (a workflow run, its work graph, a proposal) are derived from the caller's
session and idempotency key, so a replayed command lands on the same entity. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import rfc8785

DIGEST_PREFIX = "sha256:"


def canonical(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value``.

    Raises:
        rfc8785.CanonicalizationError: if ``value`` has no canonical form (a float that is
            not finite, an integer beyond the IEEE-754 safe range, a non-string key).
    """
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """``sha256:<hex>`` over the canonical JSON of ``value``."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(value)).hexdigest()


def stable_id(prefix: str, *parts: str) -> str:
    """A short identifier bound to ``parts`` (e.g. session and idempotency key).

    Args:
        prefix: What kind of thing it names (``run``, ``graph``, ``proposal``).
        parts: The values it is derived from; NUL-separated so no two tuples collide.

    Returns:
        ``<prefix>-<32 hex digits>``.
    """
    joined = "\0".join(parts).encode()
    return f"{prefix}-{hashlib.sha256(joined).hexdigest()[:32]}"


_SORTED = msgspec.json.Encoder(order="sorted")


def request_digest(tool: str, arguments: dict[str, Any]) -> str:
    """The digest that identifies one semantic command, for idempotent replay.

    ``correlation_id`` traces one attempt and is left out: a retry under a new correlation
    id is still the same command. Everything else the caller sent is part of it, so reusing
    an idempotency key with any other change is a conflict. This digest never leaves the
    server, so it uses msgspec's sorted-key JSON (deterministic, and several times faster
    than RFC 8785 on the replay path) rather than the public canonical form.
    """
    body = {k: v for k, v in arguments.items() if k != "correlation_id"}
    return DIGEST_PREFIX + hashlib.sha256(_SORTED.encode([tool, body])).hexdigest()
