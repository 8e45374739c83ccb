"""The chamber's statements: what persists a change, and the reads behind tools and pages.

Tables (created in `schema`): ``chamber_cards`` (every card, forever: 0.3.0 cards as
canonical body bytes plus a signature added once, with the figures listings and the board
need as columns; 0.2.0 cards as the document bytes they arrived as), ``chamber_attempts``
(one row per attempt: identity, counters, transcript head), ``chamber_actions`` (one
hash-chained transcript record per action), ``chamber_allies``, ``chamber_invitations`` and
``chamber_keys`` (every key that ever signed a card). This module builds statements and
reads rows; it never commits (the actor or the caller does) and knows nothing of the entity.
The public listings' paged reads live in `listings`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.toolsets.chamber import cards
from agora.toolsets.chamber.attempt import Attempt, Rules, SealedCard
from agora.toolsets.chamber.schema import MIGRATIONS, stamp, unstamp

__all__ = ["MIGRATIONS", "stamp", "unstamp"]

if TYPE_CHECKING:
    import datetime as dt

    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn


def identity_json(identity: dict[str, str]) -> str:
    """``identity`` as stored: JSON text with sorted keys (memoised: agents enter again and
    again with the same claims, and this is most of an INSERT's cost)."""
    key = tuple(identity.items())
    text = _IDENTITY_JSON.get(key)
    if text is None:
        if len(_IDENTITY_JSON) >= _IDENTITY_CACHE:
            _IDENTITY_JSON.clear()
        text = _IDENTITY_JSON[key] = json.dumps(identity, sort_keys=True)
    return text


_IDENTITY_CACHE = 4096
_IDENTITY_JSON: dict[tuple[tuple[str, str], ...], str] = {}


def insert_attempt(a: Attempt) -> Write:
    """Create the row of a new attempt."""
    return (
        "INSERT INTO chamber_attempts (handle, suite_id, generation, engine, seed, seed_salt,"
        " identity, assurance, preflight, principal, via_alias, created_at, expires_at,"
        " action_index, opened, hints_used, hint_level, wrong, head, quarantined, seed_source)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, ?, 0, ?)",
        (
            a.handle, a.suite_id, a.generation, a.engine, a.seed, a.seed_salt,
            identity_json(a.identity), a.assurance,
            None if a.preflight is None else json.dumps(a.preflight, sort_keys=True),
            a.principal, int(a.via_alias), stamp(a.created_at), stamp(a.expires_at), a.head,
            a.seed_source,
        ),
    )  # fmt: skip


def record_action(a: Attempt, index: int, record: bytes, head: str) -> list[Write]:
    """Append one transcript record and store the attempt's new counters."""
    return [
        (
            "INSERT INTO chamber_actions (handle, idx, record, head) VALUES (?, ?, ?, ?)",
            (a.handle, index, record, head),
        ),
        (
            "UPDATE chamber_attempts SET action_index = ?, opened = ?, hints_used = ?,"
            " hint_level = ?, wrong = ?, head = ? WHERE handle = ?",
            (index + 1, a.opened, a.hints_used, a.hint_level, a.wrong, head, a.handle),
        ),
    ]


def insert_ally(handle: str, ally: str, seed: str, when: dt.datetime) -> Write:
    """Record a named ally and the seed it was given."""
    return (
        "INSERT INTO chamber_allies (handle, ally, seed, created_at) VALUES (?, ?, ?, ?)",
        (handle, ally, seed, stamp(when)),
    )


def insert_invitation(
    token: str, handle: str, ally: str, suite_id: str, seed: str, when: dt.datetime
) -> Write:
    """Record an invitation: the seed stays here, the caller only ever sees the token."""
    return (
        "INSERT INTO chamber_invitations (token, handle, ally, suite_id, seed, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (token, handle, ally, suite_id, seed, stamp(when)),
    )


def redeem_invitation(token: str, handle: str, when: dt.datetime) -> Write:
    """Mark an invitation redeemed by the attempt ``handle`` (once)."""
    return (
        "UPDATE chamber_invitations SET redeemed_by = ?, redeemed_at = ?"
        " WHERE token = ? AND redeemed_by IS NULL",
        (handle, stamp(when), token),
    )


def load_invitation(
    conn: ReadConn, token: str
) -> tuple[str, str, str, str, str, str | None] | None:
    """(token, inviter handle, ally, suite, seed, redeemed_by) of an invitation, or None."""
    row = conn.execute(
        "SELECT token, handle, ally, suite_id, seed, redeemed_by FROM chamber_invitations"
        " WHERE token = ?",
        (token,),
    ).fetchone()
    return None if row is None else tuple(row)


def insert_card(a: Attempt, card: SealedCard, quarantined: bool) -> list[Write]:
    """Store a new card (its body bytes are final) and mark the attempt sealed."""
    signature = card.signature
    row = (
        card.card_id, a.rules.toolset_id, f"{card.sealed_at:%Y-%m-%d}", a.handle,
        stamp(card.sealed_at), a.suite_id, card.outcome, card.body,
        None if signature is None else json.dumps(signature, sort_keys=True),
        None if signature is None else signature["signed_at"],
        a.seed_source, a.principal, a.identity.get("product"), a.action_index,
        a.hints_used, a.wrong, None if signature is None else signature["key_id"],
    )  # fmt: skip
    writes: list[Write] = [
        (
            "INSERT INTO chamber_cards (card_id, toolset_id, sealed_date, handle, sealed_at,"
            " suite_id, outcome, body, signature, signed_at, seed_source, principal, product,"
            " actions_used, hints_used, wrong_submissions, key_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        ),
        (
            "UPDATE chamber_attempts SET card_id = ?, sealed_at = ?, quarantined = ?"
            " WHERE handle = ?",
            (card.card_id, stamp(card.sealed_at), int(quarantined), a.handle),
        ),
    ]
    if signature is not None:
        writes.append(remember_key(signature))
    return writes


def remember_key(signature: dict[str, Any]) -> Write:
    """Record the key of ``signature`` among the keys that ever signed a card."""
    return (
        "INSERT INTO chamber_keys (key_id, alg, public_key, first_used) VALUES (?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (signature["key_id"], signature["alg"], signature["public_key"], signature["signed_at"]),
    )


def add_signature(card_id: str, signature: dict[str, Any]) -> Write:
    """Sign a pending card: sets the signature once, never touches the body."""
    return (
        "UPDATE chamber_cards SET signature = ?, signed_at = ?, key_id = ?"
        " WHERE card_id = ? AND signature IS NULL AND body IS NOT NULL",
        (
            json.dumps(signature, sort_keys=True),
            signature["signed_at"],
            signature["key_id"],
            card_id,
        ),
    )


def import_legacy(card_id: str, sealed_date: str, document: bytes, toolset_id: str) -> Write:
    """Store a 0.2.0 card exactly as received (``ON CONFLICT DO NOTHING``: never overwritten)."""
    return (
        "INSERT INTO chamber_cards (card_id, toolset_id, sealed_date, document)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (card_id, toolset_id, sealed_date, document),
    )


def purge_finished(now: dt.datetime, retention: dt.timedelta) -> list[Write]:
    """Delete sessions sealed more than ``retention`` ago (their cards stay forever).

    Unsealed attempts are never purged: the expiry sweep publishes their cards first.
    """
    cutoff = stamp(now - retention)
    finished = "SELECT handle FROM chamber_attempts WHERE sealed_at IS NOT NULL AND sealed_at < ?"
    return [
        (f"DELETE FROM chamber_actions WHERE handle IN ({finished})", (cutoff,)),
        (f"DELETE FROM chamber_allies WHERE handle IN ({finished})", (cutoff,)),
        (f"DELETE FROM chamber_attempts WHERE handle IN ({finished})", (cutoff,)),
    ]


def expired_unsealed(
    conn: ReadConn, now: dt.datetime, after: tuple[str, str] = ("", ""), limit: int = 500
) -> list[tuple[str, str]]:
    """(expires_at, handle) of unsealed attempts past their TTL, in that order, after ``after``."""
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT expires_at, handle FROM chamber_attempts WHERE card_id IS NULL"
            " AND expires_at <= ? AND (expires_at > ? OR (expires_at = ? AND handle > ?))"
            " ORDER BY expires_at, handle LIMIT ?",
            (stamp(now), after[0], after[0], after[1], limit),
        )
    ]


