"""A card whose figures contradict each other counts nowhere, signed or not, and says why.

Tester finding: such a card, left unsigned by the seal, ranked first on the board and its page
read "not signed yet (pending_signature)". These tests pin each reader separately (the end to
end test, tests/e2e/test_chamber_e2e_contradictory.py, plays the whole story): the board's
rows and a row's cards, paged, leave it out (unsigned: the board does not judge signed cards,
whose check came before their signing); its document
and the day's listing say ``contradictory``; its page says why; ``agora cards sign`` names it
and exits 1 after signing the rest; ``agora cards verify`` says why it is not signed.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from harness import Session, commit_writes, memory_db

from agora.store.migrations import apply_migrations
from agora.toolsets.chamber import cards, cards_cli, listings, store, web
from agora.toolsets.chamber.sealing import seal_reply
from agora.toolsets.chamber.signing import signer_from_bytes

if TYPE_CHECKING:
    from pathlib import Path

OPERATOR = signer_from_bytes(b"42" * 32)
DAY = "2026-11-30"


def _sealed(conn: sqlite3.Connection, n: int, *, forged: bool = False) -> str:
    """Seal attempt ``n`` into ``conn`` (its stored figures edited when ``forged``); its id."""
    s = Session(seed=f"seed-{n}", handle=f"chl-{n:016x}")
    s.act("look")
    if forged:
        assert s.entity.attempt is not None
        s.entity.attempt.opened = len(s.room.locks) + 1
    card_id = s.seal().card.card_id
    commit_writes(conn, s.writes)
    return card_id


def _sign_as_an_older_agora(conn: sqlite3.Connection, card_id: str) -> None:
    """Sign a card as agora did before it checked figures (the card stays as it is)."""
    sealed = store.load_card(conn, card_id)
    assert sealed is not None
    block = cards.signature_block(OPERATOR, sealed.body, sealed.sealed_at)
    conn.execute("BEGIN")
    conn.execute(*store.add_signature(card_id, block))
    conn.execute("COMMIT")


def _row_pages(conn: sqlite3.Connection, limit: int) -> list[list[str]]:
    """Every page of the board row's cards, ``limit`` a page, as `board_web` asks them."""
    pages, after = [], ""
    while True:
        rows = listings.board_card_ids(conn, "chambre-chrono-v0", "gpt-5.6-sol", DAY, DAY,
                                       after, limit + 1)  # fmt: skip
        shown = [r["card_id"] for r in rows[:limit]]
        pages.append(shown)
        if len(rows) <= limit:
            return pages
        after = shown[-1]


def test_the_board_and_its_rows_cards_leave_unsigned_contradictory_cards_out():
    conn = memory_db()
    made = [(n, _sealed(conn, n, forged=n in (1, 2, 3, 5))) for n in range(7)]
    forged = {card_id for n, card_id in made if n in (1, 2, 3, 5)}
    fair = sorted(card_id for _, card_id in made if card_id not in forged)
    older = sorted(forged)[:2]  # signed before the server checked: the board trusts signed
    for card_id in older:
        _sign_as_an_older_agora(conn, card_id)
    counted = sorted(fair + older)

    rows = listings.board_cards(conn, DAY, DAY)
    assert len(rows) == len(counted) == 5
    assert sorted(r[2] for r in rows) == ["failed"] * 3 + ["solved"] * 2  # the older two
    pages = _row_pages(conn, 2)
    assert [c for page in pages for c in page] == counted
    assert [len(page) for page in pages] == [2, 2, 1]  # full pages, past the forged cards
    assert _row_pages(conn, 10) == [counted]


def test_its_document_listing_and_page_say_it_will_never_be_signed():
    conn = memory_db()
    unsigned, signed = _sealed(conn, 1, forged=True), _sealed(conn, 2, forged=True)
    fine = _sealed(conn, 3)
    _sign_as_an_older_agora(conn, signed)
    document = store.card_document(conn, unsigned)
    assert document is not None
    doc = json.loads(document)
    assert (doc["evidence_status"], doc["signature"]) == ("contradictory", None)
    statuses = {c["card_id"]: c["evidence_status"] for c in listings.list_cards(conn, DAY)}
    assert statuses == {unsigned: "contradictory", signed: "signed", fine: "pending_signature"}

    total = doc["card"]["locks"]["total"]
    page = web.card_html(document).body.decode()
    assert "not signed yet" not in page
    assert "<strong>never to be signed</strong>: its figures contradict each other" in page
    assert f"<li><bdi>{total + 1} locks opened of a room that has {total}</bdi></li>" in page
    assert "no key has signed it and none ever will. The board does not count it" in page
    assert "(no key has signed this card, and none will)" in page
    old = store.card_document(conn, signed)
    assert old is not None
    page = web.card_html(old).body.decode()
    assert "<strong>Contradictory card</strong>" in page
    assert "It was signed before the server checked this: the signature does not make it" in page
    assert "The board, which judges unsigned cards only, still counts it, and" in page
    assert "The board does not count it" not in page
    page = web.card_html(store.card_document(conn, fine) or b"").body.decode()
    assert "Contradictory" not in page
    assert "<strong>not signed yet</strong> (pending_signature)" in page


def test_cards_sign_names_it_signs_the_rest_and_exits_1(tmp_path: Path):
    db = tmp_path / "agora.db"
    conn = sqlite3.connect(db, isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS)
    forged, fine = _sealed(conn, 1, forged=True), _sealed(conn, 2)
    conn.close()
    key = tmp_path / "key.hex"
    key.write_text("42" * 32)
    out: list[str] = []
    err: list[str] = []
    assert cards_cli.cmd_sign(db, key, out=out.append, err=err.append) == 1
    assert out == [f"signed 1 card(s) with {OPERATOR.key_id}", f"  {fine}"]
    assert err[0].startswith(
        f"left unsigned for good (contradictory), its figures contradict each other: {forged}: "
    )
    assert err[1].startswith("1 card(s) will never be signed: their figures contradict each other")
    out.clear()
    err.clear()
    assert cards_cli.cmd_sign(db, key, out=out.append, err=err.append) == 1  # and every run
    assert out == [f"signed 0 card(s) with {OPERATOR.key_id}"]


def test_verify_says_why_such_a_card_is_not_signed(tmp_path: Path):
    conn = memory_db()
    card_id = _sealed(conn, 1, forged=True)
    path = tmp_path / "card.json"
    path.write_bytes(store.card_document(conn, card_id) or b"")
    out: list[str] = []
    assert cards_cli.cmd_verify(path, out=out.append, err=out.append) == 1
    assert out[2] == (
        "  NOT signed (contradictory): the server never signs a card whose figures contradict"
        " each other"
    )
    assert out[-1] == "VERDICT: NOT genuine: not signed"


def test_the_seal_says_why_even_when_the_key_is_broken():
    """A key that failed to load would answer signature_unavailable, "an operator will sign
    it": not for a card no key will ever sign."""
    s = Session(seed="broken-key")
    assert s.entity.attempt is not None
    s.entity.attempt.opened = len(s.room.locks) + 1
    reply = seal_reply(s.seal(key_broken=True), None)
    assert (reply["ok"], reply["evidence_status"], reply["attempt_state"]) == (
        True,
        "contradictory",
        "quarantined",
    )
    assert reply["note"].startswith("This card will never be signed, and the board does not")
    assert "contradict each other" in reply["note"]
