"""A card whose figures contradict each other is never signed, and never verifies as genuine.

Tester finding: an ``agora stdio --db`` database edited by hand (``opened = 4``) was sealed and
signed as "solved, 4 of 3 locks, 0 actions, 0 transcript records", and ``agora cards verify``
called it ``VERDICT: genuine``. The seal and ``agora cards sign`` now leave such a card
``pending_signature``; the verifier names what contradicts what, export bundle included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harness import Session, commit_writes, memory_db

from agora.toolsets.chamber import cards, cards_cli, consistency
from agora.toolsets.chamber.signing import signer_from_bytes

if TYPE_CHECKING:
    from pathlib import Path

OPERATOR = signer_from_bytes(b"42" * 32)


def _edited(seed: str = "edited") -> Session:
    """An attempt whose stored row says every lock (and one more) is open, with no action."""
    s = Session(seed=seed)
    assert s.entity.attempt is not None
    s.entity.attempt.opened = len(s.room.locks) + 1
    return s


def _verify(tmp_path: Path, doc: Any) -> tuple[int, list[str]]:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(doc))
    out: list[str] = []
    trust = [OPERATOR.public_key_hex]
    return cards_cli.cmd_verify(path, trusted_keys=trust, out=out.append, err=out.append), out


def test_the_seal_does_not_sign_a_card_that_contradicts_itself():
    s = _edited()
    outcome = s.seal(signer=OPERATOR)
    card = json.loads(outcome.card.body)
    total = len(s.room.locks)
    assert (card["outcome"], card["locks"]["opened"], card["actions_used"]) == (
        "solved",
        total + 1,
        0,
    )
    assert outcome.card.signature is None
    assert f"{total + 1} locks opened of a room that has {total}" in outcome.contradictions
    assert consistency.contradictions(json.loads(Session(seed="fine").seal().card.body)) == []


def test_agora_cards_sign_leaves_such_a_card_pending():
    s = _edited()
    s.seal()
    conn = memory_db()
    commit_writes(conn, s.writes)
    refused: list[tuple[str, list[str]]] = []
    assert cards_cli.sign_pending_cards(conn, OPERATOR, refused=refused) == []
    assert [card_id for card_id, _ in refused] == [s.entity.attempt.card.card_id]


def test_verify_calls_a_signed_card_that_contradicts_itself_not_genuine(tmp_path):
    s = _edited()
    body = s.seal().card.body  # signed as a forger's own process would sign it
    doc = json.loads(cards.publish(body, cards.signature_block(OPERATOR, body, s.wall)))
    status, out = _verify(tmp_path, doc)
    total = json.loads(body)["locks"]["total"]
    assert status == 1
    fault = f"{total + 1} locks opened of a room that has {total}"
    assert f"  figures CONTRADICT each other: {fault}" in out
    assert out[-1] == f"VERDICT: NOT genuine: its figures contradict each other ({fault})"


def test_verify_checks_the_bundles_transcript_against_the_cards_figures(tmp_path):
    s = Session(seed="bundle")
    s.act("look")
    assert s.entity.attempt is not None
    s.entity.attempt.wrong = 1  # no submission in the transcript
    outcome = s.seal(signer=OPERATOR, include_export_bundle=True)
    assert outcome.card.signature is not None  # the card alone can be true
    bundle = {
        "document": json.loads(cards.publish(outcome.card.body, outcome.card.signature)),
        "evidence_status": "signed",
        "transcript": [json.loads(r) for r in outcome.transcript],
        "transcript_retired": False,
    }
    status, out = _verify(tmp_path, bundle)
    assert status == 1
    assert "  transcript: ok (1 records give transcript_hash)" in out
    assert out[-1] == (
        "VERDICT: NOT genuine: its figures contradict each other (0 refused submissions in"
        " the transcript, 1 wrong ones)"
    )
