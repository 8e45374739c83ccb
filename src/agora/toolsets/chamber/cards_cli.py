"""Operator commands on chamber cards: ``agora cards sign`` and ``agora cards verify FILE``.

Plain functions the CLI calls. `sign_pending_cards` signs every card sealed while no key was
configured (it adds a signature; card bytes never change) on an open SQLite connection;
`cmd_sign` does that on a database file. `verify_card_bytes` / `cmd_verify` re-check a card
document offline: its body hash and its Ed25519 signature. They print through the ``out``
callable they are given and return a process exit code.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path

from agora.toolsets.chamber import cards, store
from agora.toolsets.chamber.signing import Signer, SigningKeyError, load_signer

Out = Callable[[str], None]

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
        after = batch[-1][0]
    return signed


def cmd_sign(db_path: str | Path, key_path: str | Path, *, out: Out = print) -> int:
    """``agora cards sign``: sign all pending cards in the database at ``db_path``.

    Safe while a server runs on the same file: SQLite serialises the writers (this one waits
    up to `BUSY_SECONDS` for the lock) and the server reads cards from the store.

    Args:
        db_path: The agora SQLite file (it must exist; it is never created here).
        key_path: The signing key file (PEM Ed25519 private key, or 64 hex digits).
        out: Where to print.

    Returns:
        0 on success, 2 if the key or the database cannot be used.
    """
    try:
        signer = load_signer(key_path)
    except SigningKeyError as exc:
        out(f"cannot sign: {exc}")
        return 2
    if not Path(db_path).is_file():
        out(f"cannot sign: no database at {db_path}")
        return 2
    try:
        conn = sqlite3.connect(str(db_path), timeout=BUSY_SECONDS)
        try:
            signed = sign_pending_cards(conn, signer)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        out(f"cannot sign: {db_path} is not a usable agora database ({exc})")
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


def cmd_verify(path: str | Path, *, trusted_keys: Collection[str] = (), out: Out = print) -> int:
    """``agora cards verify FILE``: check a saved card's hash and signature offline.

    Args:
        path: The card document (as served by ``GET /cards/<id>``).
        trusted_keys: Public keys (hex) or key ids to require; empty accepts any valid key.
        out: Where to print.

    Returns:
        0 if the hash and signature check out, 1 if not (or unsigned), 2 if unreadable.
    """
    try:
        result = verify_card_bytes(Path(path).read_bytes(), trusted_keys)
    except (OSError, cards.CardFormatError) as exc:
        out(f"{path}: not a card document ({exc})")
        return 2
    out(f"card {result.card_id} ({result.toolset_id})")
    out(f"  hash: {'ok' if result.hash_ok else 'MISMATCH'}")
    out(f"  signature: {result.signature}" + (f" by {result.key_id}" if result.key_id else ""))
    if result.trusted is not None:
        out(f"  key trusted: {'yes' if result.trusted else 'NO'}")
    return 0 if result.ok else 1
