"""What ``agora cards verify`` says: each finding in words, and one verdict line last.

A sceptical reader verifying cards met answers they could misread: a whole seal reply
reported as a hash MISMATCH of an unsigned card, a field added to an unsigned card not
named, a document claiming ``signed`` with no signature called ``pending_signature``, every
broken signature a bare "INVALID signature", a hash MISMATCH followed by "valid
signature", and practice or expired cards not called so.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest
import trio
from harness import Session

from agora.toolsets.chamber import cards, cards_cli
from agora.toolsets.chamber.commands import Expire
from agora.toolsets.chamber.signing import signer_from_bytes
from agora.toolsets.chamber.web import card_html

if TYPE_CHECKING:
    from pathlib import Path

OPERATOR = signer_from_bytes(b"42" * 32)
TRUST = {"trusted_keys": [OPERATOR.public_key_hex]}


def document(signer: Any = OPERATOR, **session: Any) -> dict[str, Any]:
    outcome = Session(**session).seal(signer=signer)
    return json.loads(cards.publish(outcome.card.body, outcome.card.signature))


def run(tmp_path: Path, doc: Any, **trust: Any) -> tuple[int, list[str], list[str]]:
    """Exit status, printed lines and refusals of verifying ``doc`` saved as a file."""
    path = tmp_path / "card.json"
    path.write_text(json.dumps(doc))
    out: list[str] = []
    err: list[str] = []
    return cards_cli.cmd_verify(path, out=out.append, err=err.append, **trust), out, err


async def test_a_whole_seal_reply_is_named_and_its_export_bundle_pointed_to(
    agent, options, tmp_path
):
    key = tmp_path / "chamber.key"
    key.write_text("42" * 32)
    options["chamber"]["signing_key"] = str(key)
    with trio.fail_after(30):
        handle = (await agent.enter())["attempt_handle"]
        sealed = await agent.tool(
            "seal_attempt", challenge_handle=handle, include_export_bundle=True
        )
    assert sealed["evidence_status"] == "signed"
    status, out, err = run(tmp_path, sealed, **TRUST)
    assert err == [
        f"{tmp_path / 'card.json'}: not a card document (a whole seal_attempt reply: save its"
        " export_bundle alone as JSON (seal with include_export_bundle: true) and verify that,"
        " or verify its card_url)"
    ]
    assert (status, out) == (2, [f"VERDICT: NOT genuine: {err[0]}"])
    status, out, _ = run(tmp_path, sealed["export_bundle"], **TRUST)
    assert (status, out[-1]) == (0, "VERDICT: genuine")


def test_the_bare_card_is_told_which_document_to_check_and_refusals_end_with_a_verdict(
    tmp_path,
):
    """Tester finding: the seal reply's ``card`` member, saved alone, got a message listing
    bundle keys; and a refusal (exit 2) printed no VERDICT line, which README promises."""
    doc = document()
    status, out, err = run(tmp_path, doc["card"], **TRUST)
    assert err == [
        f"{tmp_path / 'card.json'}: not a card document (the bare card, without its hash and"
        " signature: check its document, the object {card, card_sha256, evidence_status,"
        " signature} that GET /cards/<id>?format=json serves and a seal's export_bundle holds"
        " as document (or that export_bundle itself))"
    ]
    assert (status, out) == (2, [f"VERDICT: NOT genuine: {err[0]}"])
    path = tmp_path / "twice.json"
    path.write_text('{"card": {}, ' + json.dumps(doc)[1:])  # "card" given twice
    out, err = [], []
    assert cards_cli.cmd_verify(path, out=out.append, err=err.append, **TRUST) == 2
    assert err == [f"{path}: not a card document (the key 'card' appears twice in one object)"]
    assert out == [f"VERDICT: NOT genuine: {err[0]}"]


def test_a_field_added_to_an_unsigned_card_is_named(tmp_path):
    doc = {**document(signer=None), "note": "verified by ScoreIA"}
    status, out, _ = run(tmp_path, doc)
    assert status == 1
    assert out[4] == (  # (after the line on a saved unsigned copy)
        "  NOT covered by hash or signature: note (added beside the card: nothing vouches for it)"
    )


def test_a_document_saying_signed_without_a_signature_is_reported_as_it_is(tmp_path):
    doc = {**document(signer=None), "evidence_status": "signed"}
    status, out, _ = run(tmp_path, doc, **TRUST)
    assert status == 1
    assert out[2] == (
        '  NOT signed: the document says evidence_status "signed" but has no signature: nothing'
        " vouches for this card"
    )
    assert out[-1] == "VERDICT: NOT genuine: not signed"
    status, out, _ = run(tmp_path, document(signer=None), **TRUST)
    assert out[2] == "  NOT signed (pending_signature): nothing vouches for this card yet"


def _swap(doc: dict[str, Any]) -> None:
    """The signature block of another genuine card."""
    doc["signature"] = document(handle="chl-00000000000000ff", seed="other")["signature"]


def _edit_card_sha256(doc: dict[str, Any]) -> None:
    doc["card_sha256"] = doc["card_sha256"][:-1] + ("0" if doc["card_sha256"][-1] != "0" else "1")


@pytest.mark.parametrize(
    ("edit", "hash_line", "signature_line", "verdict"),
    [
        pytest.param(
            _swap,
            "ok",
            "INVALID signature: signed for another card hash (or its signed_at or value was"
            " edited)",
            "signed for another card hash (or its signed_at or value was edited)",
            id="swapped",
        ),
        pytest.param(
            lambda d: d["signature"].update(key_id="ed25519:" + "0" * 16),
            "ok",
            "INVALID signature: key_id does not match public_key",
            "key_id does not match public_key",
            id="key-id",
        ),
        pytest.param(
            lambda d: d["signature"].update(alg="none"),
            "ok",
            "INVALID signature: alg 'none' not supported (only Ed25519)",
            "alg 'none' not supported (only Ed25519)",
            id="alg",
        ),
        pytest.param(
            lambda d: d.update(evidence_status="pending_signature"),
            "ok",
            "INVALID signature: evidence_status differs from the signed one: the document says"
            " 'pending_signature', the signature covers 'signed'",
            "evidence_status differs from the signed one: the document says"
            " 'pending_signature', the signature covers 'signed'",
            id="status",
        ),
        pytest.param(
            lambda d: d["card"]["identity"].update(host="edited"),
            "MISMATCH (card_sha256 is not the hash of the card)",
            "INVALID signature: the card was edited after it was signed (the signature covers"
            " the card_sha256 written beside it, not the card's hash)",
            "card_sha256 is not the card's hash",
            id="card-edited",
        ),
        pytest.param(
            # The card is the signed one; only the hash written beside it is wrong: the
            # signature line alone would read as a pass.
            _edit_card_sha256,
            "MISMATCH (card_sha256 is not the hash of the card)",
            f"valid signature, trusted key {OPERATOR.key_id} via --trust",
            "card_sha256 is not the card's hash",
            id="hash-edited",
        ),
    ],
)
def test_each_broken_signature_says_why_and_the_verdict_comes_last(
    tmp_path, edit, hash_line, signature_line, verdict
):
    doc = document()
    edit(doc)
    status, out, _ = run(tmp_path, doc, **TRUST)
    assert status == 1
    assert out[1:] == [
        f"  hash: {hash_line}",
        f"  {signature_line}",
        f"VERDICT: NOT genuine: {verdict}",
    ]


def test_a_genuine_card_ends_with_a_genuine_verdict(tmp_path):
    status, out, _ = run(tmp_path, document(), **TRUST)
    assert (status, out[1:]) == (
        0,
        [
            "  hash: ok",
            f"  valid signature, trusted key {OPERATOR.key_id} via --trust",
            "VERDICT: genuine",
        ],
    )
    status, out, _ = run(tmp_path, document())  # no key trusted
    assert (status, out[-1]) == (
        1,
        f"VERDICT: NOT genuine: signed by a key you do not trust ({OPERATOR.key_id})",
    )


def test_practice_and_expired_cards_are_called_so(tmp_path):
    status, out, _ = run(tmp_path, document(seed_source="participant"), **TRUST)
    assert status == 0
    assert out[-2:] == [
        "  practice card: the participant chose this room's seed, so the room may have been"
        " played before; it is not evidence of a fresh room",
        "VERDICT: genuine, a practice card",
    ]
    s = Session()
    s.wall += dt.timedelta(hours=3)
    expired = s.send(Expire(signer=OPERATOR))
    doc = json.loads(cards.publish(expired.card.body, expired.card.signature))
    assert doc["card"]["outcome"] == "expired"
    status, out, _ = run(tmp_path, doc, **TRUST)
    assert status == 0
    assert out[-2:] == [
        "  expired: the attempt was abandoned; the server sealed it when its time ran out",
        "VERDICT: genuine, an expired attempt",
    ]


def _retired_bundle() -> tuple[dict[str, Any], dt.datetime]:
    """A genuine export bundle stripped of its transcript, and when its card was sealed."""
    s = Session(seed="retired")
    s.act("look")
    outcome = s.seal(signer=OPERATOR, include_export_bundle=True)
    doc = json.loads(cards.publish(outcome.card.body, outcome.card.signature))
    bundle = {
        "document": doc,
        "evidence_status": "signed",
        "transcript": [],
        "transcript_retired": True,
    }
    sealed = dt.datetime.fromisoformat(doc["card"]["sealed_at"].replace("Z", "+00:00"))
    return bundle, sealed


def test_a_bundle_without_its_transcript_says_so_in_the_verdict(tmp_path):
    """Tester finding: a bundle whose transcript was dropped by setting transcript_retired
    verified as a plain "genuine", minutes after its seal, when its session (every wrong
    guess and hint) was still kept."""
    bundle, sealed = _retired_bundle()
    later = sealed + dt.timedelta(seconds=86_400, minutes=1)
    status, out, _ = run(tmp_path, bundle, now=later, **TRUST)
    assert status == 0
    assert out[3] == "  transcript: retired with the session, not checked (only the card is)"
    assert out[-1] == (
        "VERDICT: genuine; its transcript NOT checked: the bundle has none (retired with the"
        " session)"
    )
    soon = sealed + dt.timedelta(minutes=5)
    status, out, _ = run(tmp_path, bundle, now=soon, **TRUST)
    assert status == 1
    until = f"{sealed + dt.timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}"
    why = (
        f"sessions are kept 86400 s after their card, so this one's transcript exists until {until}"
    )
    assert out[3] == f"  transcript: said to be retired, NOT credible: {why}"
    assert out[-1] == (
        "VERDICT: NOT genuine: the bundle withholds its transcript, said to be retired too soon"
        f" ({why})"
    )


def test_a_refusal_says_what_it_was_given_and_what_to_verify_instead(tmp_path):
    """Tester finding: a day's listing and other JSON were refused with the list of an export
    bundle's members, which read as if found; a saved card page was "not JSON"."""
    needs = (
        "a card document is an object of the members card, card_sha256, evidence_status and"
        " signature (as GET /cards/<id>?format=json serves it), an export bundle one of"
        " document, evidence_status, transcript and transcript_retired (a seal's export_bundle)"
    )
    listing = {"date": "2026-11-30", "cards": [{"card_id": "card-x"}]}
    keys = {"keys": [{"key_id": "k", "public_key": "ab" * 32}]}
    for doc, said in (
        (
            listing,
            "a card listing, not one card: verify each card's URL (/cards/<card_id>, for each"
            " card_id it lists), one card at a time",
        ),
        (
            keys,
            "a key document (/chamber/keys): give it as --trust-file FILE and verify a"
            " card's document",
        ),
        ({"ok": True, "connections": 3}, f"a JSON object of the members connections, ok: {needs}"),
        ([document()], f"a JSON array: {needs}"),
        ({"card": "x"}, f"its card member is a JSON string, not an object: {needs}"),
    ):
        status, out, err = run(tmp_path, doc, **TRUST)
        assert (status, err) == (2, [f"{tmp_path / 'card.json'}: not a card document ({said})"])
    page = tmp_path / "card.html"
    page.write_bytes(card_html(json.dumps(document()).encode()).body)  # saved by a browser
    out, err = [], []
    assert cards_cli.cmd_verify(page, out=out.append, err=err.append, **TRUST) == 2
    card_id = document()["card"]["card_id"]
    assert err == [
        f"{page}: not a card document (an HTML page: verify the card's URL (agora fetches its"
        " ?format=json form), or the JSON document saved from its ?format=json URL (this page"
        f" links /cards/{card_id}?format=json))"
    ]


