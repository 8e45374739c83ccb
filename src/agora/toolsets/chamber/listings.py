"""The public card listings' reads: a day's cards and a board row's, a page at a time.

``/cards?date=`` (`list_cards`) and ``/board/cards`` (`board_card_ids`) list cards in the
order sealed, each page starting just past the card named by its cursor; ``/board`` ranks
the figures of `board_cards`. Each paged statement is served by an index in its order
(migration 5, `schema`), on SQLite and PostgreSQL alike. This module reads committed rows
only: it builds no writes, and knows nothing of pages, attempts or the entity.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.identity import ANONYMOUS
from agora.toolsets.chamber.consistency import body_faults, evidence_status

if TYPE_CHECKING:
    from agora.store.neutral import ReadConn


#: Listings run in the order sealed, the card id breaking ties, so a page starts just past
#: its last card; 0.2.0 cards have no ``sealed_at`` and come first (``COALESCE``: NULLs sort
#: first in SQLite, last in PostgreSQL). ``sealed_date`` leads the order so that one index
#: serves a day and a range of days (migration 5); it changes nothing, as a listing is of one
#: day or of 0.3.0 cards only, whose day is that of ``sealed_at``. The cursor's ``>=`` is
#: implied by what follows it: it is the bound both engines seek the index to.
_SEALED_KEY = "COALESCE(sealed_at, '')"
_AFTER = f" AND {_SEALED_KEY} >= ? AND ({_SEALED_KEY} > ? OR ({_SEALED_KEY} = ? AND card_id > ?))"
_IN_ORDER = f" ORDER BY sealed_date, {_SEALED_KEY}, card_id LIMIT ?"


class UnknownCursor(ValueError):
    """``after`` names no card: a page can only start after a card that exists."""


def _after(conn: ReadConn, after: str) -> tuple[str, str, str, str]:
    """`_AFTER`'s parameters: just past card ``after`` ("" = the start); `UnknownCursor`
    if no card has that id."""
    if not after:
        return "", "", "", ""
    key = _position(conn, after)[1]
    return key, key, key, after


def _position(conn: ReadConn, card_id: str) -> tuple[str, str]:
    """Card ``card_id``'s place in the order sealed: its day and its `_SEALED_KEY`;
    `UnknownCursor` if no card has that id."""
    row = conn.execute(
        f"SELECT sealed_date, {_SEALED_KEY} FROM chamber_cards WHERE card_id = ?", (card_id,)
    ).fetchone()
    if row is None:
        raise UnknownCursor(card_id)
    return row[0], row[1]


def list_cards(
    conn: ReadConn, date: str, after: str = "", limit: int = 200
) -> list[dict[str, Any]]:
    """Cards sealed on UTC ``date`` (``YYYY-MM-DD``) in the order sealed, after card
    ``after`` (`UnknownCursor` if it names none), at most ``limit``."""
    rows = conn.execute(
        "SELECT card_id, toolset_id, sealed_at, suite_id, outcome, body, signature IS NOT NULL,"
        " seed_source, product FROM chamber_cards WHERE sealed_date = ?" + _AFTER + _IN_ORDER,
        (date, *_after(conn, after), limit),
    ).fetchall()
    listing = []
    for r in rows:
        status = "legacy" if r[5] is None else evidence_status(bytes(r[5]), bool(r[6]))
        entry = {"card_id": r[0], "toolset_id": r[1], "evidence_status": status}
        if r[5] is not None:
            entry.update(sealed_at=r[2][:19] + "Z", suite_id=r[3], outcome=r[4])
            entry.update(seed_source=r[7], practice=r[7] != "server", product=r[8])
        listing.append(entry)
    return listing


_BOARD_WHERE = (
    " FROM chamber_cards WHERE body IS NOT NULL AND seed_source = ?"
    " AND sealed_date >= ? AND sealed_date <= ?"
)
#: One board row's server-seeded cards (seed source, suite, product), its days to follow.
_ROW = (
    " FROM chamber_cards WHERE body IS NOT NULL AND seed_source = ? AND suite_id = ?"
    " AND product = ?"
)


#: Only cards whose attempt a named principal entered (with its bearer token): an anonymous
#: caller may claim any product, so a reader may rank the ones a server's principals entered.
_NAMED = " AND principal IS NOT NULL AND principal <> ?"


def board_cards(
    conn: ReadConn, first: str, last: str, suite_id: str | None = None, named: bool = False
) -> list[tuple[str, str, str, int, int, int]]:
    """(suite, product, outcome, actions, hints, wrong) of server-seeded cards sealed
    between the UTC days ``first`` and ``last`` (inclusive), optionally of one suite, and
    (``named``) only those a named principal entered; none whose figures contradict each
    other (`consistency.body_faults`), which the server never signs (`_UNSIGNED_BODY`)."""
    sql = (
        "SELECT suite_id, product, outcome, actions_used, hints_used, wrong_submissions,"
        f" {_UNSIGNED_BODY}" + _BOARD_WHERE
    )
    params: tuple[Any, ...] = ("server", first, last)
    if named:
        sql += _NAMED
        params += (ANONYMOUS,)
    if suite_id is not None:
        sql += " AND suite_id = ?"
        params += (suite_id,)
    return [tuple(r[:6]) for r in conn.execute(sql, params) if not _faulty(r[6])]


#: A card's body where it is unsigned, else NULL: the board judges the figures of unsigned
#: cards only. A signed card passed the same check before its signing (the seal's, or
#: ``agora cards sign``'s), so the board reads and parses no body on a server with a key;
#: one signed by an agora that did not check yet is `agora cards verify`'s to judge.
_UNSIGNED_BODY = "CASE WHEN signature IS NULL THEN body END"


def _faulty(body: Any) -> bool:
    """Whether an `_UNSIGNED_BODY` (None: a signed card) contradicts itself."""
    return body is not None and bool(body_faults(bytes(body)))


def board_card_ids(
    conn: ReadConn,
    suite_id: str,
    product: str,
    first: str,
    last: str,
    after: str = "",
    limit: int = 200,
    named: bool = False,
) -> list[dict[str, Any]]:
    """The server-seeded cards behind one board row in the order sealed, after card
    ``after`` (`UnknownCursor` if it names none), at most ``limit``; each says whether it is
    signed yet (``evidence_status``), as the board counts cards signed or not. A card whose
    figures contradict each other is not among them, as the board does not count it: pages
    are read on past such cards until ``limit`` are found or the row ends.
    """
    found: list[dict[str, Any]] = []
    while len(found) < limit:
        wanted = limit - len(found)
        rows = _row_page(conn, (suite_id, product, named), first, last, after, wanted)
        found += [card for card, body in rows if not _faulty(body)]
        if len(rows) < wanted:  # the row ends here
            break
        after = rows[-1][0]["card_id"]
    return found


def _row_page(
    conn: ReadConn, which: tuple[str, str, bool], first: str, last: str, after: str, limit: int
) -> list[tuple[dict[str, Any], Any]]:
    """`board_card_ids`' cards, those whose figures contradict each other included, each
    with its `_UNSIGNED_BODY`.

    A page after a card reads the rest of that card's day first, the index seeking to the card
    itself, and then the days after it: one statement over the whole range can seek only to
    a day (the days are a range before the time in the index), so each page walked every
    card of the row from the range's first day to its cursor.
    """
    suite_id, product, named = which
    select = (
        f"SELECT card_id, sealed_at, outcome, actions_used, signature IS NOT NULL, {_UNSIGNED_BODY}"
        + _ROW
        + (_NAMED if named else "")
    )
    row: tuple[str, ...] = ("server", suite_id, product) + ((ANONYMOUS,) if named else ())
    day = ""
    rows: list[Any] = []
    if after:
        day, key = _position(conn, after)
        if first <= day <= last:  # the rest of the cursor's day
            rows = conn.execute(
                select + " AND sealed_date = ?" + _AFTER + _IN_ORDER,
                (*row, day, key, key, key, after, limit),
            ).fetchall()
        if day > last:
            return []
    if len(rows) < limit:  # the days after it (all of the range, with no cursor in it)
        since = " AND sealed_date > ?" if first <= day else " AND sealed_date >= ?"
        rows += conn.execute(
            select + since + " AND sealed_date <= ?" + _IN_ORDER,
            (*row, day if first <= day else first, last, limit - len(rows)),
        ).fetchall()
    return [
        (
            {
                "card_id": r[0],
                "sealed_at": r[1][:19] + "Z",
                "outcome": r[2],
                "actions_used": r[3],
                "evidence_status": "signed" if r[4] else "pending_signature",
            },
            r[5],
        )
        for r in rows
    ]


#: At most this many open attempts are read for the board's count (entry rate limits keep the
#: number far below it on a server that sets them).
MAX_OPEN_READ = 20_000


def open_attempts(
    conn: ReadConn, first: str, suite_id: str | None = None, named: bool = False
) -> tuple[dict[str, dict[str, int]], str | None]:
    """Server-seeded attempts not sealed yet whose card may still land on the UTC day
    ``first`` or later, by suite and product, and the latest ``expires_at`` among them (None if
    none): each becomes a card when sealed (today), or at its expiry by the sweep (its expiry's
    day), so a board range from ``first`` reaching today is not final until then."""
    sql = (
        "SELECT suite_id, identity, expires_at FROM chamber_attempts"
        " WHERE card_id IS NULL AND seed_source = ? AND expires_at >= ?"
    )
    params: tuple[Any, ...] = ("server", first)
    if suite_id is not None:
        sql += " AND suite_id = ?"
        params += (suite_id,)
    if named:  # as the board it is for counts them (`board_cards`)
        sql += _NAMED
        params += (ANONYMOUS,)
    counts: dict[str, dict[str, int]] = {}
    latest: str | None = None
    for suite, identity, expires in conn.execute(sql + f" LIMIT {MAX_OPEN_READ}", params):
        product = str(json.loads(identity).get("product", "unknown"))
        by_product = counts.setdefault(suite, {})
        by_product[product] = by_product.get(product, 0) + 1
        latest = expires if latest is None or expires > latest else latest
    return counts, None if latest is None else latest[:19] + "Z"  # to the second, as cards
