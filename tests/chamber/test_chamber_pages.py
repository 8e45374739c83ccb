"""The chamber's public pages over real HTTP: dates, paging, order, errors and wording.

A chamber server runs on a loopback socket in the test's Trio run (`pages_http`); cards are
sealed through real tool calls, and every page is fetched as a client would, JSON or HTML.
"""

from __future__ import annotations

import datetime as dt
import html
import logging
import re

import pytest
import trio
from chamber_agent import START
from pages_http import BROWSER, ENTRY, open_pages

from agora.toolsets.chamber import listings

DAY = START.date().isoformat()
ROW = f"suite=chambre-chrono-v0&product=gpt-5.6-sol&from={DAY}&to={DAY}"
TIMEOUT = 60


def _links(page: str, label: str) -> list[str]:
    """The hrefs of the links whose text is ``label``."""
    found = re.findall(r'<a href=(?:"([^"]*)"|([^ >"]+))[^>]*>([^<]*)</a>', page)
    return [html.unescape(q or bare) for q, bare, text in found if text == label]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/board?to=0001-01-01", id="board"),
        pytest.param(f"/board/cards?{ROW.split('&from')[0]}&to=0001-01-01", id="board-cards"),
        pytest.param("/board?from=0001-01-01&to=0001-01-01", id="first-day"),
    ],
)
async def test_a_range_at_the_start_of_the_calendar_is_clamped_not_a_500(wall, caplog, path):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            for accept in ("application/json", BROWSER):
                reply = await pages.get(path, accept)
                assert reply.status == 200, (path, reply.body[:300])
            assert (await pages.get(path)).json()["from"] == "0001-01-01"
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(
    ("query", "name"),
    [
        pytest.param("from=20261130", "from", id="basic-format"),
        pytest.param("from=2026-W49-1", "from", id="week-date"),
        pytest.param("to=20261130", "to", id="to-basic-format"),
        pytest.param("from=2026-11-3", "from", id="one-digit-day"),
        pytest.param("to=2026-02-30", "to", id="no-such-day"),
    ],
)
async def test_board_dates_are_yyyy_mm_dd_only_as_cards_dates_are(wall, query, name):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            for path in (f"/board?{query}", f"/board/cards?{ROW.split('&from')[0]}&{query}"):
                reply = await pages.get(path)
                assert reply.status == 400, (path, reply.body)
                assert reply.json()["error"] == f"{name} must be a date YYYY-MM-DD", path
            listing = await pages.get(f"/cards?date={query.split('=')[1]}")
            assert listing.status == 400
            assert listing.json()["error"] == "date must be a date YYYY-MM-DD"


@pytest.mark.parametrize(
    ("query", "error"),
    [
        pytest.param("date=2026-13-01", "date must be a date YYYY-MM-DD", id="bad-date"),
        pytest.param("limit=0", "limit must be a whole number from 1 to 1000", id="zero"),
        pytest.param("limit=-1", "limit must be a whole number from 1 to 1000", id="negative"),
        pytest.param("limit=1001", "limit must be a whole number from 1 to 1000", id="too-many"),
        pytest.param("limit=x", "limit must be a whole number from 1 to 1000", id="not-a-number"),
    ],
)
async def test_each_listing_error_names_only_what_was_wrong(wall, query, error):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            await pages.card()
            for path in (f"/cards?{query}", f"/board/cards?{ROW}&{query}"):
                if path.startswith("/board") and query.startswith("date"):
                    continue
                reply = await pages.get(path)
                assert (reply.status, reply.json()["error"]) == (400, error), path