def test_a_member_added_to_an_export_bundle_is_named_as_for_a_document(tmp_path):
    outcome = Session(seed="extra").seal(signer=OPERATOR, include_export_bundle=True)
    bundle = {
        "document": json.loads(cards.publish(outcome.card.body, outcome.card.signature)),
        "evidence_status": "signed",
        "transcript": [json.loads(r) for r in outcome.transcript],
        "transcript_retired": False,
        "note": "audited by ScoreIA",
    }
    status, out, err = run(tmp_path, bundle, **TRUST)
    assert (status, err) == (1, [])
    assert (
        "  NOT covered by hash or signature: note (added beside the card: nothing vouches for it)"
    ) in out
    assert out[-1] == "VERDICT: NOT genuine: note added beside the card, covered by nothing"


def test_a_saved_unsigned_copy_says_to_fetch_the_current_document(tmp_path):
    """Tester finding: a bundle saved while its card was pending, checked after `agora cards
    sign` signed the card, said only "nothing vouches for this card yet"."""
    doc = document(signer=None)
    status, out, _ = run(tmp_path, doc, **TRUST)
    assert status == 1
    said = (
        "a saved copy never changes: if its server has signed the card since, verify the"
        f" current document at the card's URL (SERVER/cards/{doc['card']['card_id']})"
    )
    assert out[2:4] == [
        "  NOT signed (pending_signature): nothing vouches for this card yet",
        f"  {said}",
    ]
    bundle = {"document": doc, "evidence_status": "pending_signature", "transcript": []}
    status, out, _ = run(tmp_path, {**bundle, "transcript_retired": False}, **TRUST)
    assert (status, out[3]) == (1, "  " + said)
    assert "a saved copy" not in " ".join(run(tmp_path, document(), **TRUST)[1])


