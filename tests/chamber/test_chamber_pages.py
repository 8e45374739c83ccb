"""The chamber's public pages over real HTTP: dates, paging, order, errors and wording.

A chamber server runs on a loopback socket in the test's Trio run (`pages_http`); cards are
sealed through real tool calls, and every page is fetched as a client would, JSON or HTML.
"""

from __future__ import annotations

import html
import re

import trio
from chamber_agent import START
from pages_http import BROWSER, ENTRY, open_pages

from agora.toolsets.chamber import store

DAY = START.date().isoformat()
ROW = f"suite=chambre-chrono-v0&product=gpt-5.6-sol&from={DAY}&to={DAY}"
TIMEOUT = 60


def _links(page: str, label: str) -> list[str]:
    """The hrefs of the links whose text is ``label``."""
    found = re.findall(r'<a href=(?:"([^"]*)"|([^ >"]+))[^>]*>([^<]*)</a>', page)
    return [html.unescape(q or bare) for q, bare, text in found if text == label]


async def test_a_500_page_is_styled_as_the_400_page_is(wall, monkeypatch):
    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    with trio.fail_after(TIMEOUT):
        async with open_pages(wall) as pages:
            refused = (await pages.get("/cards?date=nope", BROWSER)).text
            monkeypatch.setattr(store, "list_cards", broken)
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
    assert {r["product"] for r in rows} == {"odd-1", "even-2"}
    for r in rows:
        medians = (r["median_actions"], r["median_hints"], r["median_wrong_submissions"])
        assert all(type(m) is float for m in medians), r


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
