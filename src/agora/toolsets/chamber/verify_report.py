"""What ``agora cards verify`` prints about a card it checked: each check's line, the trust
sources that vouch for its key, and the verdict line with its first reason.

`cards_cli.cmd_verify` reads the card and runs the checks (`verify`); the words are here, one
function per part of the output, each printing through the ``out`` callable it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from agora.toolsets.chamber import consistency, verify
from agora.toolsets.chamber import verify_sources as sources
from agora.toolsets.chamber.contract import default_contract

if TYPE_CHECKING:
    import datetime as dt

Out = Callable[[str], None]


def signature_line(result: verify.Verification, via: Collection[str] = ()) -> str:
    """What the signature check found, in words; ``via``: the trust sources listing the
    signing key (``--trust``, ``--trust-file PATH``, ``--keys-url URL``)."""
    if result.signature == "missing":
        if result.status == "pending_signature":
            return "NOT signed (pending_signature): nothing vouches for this card yet"
        if result.status == consistency.CONTRADICTORY and result.contradictions:
            return (
                f"NOT signed ({consistency.CONTRADICTORY}): the server never signs a card whose"
                " figures contradict each other"
            )
        return (
            f"NOT signed: the document says evidence_status {json.dumps(result.status)} but"
            " has no signature: nothing vouches for this card"
        )
    if result.signature == "invalid":
        return f"INVALID signature: {result.reason}"
    if not result.trusted:
        return (
            f"valid signature, key NOT trusted ({result.key_id}): pass --keys-url URL of the"
            " server you trust, or its public key with --trust PUBLIC_KEY or --trust-file FILE"
        )
    return f"valid signature, trusted key {result.key_id} via {' and '.join(via)}"


def problems(
    result: verify.Verification, transcript: str, named: str | None, faults: list[str]
) -> list[str]:
    """Why the card is not genuine, in the order the output shows them (none: genuine)."""
    found = []
    if not result.hash_ok:
        found.append("card_sha256 is not the card's hash")
    if result.signature == "missing":
        found.append("not signed")
    elif result.signature == "invalid":
        found.append(result.reason)
    elif not result.trusted:
        found.append(f"signed by a key you do not trust ({result.key_id})")
    if transcript:
        found.append(transcript)
    if faults:
        found.append(f"its figures contradict each other ({faults[0]})")
    if result.unsigned:
        found.append(f"{', '.join(result.unsigned)} added beside the card, covered by nothing")
    if named is not None and named != result.card_id:
        found.append(f"not the card the URL names ({named})")
    return found


#: The end of a genuine verdict on a bundle without its transcript: the card alone was checked.
UNCHECKED = "; its transcript NOT checked: the bundle has none (retired with the session)"


def verdict(result: verify.Verification, problems: list[str], retired: bool = False) -> str:
    """The last line: whether the card is genuine, what kind of card it is, and, for a bundle
    whose transcript retired, that only the card was checked."""
    if problems:
        return f"VERDICT: NOT genuine: {problems[0]}"
    kinds = ["a practice card"] * bool(result.practice)
    kinds += ["an expired attempt"] * (result.outcome == "expired")
    kind = f", {' and '.join(kinds)}" if kinds else ""
    return f"VERDICT: genuine{kind}{UNCHECKED * retired}"


def trusted(
    keys: Collection[str], files: Collection[str], urls: Collection[str], err: Out
) -> dict[str, list[str]]:
    """Each trusted public key, with the sources that list it, as the output names them; an
    edited key document entry is left out, with a warning on ``err``.

    Raises:
        TrustError: a source that cannot be read, or a key that is not one.
    """
    trusted: dict[str, list[str]] = {}

    def add(found: list[str], source: str) -> None:
        for key in found:
            if source not in trusted.setdefault(key, []):
                trusted[key].append(source)

    def warn(line: str) -> None:
        err(f"warning: {line}")

    add([sources.checked_key(key, "--trust ") for key in keys], "--trust")
    for file in files:
        add(sources.keys_from_file(file, warn), f"--trust-file {file}")
    for url in urls:
        add(sources.keys_from_url(url, warn=warn), f"--keys-url {url}")
    return trusted


def say_saved_copy(result: verify.Verification, remote: bool, out: Out) -> None:
    """For an unsigned card read from a file: that the copy may be older than the card."""
    if result.status == "pending_signature" and result.signature == "missing" and not remote:
        out(
            "  a saved copy never changes: if its server has signed the card since, verify"
            f" the current document at the card's URL (SERVER/cards/{result.card_id})"
        )


def say_what_it_is(result: verify.Verification, out: Out) -> None:
    """What the card's own fields say it is worth, as its page says: practice, expired."""
    if result.practice:
        out(f"  practice card: {result.practice}; it is not evidence of a fresh room")
    if result.outcome == "expired":
        out("  expired: the attempt was abandoned; the server sealed it when its time ran out")


def transcript_faults(bundle: verify.Bundle | None) -> list[str]:
    """What an export bundle's transcript says against its card's figures."""
    if bundle is None or bundle.transcript is None:
        return []
    card = json.loads(bundle.document)["card"]
    return consistency.transcript_contradictions(card, bundle.transcript)


def transcript_checked(bundle: verify.Bundle, out: Out, now: dt.datetime) -> str:
    """Say whether an export bundle's transcript chains to its card's transcript hash; return
    why not ("" if it does, or if the bundle credibly says its session retired: it has no
    transcript to check, and the verdict says so). A retirement said before the session could
    have retired (`verify.retired_too_soon`) is a transcript withheld."""
    card = json.loads(bundle.document)["card"]
    if bundle.transcript is None:
        retention = default_contract().limits.finished_session_retention_seconds
        early = verify.retired_too_soon(card, now, retention)
        if early:
            out(f"  transcript: said to be retired, NOT credible: {early}")
            return f"the bundle withholds its transcript, said to be retired too soon ({early})"
        out("  transcript: retired with the session, not checked (only the card is)")
        return ""
    if verify.transcript_matches(card, bundle.transcript):
        out(f"  transcript: ok ({len(bundle.transcript)} records give transcript_hash)")
        return ""
    out("  transcript: MISMATCH (its records do not give the card's transcript_hash)")
    return "the transcript does not give the card's transcript_hash"