async def test_next_after_is_given_only_when_more_cards_exist(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            for _ in range(2):
                await pages.card()
            for path in (f"/cards?date={DAY}&limit=2", f"/board/cards?{ROW}&limit=2"):
                body = (await pages.get(path)).json()
                assert len(body["cards"]) == 2, path
                assert "next_after" not in body, path
                assert _links((await pages.get(path, BROWSER)).text, "Next page") == [], path


async def test_both_html_listings_link_to_their_next_page_until_the_last(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            made = []
            for _ in range(5):
                made.append((await pages.card())["card_id"])
                wall.advance(1)
            for first in (f"/cards?date={DAY}&limit=2", f"/board/cards?{ROW}&limit=2"):
                seen: list[str] = []
                path: str | None = first
                while path is not None:
                    page = (await pages.get(path, BROWSER)).text
                    shown = re.findall(r'"/cards/(card-[^"]+)"', page)
                    seen += shown
                    body = (await pages.get(path)).json()
                    assert [c["card_id"] for c in body["cards"]] == seen[-len(body["cards"]) :]
                    following = _links(page, "Next page")
                    assert len(following) <= 1
                    assert bool(following) == ("next_after" in body), path
                    path = following[0] if following else None
                assert seen == made, first  # each card once, in the order sealed


async def test_a_day_is_listed_in_the_order_its_cards_were_sealed(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            made = []
            for seconds in (50, 10, 30, 0, 0):  # two sealed in the same second
                wall.current = START + dt.timedelta(seconds=seconds)
                made.append((await pages.card())["card"]["sealed_at"])
            body = (await pages.get(f"/cards?date={DAY}")).json()
            assert [c["sealed_at"] for c in body["cards"]] == sorted(made)
            ids = [c["card_id"] for c in body["cards"]]
            paged: list[str] = []
            path = f"/cards?date={DAY}&limit=1"
            while True:
                page = (await pages.get(path)).json()
                paged += [c["card_id"] for c in page["cards"]]
                if "next_after" not in page:
                    break
                path = f"/cards?date={DAY}&limit=1&after={page['next_after']}"
            assert paged == ids


async def test_listings_show_suite_and_product_link_the_board_and_say_what_is_empty(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            await pages.card(product="grok-4.6")
            listing = await pages.get(f"/cards?date={DAY}")
            assert listing.json()["cards"][0]["product"] == "grok-4.6"
            page = (await pages.get(f"/cards?date={DAY}", BROWSER)).text
            assert "chambre-chrono-v0" in page
            assert "grok-4.6" in page
            row = (await pages.get(f"/board/cards?{ROW}", BROWSER)).text
            for shown in (page, row):
                assert _links(shown, "Board"), shown
            empty = (await pages.get("/cards?date=2001-01-01", BROWSER)).text
            assert "No cards were sealed on 2001-01-01" in empty
            none = await pages.get(f"/board/cards?{ROW.replace('gpt', 'nobody')}", BROWSER)
            assert "No server-seeded cards of nobody-5.6-sol" in none.text


async def test_a_500_page_is_styled_as_the_400_page_is(wall, monkeypatch):
    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            refused = (await pages.get("/cards?date=nope", BROWSER)).text
            monkeypatch.setattr(listings, "list_cards", broken)
            failed = await pages.get(f"/cards?date={DAY}", BROWSER)
    assert failed.status == 500
    style = re.compile(r"body\{font:[^}]*\}")
    assert style.search(refused)
    assert style.search(failed.text)
    assert style.search(failed.text).group(0) == style.search(refused).group(0)


async def test_board_medians_are_always_json_floats(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            await pages.card(product="odd-1")
            for _ in range(2):
                await pages.card(product="even-2")
            rows = (await pages.get("/board")).json()["suites"]["chambre-chrono-v0"]
            page = (await pages.get("/board", BROWSER)).text
    assert {r["product"] for r in rows} == {"odd-1", "even-2"}
    for r in rows:
        medians = (r["median_hints"], r["median_wrong_submissions"])
        assert all(type(m) is float for m in medians), r
        # Failed cards only: no solved attempt, so no median actions of solved attempts.
        assert r["median_actions"] is None, r
    assert 'data-label="median actions of solved attempts">none</td>' in page
    assert "then fewer median actions of solved attempts" in page


@pytest.mark.parametrize(
    "path",
    [
        "/board?format=xml",
        f"/board/cards?{ROW}&format=xml",
        "/cards?format=xml",
        "/cards/card-20261130-0000000000000000?format=txt",
    ],
)
async def test_an_unknown_format_is_refused_naming_the_allowed_ones(wall, path):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            reply = await pages.get(path)
    assert reply.status == 400
    assert "format must be json or html" in reply.json()["error"]


async def test_the_board_page_shows_expired_and_quarantined_and_labels_solved(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            await pages.card()
            page = (await pages.get("/board", BROWSER)).text
    for head in ("expired", "quarantined", "solved"):
        assert f"<th>{head}</th>" in page, head
    assert "0% (0 solved)" not in page  # solved has a column of its own
    assert 'data-label="expired">0<' in page


async def test_an_unsigned_card_page_says_it_is_unsigned_by_the_keys_link(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            card_id = (await pages.card())["card_id"]
            page = (await pages.get(f"/cards/{card_id}", BROWSER)).text
    nav = page.split("<nav>")[1].split("</nav>")[0]
    assert "Signing keys" in nav
    assert "not signed yet" in nav


async def test_an_80_character_product_is_refused_saying_79_is_the_most(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            reply = await pages.mcp.call_tool(
                "enter_open_challenge", {**ENTRY, "product": "p" * 80}
            )
            accepted = await pages.card(product="p" * 79)
    refusal = reply["structuredContent"]
    assert refusal["code"] == "product_id_invalid"
    assert "at most 79 characters" in refusal["recovery_hint"]
    assert accepted["card"]["identity"]["product"] == "p" * 79


async def test_a_page_after_a_card_that_does_not_exist_is_refused(wall):
    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            await pages.card()
            after = "after=card-20261130-0000000000000000"
            for path in (f"/cards?date={DAY}&{after}", f"/board/cards?{ROW}&{after}"):
                reply = await pages.get(path)
                assert reply.status == 400, path
                assert reply.json()["error"] == "after must be the id of a card listed here"
