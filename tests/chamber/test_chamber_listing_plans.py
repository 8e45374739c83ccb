"""The public card listings read an index in the order they list (migration 5), on both engines.

``/cards?date=`` and ``/board/cards`` list cards in the order sealed, a page at a time; without
an index in that order every page sorts all the cards of the day (or of the board row's days).
Each test seeds a few cards, runs the listing through a spy that keeps its statements, and
asks the engine for the plan of the listing statement: SQLite's ``EXPLAIN QUERY PLAN`` must
name the index and no temporary B-tree; PostgreSQL's ``EXPLAIN`` (sequential scans off: the
table is tiny) an index scan of it and no sort.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.store.db import open_store
from agora.store.neutral import SQLITE, dialect_of
from agora.toolsets.chamber import listings, store
from query_plans import Spy, plan_of

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

TIMEOUT = 30
DAYS = ("2026-11-29", "2026-11-30", "2026-12-01")


def _card(i: int, day: str, source: str = "server") -> tuple[str, tuple[Any, ...]]:
    return (
        "INSERT INTO chamber_cards (card_id, toolset_id, sealed_date, handle, sealed_at,"
        " suite_id, outcome, body, seed_source, principal, product, actions_used, hints_used,"
        " wrong_submissions) VALUES (?, 'chamber', ?, ?, ?, 's', 'solved', ?, ?, 'p', 'm',"
        " 3, 0, 0)",
        (f"c{i:02d}", day, f"h{i}", f"{day}T0{i % 10}:00:00.000000Z", b"{}", source),
    )


def _plan_of_listing(listing: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, str]]:
    """A read that runs ``listings`` and returns its rows and the plans of its ORDER BY
    statements (`_plans`)."""

    def read(conn: Any) -> tuple[Any, str]:
        spy = Spy(conn)
        rows = listing(spy)
        return rows, _plans(conn, [s for s in spy.statements if "ORDER BY" in s[0]])

    return read


def _plans(conn: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> str:
    """The engine's plans of ``statements``, one line each, `` || `` between two."""
    assert statements
    return " || ".join(plan_of(conn, sql, params) for sql, params in statements)


LISTINGS = [
    pytest.param(
        lambda c: listings.list_cards(c, DAYS[1], after="c04", limit=2),
        ["c05", "c06"],
        "chamber_cards_in_order",
        id="cards-of-a-day",
    ),
    pytest.param(
        lambda c: listings.board_card_ids(c, "s", "m", DAYS[0], DAYS[1], after="c02", limit=3),
        ["c03", "c04", "c05"],
        "chamber_cards_board_rows",
        id="board-row",
    ),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real SQLite file, or a PostgreSQL schema of its own (`pg_url`)."""
    if request.param == "sqlite":
        return str(tmp_path / "chamber.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.mark.parametrize(("listing", "expected", "index"), LISTINGS)
async def test_the_card_listings_read_an_index_in_their_order_without_sorting(
    database: str, listing: Any, expected: list[str], index: str
) -> None:
    seeded = [_card(i, DAYS[i // 4]) for i in range(12)] + [_card(12, DAYS[1], "practice")]
    with trio.fail_after(TIMEOUT):
        async with open_store(database, store.MIGRATIONS) as st:
            await st.write(seeded)
            rows, plan = await st.read(_plan_of_listing(listing))
    assert [r["card_id"] for r in rows] == expected
    assert all(index in each for each in plan.split(" || ")), plan
    assert "TEMP B-TREE" not in plan, plan  # SQLite sorting
    assert "Sort" not in plan, plan  # PostgreSQL sorting
    assert "Seq Scan" not in plan, plan


def _indexes(conn: Any) -> set[str]:
    """The names of ``chamber_cards``' indexes."""
    if dialect_of(conn) == SQLITE:
        return {r[1] for r in conn.execute("PRAGMA index_list(chamber_cards)").fetchall()}
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'chamber_cards'"
        " AND schemaname = current_schema()"
    ).fetchall()
    return {r[0] for r in rows}