_ATTEMPT_COLUMNS = (
    "handle, suite_id, generation, engine, seed, seed_salt, identity, assurance, preflight,"
    " principal, via_alias, created_at, expires_at, action_index, opened, hints_used,"
    " hint_level, wrong, head, card_id, quarantined, seed_source"
)


def load_attempt(conn: ReadConn, handle: str, rules: Rules) -> Attempt | None:
    """The attempt ``handle`` as committed, or None if there is none."""
    row = conn.execute(
        f"SELECT {_ATTEMPT_COLUMNS} FROM chamber_attempts WHERE handle = ?", (handle,)
    ).fetchone()
    if row is None:
        return None
    attempt = Attempt(
        rules=rules, handle=row[0], suite_id=row[1], generation=row[2], engine=row[3],
        seed=row[4], seed_salt=row[5], identity=json.loads(row[6]), assurance=row[7],
        preflight=None if row[8] is None else json.loads(row[8]), principal=row[9],
        via_alias=bool(row[10]), created_at=unstamp(row[11]), expires_at=unstamp(row[12]),
        action_index=row[13], opened=row[14], hints_used=row[15], hint_level=row[16],
        wrong=row[17], head=row[18], quarantined=bool(row[20]),
        seed_source=row[21] or "unknown",
    )  # fmt: skip
    attempt.transcript = transcript(conn, handle)
    attempt.allies = [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT ally, seed FROM chamber_allies WHERE handle = ? ORDER BY created_at, ally",
            (handle,),
        )
    ]
    if row[19] is not None:
        attempt.card = load_card(conn, row[19])
    return attempt


