"""The chamber's tables: migrations, and the UTC timestamp format every table uses.

Migration 1 is the 0.2.0-era card table; migration 2 adds the 0.3.0 columns and tables
without rewriting a single stored byte; migration 3 adds what the public evidence needs
(seed provenance, the card's owner and its board figures as columns, the operator's keys,
allies' invitations) and fills the new card columns from the stored bytes, which it never
changes; migration 4 indexes the expiry sweep, migration 5 the public listings' order. This
module holds DDL only; statements that persist changes live in `store`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

from agora.store.migrations import Migration, with_statements
from agora.store.neutral import POSTGRESQL
from agora.toolsets.chamber import schema_pg

if TYPE_CHECKING:
    import sqlite_utils


def stamp(when: dt.datetime) -> str:
    """A UTC time as fixed-width text (sorts like time)."""
    if when.tzinfo is not dt.UTC:
        when = when.astimezone(dt.UTC)
    if when.year < 1000:  # %Y is not zero-padded there: keep strftime's text
        return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # The same text as strftime, at well under half its cost (two per entry, one per action).
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (  # noqa: UP031 - the fastest spelling
        when.year, when.month, when.day, when.hour, when.minute, when.second, when.microsecond,
    )  # fmt: skip


def unstamp(text: str) -> dt.datetime:
    """The inverse of `stamp`."""
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


def _migrate_v1(db: sqlite_utils.Database) -> None:
    # The table as 0.2.0 cards were kept: id, binding, date and the document bytes.
    db.table("chamber_cards").create(
        {"card_id": str, "toolset_id": str, "sealed_date": str, "document": bytes},
        pk="card_id",
        not_null={"toolset_id", "sealed_date"},
    )


def _migrate_v2(db: sqlite_utils.Database) -> None:
    cards_table = db.table("chamber_cards")
    for column, kind in (
        ("handle", str),
        ("sealed_at", str),
        ("suite_id", str),
        ("outcome", str),
        ("body", bytes),
        ("signature", str),
        ("signed_at", str),
    ):
        cards_table.add_column(column, kind)
    cards_table.create_index(["sealed_date", "card_id"], index_name="chamber_cards_by_date")
    db.table("chamber_attempts").create(
        {
            "handle": str, "suite_id": str, "generation": str, "engine": str, "seed": str,
            "seed_salt": str, "identity": str, "assurance": str, "preflight": str,
            "principal": str, "via_alias": int, "created_at": str, "expires_at": str,
            "action_index": int, "opened": int, "hints_used": int, "hint_level": int,
            "wrong": int, "head": str, "card_id": str, "quarantined": int, "sealed_at": str,
        },
        pk="handle",
        not_null={"suite_id", "seed", "created_at", "expires_at", "head"},
    )  # fmt: skip
    db.table("chamber_actions").create(
        {"handle": str, "idx": int, "record": bytes, "head": str},
        pk=("handle", "idx"),
        not_null={"record", "head"},
    )
    db.table("chamber_allies").create(
        {"handle": str, "ally": str, "seed": str, "created_at": str},
        pk=("handle", "ally"),
        not_null={"seed", "created_at"},
    )
    # Cards are forever and their bytes never change: the store itself refuses otherwise.
    # A signature may be added once; nothing else about a card may be touched.
    db.execute(
        "CREATE TRIGGER chamber_cards_keep BEFORE DELETE ON chamber_cards"
        " BEGIN SELECT RAISE(ABORT, 'chamber cards are never deleted'); END"
    )
    db.execute(
        "CREATE TRIGGER chamber_cards_frozen BEFORE UPDATE ON chamber_cards"
        " WHEN NEW.card_id IS NOT OLD.card_id OR NEW.document IS NOT OLD.document"
        " OR NEW.body IS NOT OLD.body OR NEW.toolset_id IS NOT OLD.toolset_id"
        " OR NEW.sealed_date IS NOT OLD.sealed_date OR NEW.outcome IS NOT OLD.outcome"
        " OR OLD.signature IS NOT NULL"
        " BEGIN SELECT RAISE(ABORT, 'chamber cards are immutable'); END"
    )


_FROZEN_V3 = (
    "CREATE TRIGGER chamber_cards_frozen BEFORE UPDATE ON chamber_cards"
    " WHEN NEW.card_id IS NOT OLD.card_id OR NEW.document IS NOT OLD.document"
    " OR NEW.body IS NOT OLD.body OR NEW.toolset_id IS NOT OLD.toolset_id"
    " OR NEW.sealed_date IS NOT OLD.sealed_date OR NEW.outcome IS NOT OLD.outcome"
    " OR NEW.handle IS NOT OLD.handle OR NEW.sealed_at IS NOT OLD.sealed_at"
    " OR (OLD.signature IS NOT NULL AND NEW.signature IS NOT OLD.signature)"
    " OR (OLD.key_id IS NOT NULL AND NEW.key_id IS NOT OLD.key_id)"
    " OR (OLD.seed_source IS NOT NULL AND NEW.seed_source IS NOT OLD.seed_source)"
    " OR (OLD.principal IS NOT NULL AND NEW.principal IS NOT OLD.principal)"
    " BEGIN SELECT RAISE(ABORT, 'chamber cards are immutable'); END"
)


def _migrate_v3(db: sqlite_utils.Database) -> None:
    db.table("chamber_attempts").add_column("seed_source", str)
    cards_table = db.table("chamber_cards")
    for column, kind in (
        ("seed_source", str),
        ("principal", str),
        ("product", str),
        ("actions_used", int),
        ("hints_used", int),
        ("wrong_submissions", int),
        ("key_id", str),
    ):
        cards_table.add_column(column, kind)
    cards_table.create_index(["sealed_date", "suite_id"], index_name="chamber_cards_by_suite")
    cards_table.create_index(["handle"], index_name="chamber_cards_by_handle")
    db.table("chamber_keys").create(
        {"key_id": str, "alg": str, "public_key": str, "first_used": str},
        pk="key_id",
        not_null={"alg", "public_key", "first_used"},
    )
    db.table("chamber_invitations").create(
        {
            "token": str, "handle": str, "ally": str, "suite_id": str, "seed": str,
            "created_at": str, "redeemed_by": str, "redeemed_at": str,
        },
        pk="token",
        not_null={"handle", "ally", "suite_id", "seed", "created_at"},
    )  # fmt: skip
    # The new columns are filled once from what is stored; the stored bytes stay as they are.
    db.execute("DROP TRIGGER chamber_cards_frozen")
    owners = dict(db.execute("SELECT handle, principal FROM chamber_attempts").fetchall())
    rows = db.execute(
        "SELECT card_id, handle, body, signature, signed_at FROM chamber_cards"
        " WHERE body IS NOT NULL"
    ).fetchall()
    for card_id, handle, body, signature, signed_at in rows:
        card = json.loads(body)
        identity = card.get("identity") or {}
        key = json.loads(signature) if signature else None
        db.execute(
            "UPDATE chamber_cards SET seed_source = ?, principal = ?, product = ?,"
            " actions_used = ?, hints_used = ?, wrong_submissions = ?, key_id = ?"
            " WHERE card_id = ?",
            (
                card.get("seed_source", "unknown"), owners.get(handle, "anonymous"),
                identity.get("product"), card.get("actions_used"), card.get("hints_used"),
                card.get("wrong_submissions"), key["key_id"] if key else None, card_id,
            ),
        )  # fmt: skip
        if key:
            db.execute(
                "INSERT INTO chamber_keys (key_id, alg, public_key, first_used)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (key["key_id"], key["alg"], key["public_key"], signed_at),
            )
    db.execute(_FROZEN_V3)


def _migrate_v4(db: sqlite_utils.Database) -> None:
    # The expiry sweep looks for unsealed attempts by expiry.
    db.table("chamber_attempts").create_index(
        ["card_id", "expires_at", "handle"], index_name="chamber_attempts_open_by_expiry"
    )


#: The public listings run in the order sealed, a page at a time (`listings`): an index in that
#: order per listing lets a page start at its cursor and stop at its limit, where the date
#: index alone made every page sort all the cards of the day (or of a board row's days).
_IN_ORDER_V5 = [
    "CREATE INDEX chamber_cards_in_order"
    " ON chamber_cards (sealed_date, COALESCE(sealed_at, ''), card_id)",
    "CREATE INDEX chamber_cards_board_rows ON chamber_cards"
    " (suite_id, product, seed_source, sealed_date, COALESCE(sealed_at, ''), card_id)",
]


#: Migration 5's in-order index leads with ``sealed_date``, as the date index of version 1 does,
#: so that one answers nothing the other cannot: it only cost every sealed card one more index
#: entry to write.
_REDUNDANT_V6 = ["DROP INDEX IF EXISTS chamber_cards_by_date"]


MIGRATIONS = with_statements(
    (
        Migration(component="chamber", version=1, apply=_migrate_v1),
        Migration(component="chamber", version=2, apply=_migrate_v2),
        Migration(component="chamber", version=3, apply=_migrate_v3),
        Migration(component="chamber", version=4, apply=_migrate_v4),
        Migration(component="chamber", version=5, sql={"sqlite": _IN_ORDER_V5}),
        Migration(component="chamber", version=6, sql={"sqlite": _REDUNDANT_V6}),
    ),
    POSTGRESQL,
    schema_pg.POSTGRESQL,
)
