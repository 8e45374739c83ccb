"""Operator commands on chamber cards: ``agora cards sign``, ``agora cards verify FILE|URL``.

Plain functions the CLI calls. `sign_pending_cards` signs every card sealed while no key was
configured (it adds a signature; card bytes never change) on an open SQLite connection;
`cmd_sign` does that on a database file. `cmd_verify` re-checks a card document (`verify`):
its body hash, its Ed25519 signature, and whether the reader trusts the key (keys given, read
from a trust file, or fetched from a key URL the reader names: `verify_sources`), in the words
of `verify_report`. They print through the ``out`` callable they are given, their refusals and
warnings through ``err`` (stderr, after the ``agora:`` every such line of the command starts
with), and return a process exit code.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
import sys
from collections.abc import Callable, Collection
from pathlib import Path

from agora.store.db_path import open_problem
from agora.toolsets.chamber import cards, consistency, store, verify
from agora.toolsets.chamber import verify_report as report
from agora.toolsets.chamber import verify_sources as sources
from agora.toolsets.chamber.signing import Signer, SigningKeyError, load_signer

Out = Callable[[str], None]


def _to_stderr(line: str) -> None:
    print(f"agora: {line}", file=sys.stderr)


#: Cards signed per transaction.
SIGN_BATCH = 500
#: Seconds `cmd_sign` waits for the database lock held by a running server's writer.
BUSY_SECONDS = 30.0


def sign_pending_cards(
    conn: sqlite3.Connection,
    signer: Signer,
    now: dt.datetime | None = None,
    refused: list[tuple[str, list[str]]] | None = None,
) -> list[str]:
    """Sign every pending card whose figures agree with each other, committing each batch
    of `SIGN_BATCH` cards (one that contradicts itself stays unsigned for good: `consistency`).

    Short transactions let a running server's writer (which waits on SQLite's lock) go on
    between batches; the file may be signed while ``agora serve`` uses it.

    Args:
        conn: A connection to the agora database.
        signer: The operator's key.
        now: Signing time (default: the system clock, UTC).
        refused: Where to add each card left unsigned, with its contradictions.

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
                faults = list(consistency.body_faults(body))
                if faults:
                    if refused is not None:
                        refused.append((card_id, faults))
                    continue
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
        0 when every pending card was signed; 1 when some were left unsigned for good, their
        figures contradicting each other (named on ``err``: they never will be signed, and
        stay so on every run); 2 if the key or the database cannot be used.
    """
    try:
        signer = load_signer(key_path)
    except SigningKeyError as exc:
        err(f"cannot sign: {exc}")
        return 2
    if not Path(db_path).is_file():
        err(f"cannot sign: no database at {db_path}")
        return 2
    refused: list[tuple[str, list[str]]] = []
    try:
        conn = sqlite3.connect(str(db_path), timeout=BUSY_SECONDS)
        try:
            signed = sign_pending_cards(conn, signer, refused=refused)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        problem = open_problem(str(db_path), exc)  # a full disk in words, else SQLite's
        if problem == str(exc):
            err(f"cannot sign: {db_path} is not a usable agora database ({exc})")
        else:
            err(f"cannot sign: {db_path}: {problem}")
        return 2
    out(f"signed {len(signed)} card(s) with {signer.key_id}")
    for card_id in signed:
        out(f"  {card_id}")
    for card_id, faults in refused:
        err(
            f"left unsigned for good ({consistency.CONTRADICTORY}), its figures contradict each"
            f" other: {card_id}: {'; '.join(faults)}"
        )
    if refused:
        err(
            f"{len(refused)} card(s) will never be signed: their figures contradict each other"
            " (was the database edited?); the board does not count them"
        )
        return 1
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


def cmd_verify(
    path: str | Path,
    *,
    trusted_keys: Collection[str] = (),
    trust_files: Collection[str] = (),
    keys_urls: Collection[str] = (),
    out: Out = print,
    err: Out = _to_stderr,
    now: dt.datetime | None = None,
) -> int:
    """``agora cards verify FILE|URL``: check a card's hash, signature and signer; given a
    seal's export bundle, also that its transcript chains to the card's transcript hash.

    A signature only counts when its key is trusted: given with ``--trust``, listed in a
    ``--trust-file``, or published at a ``--keys-url`` the reader names explicitly.

    Args:
        path: The card document (as served by ``GET /cards/<id>``), or the http(s) URL
            of a card page, fetched as JSON (`verify_sources.card_from_url`).
        trusted_keys: Public keys (64 hex digits) the reader trusts; a key id is refused
            (`verify_sources.checked_key`).
        trust_files: Files of trusted keys (see `verify_sources.keys_from_file`).
        keys_urls: Key URLs (a server's ``/chamber/keys``) whose keys the reader trusts.
        out: Where to print the verdict.
        err: Where to say why there is none (an unreadable card or trust source).
        now: The time a bundle's retired transcript is judged at (default: the system clock).

    The output ends with one line, ``VERDICT: genuine`` or ``VERDICT: NOT genuine: <the
    first reason>``, so that no single check's line (a valid signature under a hash
    MISMATCH) can be taken for the whole answer; a refusal (exit 2) says why on ``err`` and
    ends ``out`` with that verdict line too.

    Returns:
        0 if the hash is right and a trusted key signed the card; 1 if not (unsigned,
        invalid, or signed by a key not trusted), or if fields beside the card, its hash and
        its signature were added (nothing vouches for them), or if a bundle says its
        transcript retired before it could have (`verify.retired_too_soon`); 2 if the card
        or a trust source is unreadable (or its URL cannot be fetched), or the file is a
        whole seal reply.
    """
    try:
        trusted = report.trusted(trusted_keys, trust_files, keys_urls, err)
    except sources.TrustError as exc:
        return _refuse(f"cannot verify: {exc}", out, err)
    try:
        named = sources.named_card(str(path))
        remote = str(path).startswith(("http://", "https://"))
        data = sources.read_card(path)
        bundle = verify.read_bundle(data)
        result = verify.verify_document(bundle.document if bundle else data, trusted)
        if bundle is not None and bundle.extra:  # beside the bundle's own members
            result = dataclasses.replace(result, unsigned=bundle.extra + result.unsigned)
    except sources.CardFetchError as exc:
        return _refuse(f"cannot verify: {exc}", out, err)
    except OSError as exc:  # no such file, no permission, a directory
        return _refuse(f"cannot verify: cannot read {path}: {exc.strerror or exc}", out, err)
    except cards.CardFormatError as exc:
        return _refuse(f"{path}: not a card document ({exc})", out, err)
    out(f"card {result.card_id} ({result.toolset_id})")
    hashed = "ok" if result.hash_ok else "MISMATCH (card_sha256 is not the hash of the card)"
    out(f"  hash: {hashed}")
    out(f"  {report.signature_line(result, trusted.get(result.public_key or '', ()))}")
    report.say_saved_copy(result, remote, out)
    when = now or dt.datetime.now(dt.UTC)
    transcript = "" if bundle is None else report.transcript_checked(bundle, out, when)
    faults = [*result.contradictions, *report.transcript_faults(bundle)]
    for fault in faults:
        out(f"  figures CONTRADICT each other: {fault}")
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
    report.say_what_it_is(result, out)
    problems = report.problems(result, transcript, named, faults)
    out(report.verdict(result, problems, bundle is not None and bundle.transcript is None))
    return 1 if problems else 0


def _refuse(why: str, out: Out, err: Out) -> int:
    """Say why nothing could be checked, and still end with the verdict line (exit 2)."""
    err(why)
    out(f"VERDICT: NOT genuine: {why}")
    return 2
