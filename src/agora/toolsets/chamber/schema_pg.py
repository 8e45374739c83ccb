"""The chamber tables' PostgreSQL twin: the DDL of each migration step, per version.

Version 1 creates the tables as SQLite has them after every step (a PostgreSQL database
starts from nothing), with BYTEA for blobs and BIGINT for integers; later steps are empty
until a step adds something new (5: the listings' indexes, the same DDL as SQLite's; 6 drops
the date index they made redundant, in the database's own schema only). The
immutability triggers are PL/pgSQL twins of the SQLite ones: cards are never deleted, and
nothing about a sealed card changes except a signature (and its key, seed source and owner)
added once. ``IS DISTINCT FROM`` is SQLite's ``IS NOT``.
"""

from __future__ import annotations

_FROZEN = """
CREATE FUNCTION chamber_cards_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'chamber cards are never deleted';
  END IF;
  IF NEW.card_id IS DISTINCT FROM OLD.card_id OR NEW.document IS DISTINCT FROM OLD.document
     OR NEW.body IS DISTINCT FROM OLD.body OR NEW.toolset_id IS DISTINCT FROM OLD.toolset_id
     OR NEW.sealed_date IS DISTINCT FROM OLD.sealed_date
     OR NEW.outcome IS DISTINCT FROM OLD.outcome OR NEW.handle IS DISTINCT FROM OLD.handle
     OR NEW.sealed_at IS DISTINCT FROM OLD.sealed_at
     OR (OLD.signature IS NOT NULL AND NEW.signature IS DISTINCT FROM OLD.signature)
     OR (OLD.key_id IS NOT NULL AND NEW.key_id IS DISTINCT FROM OLD.key_id)
     OR (OLD.seed_source IS NOT NULL AND NEW.seed_source IS DISTINCT FROM OLD.seed_source)
     OR (OLD.principal IS NOT NULL AND NEW.principal IS DISTINCT FROM OLD.principal) THEN
    RAISE EXCEPTION 'chamber cards are immutable';
  END IF;
  RETURN NEW;
END
$$
"""

POSTGRESQL: dict[int, list[str]] = {
    1: [
        "CREATE TABLE chamber_cards (card_id TEXT PRIMARY KEY, toolset_id TEXT NOT NULL,"
        " sealed_date TEXT NOT NULL, document BYTEA, handle TEXT, sealed_at TEXT,"
        " suite_id TEXT, outcome TEXT, body BYTEA, signature TEXT, signed_at TEXT,"
        " seed_source TEXT, principal TEXT, product TEXT, actions_used BIGINT,"
        " hints_used BIGINT, wrong_submissions BIGINT, key_id TEXT)",
        "CREATE INDEX chamber_cards_by_date ON chamber_cards (sealed_date, card_id)",
        "CREATE INDEX chamber_cards_by_suite ON chamber_cards (sealed_date, suite_id)",
        "CREATE INDEX chamber_cards_by_handle ON chamber_cards (handle)",
        "CREATE TABLE chamber_attempts (handle TEXT PRIMARY KEY, suite_id TEXT NOT NULL,"
        " generation TEXT, engine TEXT, seed TEXT NOT NULL, seed_salt TEXT, identity TEXT,"
        " assurance TEXT, preflight TEXT, principal TEXT, via_alias BIGINT,"
        " created_at TEXT NOT NULL, expires_at TEXT NOT NULL, action_index BIGINT,"
        " opened BIGINT, hints_used BIGINT, hint_level BIGINT, wrong BIGINT,"
        " head TEXT NOT NULL, card_id TEXT, quarantined BIGINT, sealed_at TEXT,"
        " seed_source TEXT)",
        "CREATE INDEX chamber_attempts_open_by_expiry"
        " ON chamber_attempts (card_id, expires_at, handle)",
        "CREATE TABLE chamber_actions (handle TEXT, idx BIGINT, record BYTEA NOT NULL,"
        " head TEXT NOT NULL, PRIMARY KEY (handle, idx))",
        "CREATE TABLE chamber_allies (handle TEXT, ally TEXT, seed TEXT NOT NULL,"
        " created_at TEXT NOT NULL, PRIMARY KEY (handle, ally))",
        "CREATE TABLE chamber_keys (key_id TEXT PRIMARY KEY, alg TEXT NOT NULL,"
        " public_key TEXT NOT NULL, first_used TEXT NOT NULL)",
        "CREATE TABLE chamber_invitations (token TEXT PRIMARY KEY, handle TEXT NOT NULL,"
        " ally TEXT NOT NULL, suite_id TEXT NOT NULL, seed TEXT NOT NULL,"
        " created_at TEXT NOT NULL, redeemed_by TEXT, redeemed_at TEXT)",
        _FROZEN,
        "CREATE TRIGGER chamber_cards_keep BEFORE DELETE ON chamber_cards"
        " FOR EACH ROW EXECUTE FUNCTION chamber_cards_frozen()",
        "CREATE TRIGGER chamber_cards_frozen BEFORE UPDATE ON chamber_cards"
        " FOR EACH ROW EXECUTE FUNCTION chamber_cards_frozen()",
    ],
    2: [],
    3: [],
    4: [],
    5: [
        "CREATE INDEX chamber_cards_in_order"
        " ON chamber_cards (sealed_date, COALESCE(sealed_at, ''), card_id)",
        "CREATE INDEX chamber_cards_board_rows ON chamber_cards"
        " (suite_id, product, seed_source, sealed_date, COALESCE(sealed_at, ''), card_id)",
    ],
    # Named in the current schema: unqualified, a name missing there would be looked up along
    # search_path (``<schema>,public``) and could drop another database's index in public.
    6: [
        "DO $$ BEGIN EXECUTE format('DROP INDEX IF EXISTS %I.chamber_cards_by_date',"
        " current_schema()); END $$"
    ],
}
