"""Content digests and stable identifiers of the router.

Every digest the router hands out is ``sha256:`` followed by the hex SHA-256 of the RFC 8785
(JCS) canonical JSON of a value, so any client can recompute it from the same JSON. Stable
identifiers (a workflow run, its work graph, a proposal) are derived from the caller's
session and idempotency key, so a replayed command lands on the same entity. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import msgspec
import rfc8785

DIGEST_PREFIX = "sha256:"

#: Sorted-key compact JSON: the canonical form of plain values, the request digest's encoding.
_SORTED = msgspec.json.Encoder(order="sorted")


#: The largest integer magnitude RFC 8785 accepts (IEEE-754 doubles are exact up to it).
_SAFE_INT = 2**53 - 1


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON whose sorted-key msgspec encoding is its RFC 8785 form.

    True for strings, booleans, null, integers within the safe range, lists of those and
    objects whose keys are ASCII strings: for these msgspec writes exactly the bytes JCS
    prescribes (the same string escapes, raw UTF-8 otherwise, no spaces), and code-point key
    order equals JCS's UTF-16 order on ASCII. Floats (ECMAScript number formatting), other
    keys and other types are left to ``rfc8785`` itself.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_SAFE_INT <= value <= _SAFE_INT)
    if kind is dict:  # loops, not all(<genexpr>), and strings not recursed into: 3x faster
        for k, v in value.items():
            if type(k) is not str or not k.isascii() or (type(v) is not str and not _plain(v)):
                return False
        return True
    if kind is list:  # a loop for speed, as above
        for v in value:  # noqa: SIM110
            if type(v) is not str and not _plain(v):
                return False
        return True
    return False


def canonical(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value``.

    Plain JSON (`_plain`: what the router digests on every call) is encoded by msgspec, 50-100
    times faster than the pure-Python ``rfc8785``, which encodes the rest (and says why a value
    has no canonical form). ``tests/router/test_router_digests.py`` checks they agree.

    Raises:
        rfc8785.CanonicalizationError: if ``value`` has no canonical form (a float that is
            not finite, an integer beyond the IEEE-754 safe range, a non-string key, a lone
            surrogate).
    """
    if _plain(value):
        try:
            return _SORTED.encode(value)
        except UnicodeEncodeError:  # a lone surrogate: rfc8785 raises its own error below
            pass
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """``sha256:<hex>`` over the canonical JSON of ``value``."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(value)).hexdigest()


#: The fields of a route that say what it does: its envelope and its planned skill tree (each
#: phase, its skills and its exit gate). How it was chosen (route source, selection mode,
#: Profile digest, rule id) is left out: the runs an approved Profile rule plans are the
#: same route as the runs it was learned from.
ROUTE_FIELDS: Final = ("routing_envelope", "planned_skill_tree")


def route_signature(route: dict[str, Any]) -> str:
    """A route's ``route_signature_digest``: the digest of its `ROUTE_FIELDS` (``route`` is
    a plan result, or an observation, which holds them)."""
    return digest({name: route[name] for name in ROUTE_FIELDS})


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


def request_digest(tool: str, arguments: dict[str, Any], *, correlated: bool = False) -> str:
    """The digest that identifies one semantic command, for idempotent replay.

    ``correlation_id`` traces one attempt and is left out: a retry under a new correlation
    id is still the same command. Not so for the Memory mutations (``correlated``), whose
    contract says "a changed identity is not the same replay". Everything else the caller
    sent is part of it, so reusing an idempotency key with any other change is a conflict.
    This digest never leaves the server, so it uses msgspec's sorted-key JSON
    (deterministic, and several times faster than RFC 8785 on the replay path) rather than
    the public canonical form.
    """
    body = (
        arguments if correlated else {k: v for k, v in arguments.items() if k != "correlation_id"}
    )
    return DIGEST_PREFIX + hashlib.sha256(_SORTED.encode([tool, body])).hexdigest()


def routing_read(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` (the same object when nothing changes) with ``routing_context`` in the
    one form the plan reads it in: its ``domains`` and ``tags`` sorted without repeats
    (matchers read them as sets), and a context with every member empty or null left out,
    as omitting it means the same. The key's digest is taken of this, so a resend that
    differs only in that form replays."""
    ctx = arguments.get("routing_context")
    if not isinstance(ctx, dict):
        return arguments
    read = {**ctx, "domains": sorted(set(ctx.get("domains") or ())),
            "tags": sorted(set(ctx.get("tags") or ()))}  # fmt: skip
    if read == ctx and any(read.values()):
        return arguments  # already in that form (the caller then takes one digest, not two)
    rest = {k: v for k, v in arguments.items() if k != "routing_context"}
    return {**rest, "routing_context": read} if any(read.values()) else rest