def load_card(conn: ReadConn, card_id: str) -> SealedCard | None:
    """A 0.3.0 card as committed (None for unknown ids and for 0.2.0 cards)."""
    row = conn.execute(
        "SELECT card_id, body, sealed_at, outcome, signature FROM chamber_cards"
        " WHERE card_id = ? AND body IS NOT NULL",
        (card_id,),
    ).fetchone()
    if row is None:
        return None
    signature = None if row[4] is None else json.loads(row[4])
    return SealedCard(row[0], bytes(row[1]), unstamp(row[2]), row[3], signature)


def card_of_handle(conn: ReadConn, handle: str) -> tuple[SealedCard, str, str] | None:
    """The card sealed for attempt ``handle``, its owner and suite; None if never sealed.

    Cards keep the handle forever, so this answers after the session's rows are purged.
    """
    row = conn.execute(
        "SELECT card_id, principal, suite_id FROM chamber_cards WHERE handle = ?"
        " AND body IS NOT NULL",
        (handle,),
    ).fetchone()
    if row is None:
        return None
    card = load_card(conn, row[0])
    if card is None:  # pragma: no cover - the row was just read
        return None
    return card, row[1] or "anonymous", row[2]


def card_document(conn: ReadConn, card_id: str) -> bytes | None:
    """The public document bytes of any card (0.2.0 ones verbatim), or None."""
    row = conn.execute(
        "SELECT document, body, signature FROM chamber_cards WHERE card_id = ?", (card_id,)
    ).fetchone()
    if row is None:
        return None
    if row[1] is None:
        return bytes(row[0])
    return cards.publish(bytes(row[1]), None if row[2] is None else json.loads(row[2]))


def signing_keys(conn: ReadConn) -> list[dict[str, Any]]:
    """Every key that ever signed a card here, oldest first."""
    return [
        {"key_id": r[0], "alg": r[1], "public_key": r[2], "first_used": r[3]}
        for r in conn.execute(
            "SELECT key_id, alg, public_key, first_used FROM chamber_keys"
            " ORDER BY first_used, key_id"
        )
    ]


def key_ids_since(conn: ReadConn, sealed_date: str) -> list[str]:
    """The key ids of the cards sealed on or after ``sealed_date`` (``YYYY-MM-DD``) that
    were signed, in order (`agora.toolsets.chamber.keycheck`)."""
    return [
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT key_id FROM chamber_cards"
            " WHERE sealed_date >= ? AND key_id IS NOT NULL ORDER BY key_id",
            (sealed_date,),
        )
    ]


def pending_cards(conn: ReadConn, limit: int = 1000, after: str = "") -> list[tuple[str, bytes]]:
    """Cards waiting for a signature, by id after ``after``: (card_id, body bytes)."""
    return [
        (r[0], bytes(r[1]))
        for r in conn.execute(
            "SELECT card_id, body FROM chamber_cards WHERE body IS NOT NULL"
            " AND signature IS NULL AND card_id > ? ORDER BY card_id LIMIT ?",
            (after, limit),
        )
    ]


def transcript(conn: ReadConn, handle: str) -> list[bytes]:
    """The transcript records of an attempt (empty once its session is retired)."""
    return [
        bytes(r[0])
        for r in conn.execute(
            "SELECT record FROM chamber_actions WHERE handle = ? ORDER BY idx", (handle,)
        )
    ]