async def test_the_date_index_the_in_order_one_made_redundant_is_gone(database: str) -> None:
    """Migration 6 drops ``chamber_cards_by_date`` (sealed_date, card_id): migration 5's
    in-order index leads with ``sealed_date`` too, so it served no query the other could not,
    and cost every seal one more index entry. The listings keep their indexes (above)."""
    with trio.fail_after(TIMEOUT):
        async with open_store(database, store.MIGRATIONS[:5]) as st:
            assert "chamber_cards_by_date" in await st.read(_indexes)
        async with open_store(database, store.MIGRATIONS) as st:
            kept = await st.read(_indexes)
    assert "chamber_cards_by_date" not in kept
    assert {"chamber_cards_in_order", "chamber_cards_board_rows"} <= kept


async def test_the_drop_touches_no_index_of_that_name_in_public(pg_url: str) -> None:
    """Reviewer finding: migration 6 drops the date index by name, and PostgreSQL looks an
    unqualified name up along search_path (``<schema>,public``): a database whose own schema
    had lost the index would have dropped another's in ``public``. It drops only its own."""
    import secrets

    import psycopg

    table = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE public.{table} (sealed_date TEXT, card_id TEXT)")
        try:
            conn.execute(f"CREATE INDEX chamber_cards_by_date ON public.{table} (sealed_date)")
            with trio.fail_after(TIMEOUT):
                async with open_store(pg_url, store.MIGRATIONS[:5]) as st:
                    await st.write([("DROP INDEX chamber_cards_by_date", ())])  # its own
                async with open_store(pg_url, store.MIGRATIONS) as st:
                    assert "chamber_cards_by_date" not in await st.read(_indexes)
            public = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = 'public'"
                " AND indexname = 'chamber_cards_by_date'"
            ).fetchall()
            assert public == [(1,)]
        finally:
            conn.execute(f"DROP TABLE public.{table}")


async def test_a_board_row_s_page_seeks_to_its_cursor_not_to_the_range_s_first_day(
    database: str,
) -> None:
    """Reviewer finding (stop 25): a board row's page after a card read the row's index from
    the range's first day and walked every card up to the cursor. It now reads the rest of
    the cursor's day from the cursor itself (the index's day and time both bound the seek),
    then the days after it; the pages still follow each other across days."""
    seeded = [_card(i, DAYS[i // 4]) for i in range(12)]
    listing = lambda c: listings.board_card_ids(c, "s", "m", DAYS[0], DAYS[2], "c05", 4)  # noqa: E731
    with trio.fail_after(TIMEOUT):
        async with open_store(database, store.MIGRATIONS) as st:
            await st.write(seeded)
            rows, plan = await st.read(_plan_of_listing(listing))
            pages, after = [], ""
            while True:  # every page, two cards each, across the three days
                page = await st.read(
                    lambda c, a=after: listings.board_card_ids(c, "s", "m", DAYS[0], DAYS[2], a, 2)
                )
                if not page:
                    break
                pages.append([r["card_id"] for r in page])
                after = page[-1]["card_id"]
            beyond = await st.read(
                lambda c: listings.board_card_ids(c, "s", "m", DAYS[0], DAYS[1], "c09", 5)
            )
            before = await st.read(
                lambda c: listings.board_card_ids(c, "s", "m", DAYS[1], DAYS[2], "c01", 3)
            )
    in_order = [f"c{i:02d}" for i in range(8)] + ["c10", "c11", "c08", "c09"]  # by the hour
    assert [r["card_id"] for r in rows] == ["c06", "c07", "c10", "c11"]
    assert [card for page in pages for card in page] == in_order
    assert beyond == []  # a cursor past the range: nothing follows it there
    assert [r["card_id"] for r in before] == ["c04", "c05", "c06"]  # one before: the range
    cursor_day, rest = plan.split(" || ")  # (one statement before: from the first day)
    if cursor_day.startswith("SEARCH "):  # SQLite's plan (a file's test may run on PostgreSQL)
        assert "sealed_date=? AND <expr>>?" in cursor_day, cursor_day
        assert "sealed_date>? AND sealed_date<?" in rest, rest
    else:
        cond = cursor_day.partition("Index Cond: ")[2].partition(" | ")[0]
        assert "(sealed_date = " in cond, cursor_day
        assert "(COALESCE(sealed_at, ''::text) >= " in cond, cursor_day
        assert "Sort" not in plan, plan