def test_the_trusted_key_line_names_the_trust_source_and_an_edited_key_file_is_reported(
    tmp_path,
):
    """Tester finding: "trusted key" did not say whether the reader's own --trust or the
    server's key URL vouched; a saved key document whose key_id did not derive from its
    public_key (another key pasted in) was trusted without a word."""
    public = OPERATOR.public_key_hex
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"key_id": OPERATOR.key_id, "public_key": public}]}))
    status, out, err = run(tmp_path, document(), trusted_keys=[public], trust_files=[str(keys)])
    assert (status, err) == (0, [])
    assert out[2] == (
        f"  valid signature, trusted key {OPERATOR.key_id} via --trust and --trust-file {keys}"
    )
    fresh = signer_from_bytes(b"17" * 32)  # a key the server never used
    swapped = tmp_path / "keys_swapped.json"
    entry = {"key_id": OPERATOR.key_id, "public_key": fresh.public_key_hex}
    swapped.write_text(json.dumps({"keys": [entry]}))
    status, out, err = run(tmp_path, document(signer=fresh), trust_files=[str(swapped)])
    assert status == 1
    assert err == [
        f"warning: {swapped}: the entry of key_id {OPERATOR.key_id} is not trusted: its"
        f" public_key {fresh.public_key_hex} has the key id {fresh.key_id}, so the document"
        " was edited"
    ]
    assert out[-1] == f"VERDICT: NOT genuine: signed by a key you do not trust ({fresh.key_id})"


def test_a_saved_listing_page_is_told_to_verify_each_card_not_a_card_page(tmp_path):
    from agora.toolsets.chamber.web import page

    links = "".join(f'<li><a href="/cards/c-{n}">c-{n}</a></li>' for n in (1, 2))
    saved = tmp_path / "day.html"
    saved.write_bytes(page("Chamber cards of 2026-12-05", f"<ul>{links}</ul>").body)
    out, err = [], []
    assert cards_cli.cmd_verify(saved, out=out.append, err=err.append, **TRUST) == 2
    assert err == [
        f"{saved}: not a card document (an HTML page (Chamber cards of 2026-12-05) listing 2"
        " cards: verify each card's URL)"
    ]
    board = tmp_path / "board.html"
    board.write_bytes(page("Chamber board 2026-11-06 to 2026-12-05", "<table></table>").body)
    err.clear()
    assert cards_cli.cmd_verify(board, out=out.append, err=err.append, **TRUST) == 2
    assert err == [
        f"{board}: not a card document (an HTML page (Chamber board 2026-11-06 to 2026-12-05)"
        " that links no card: verify a card's URL (a board row links its cards' list, each card"
        " there links its page))"
    ]
