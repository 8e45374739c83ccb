"""The public board (JSON): products ranked per suite over a date range, server seeds only.

Cards are made through the tools (the reference solver solves some rooms); the board must
count every server-seeded card in the range, leave practice cards and cards outside the
range out, rank by success rate then median actions of solved attempts, and link each
row to its cards.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from typing import TYPE_CHECKING, Any

import trio
from solver import Solver

from agora.identity import Principal
from agora.toolsets.chamber import board
from agora.web.http import Request

if TYPE_CHECKING:
    from chamber_agent import Agent


def _request(path: str, accept: str = "application/json") -> Request:
    parsed = urllib.parse.urlsplit(path)
    query = dict(urllib.parse.parse_qsl(parsed.query))
    return Request("GET", parsed.path, query, {"accept": accept})


async def _get(toolset: Any, runtime: Any, path: str, accept: str = "application/json") -> Any:
    route_path = urllib.parse.urlsplit(path).path
    route = next(r for r in toolset.routes if r.pattern == route_path)
    response = await route.handler(_request(path, accept), runtime)
    if accept == "application/json":
        return response.status, json.loads(response.body)
    return response.status, response.body.decode()


async def _solve(agent: Agent, product: str, **entry: Any) -> dict[str, Any]:
    h = (await agent.enter(product=product, **entry))["attempt_handle"]

    def act(op: str, object: str | None = None, value: Any = None) -> dict[str, Any]:
        args: dict[str, Any] = {"challenge_handle": h, "op": op}
        if object is not None:
            args["object"] = object
        if value is not None:
            args["value"] = value
        return trio.from_thread.run(lambda: agent.tool("chamber_action", **args))

    await trio.to_thread.run_sync(lambda: Solver(act).run())
    return (await agent.tool("seal_attempt", challenge_handle=h))["card"]


async def _fail(agent: Agent, product: str, looks: int = 1, **entry: Any) -> dict[str, Any]:
    h = (await agent.enter(product=product, **entry))["attempt_handle"]
    for _ in range(looks):
        await agent.tool("chamber_action", challenge_handle=h, op="hint")
    return (await agent.tool("seal_attempt", challenge_handle=h))["card"]


async def test_the_board_ranks_server_seeded_cards_and_links_each_row(
    agent, chamber, runtime, wall
):
    toolset, _ = chamber
    with trio.fail_after(60):
        wall.current = dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)
        await _solve(agent, "gpt-5.6-sol")  # outside the range asked below
        wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
        solved = [await _solve(agent, "gpt-5.6-sol") for _ in range(2)]
        failed = await _fail(agent, "gpt-5.6-sol", looks=3)
        lone = await _solve(agent, "grok-4.6")
        await _fail(agent, "composer-3", looks=2)
        await _fail(agent, "composer-3", looks=4)
        await _solve(agent, "cheater-1", seed="replayed")  # practice: never ranks
        await _solve(agent, "grok-4.6", suite="chambre-atelier-v0")

    status, body = await _get(toolset, runtime, "/board?from=2026-11-15&to=2026-11-30")
    assert status == 200
    assert (body["from"], body["to"], body["seed_source"]) == ("2026-11-15", "2026-11-30", "server")
    chrono = body["suites"]["chambre-chrono-v0"]
    assert [r["product"] for r in chrono] == ["grok-4.6", "gpt-5.6-sol", "composer-3"]
    assert [r["rank"] for r in chrono] == [1, 2, 3]
    grok, gpt, composer = chrono
    assert (grok["attempts"], grok["solved"], grok["success_rate"]) == (1, 1, 1.0)
    assert grok["median_actions"] == lone["actions_used"]
    assert (gpt["attempts"], gpt["solved"]) == (3, 2)
    assert gpt["success_rate"] == round(2 / 3, 4)
    # The failed card's actions do not count: the median of the two solved ones.
    assert gpt["median_actions"] == sum(c["actions_used"] for c in solved) / 2
    assert failed["actions_used"] > 0
    assert (gpt["hints_used"], gpt["median_hints"]) == (3, 0)
    assert (composer["attempts"], composer["solved"], composer["success_rate"]) == (2, 0, 0)
    # 2 and 4 hint calls: 2 and 3 hints given (a lock has three; the fourth call gives none).
    assert (composer["median_hints"], composer["hints_used"]) == (2.5, 5)
    assert "cheater-1" not in json.dumps(body)
    assert [r["product"] for r in body["suites"]["chambre-atelier-v0"]] == ["grok-4.6"]

    # Each row links to exactly the cards it counts, each resolvable.
    status, cards = await _get(toolset, runtime, gpt["cards"])
    assert status == 200
    assert len(cards["cards"]) == 3
    ids = {c["card_id"] for c in cards["cards"]}
    assert {c["card_id"] for c in solved} | {failed["card_id"]} == ids
    card_route = next(r for r in toolset.routes if r.pattern == "/cards/{card_id}")
    for c in cards["cards"]:
        request = _request(c["url"])
        request.params["card_id"] = c["card_id"]
        assert (await card_route.handler(request, runtime)).status == 200

    status, one = await _get(toolset, runtime, "/board?suite=chambre-atelier-v0&to=2026-11-30")
    assert list(one["suites"]) == ["chambre-atelier-v0"]
    assert one["from"] == "2026-11-01"  # the default range: the last 30 days


async def test_board_queries_are_checked(chamber, runtime):
    toolset, _ = chamber
    for path in (
        "/board?suite=chambre-xyz-v0",
        "/board?from=2026-13-01",
        "/board?from=2026-11-30&to=2026-11-01",
        "/board?from=2020-01-01&to=2026-11-30",
        "/board/cards?suite=chambre-chrono-v0",
    ):
        status, body = await _get(toolset, runtime, path)
        assert status == 400, path
        assert body["error"]


def test_rank_orders_by_success_then_fewer_actions_then_more_attempts():
    rows = [
        ("s", "a", "solved", 20, 0, 0),
        ("s", "b", "solved", 10, 0, 0),
        ("s", "c", "failed", 5, 1, 2),
        ("s", "d", "solved", 20, 0, 0),
        ("s", "d", "solved", 20, 0, 0),
        ("s", None, "expired", 3, 0, 0),
    ]
    ranked = board.rank(rows)["s"]
    assert [r.product for r in ranked] == ["b", "d", "a", "c", "unknown"]
    assert ranked[3].median_wrong == 2
    assert ranked[-1].expired == 1


def test_only_solved_cards_count_towards_the_median_actions():
    """Sealing or abandoning a bad run at once must not rank above playing it out."""
    rows = [
        ("s", "quitter", "expired", 0, 0, 0),
        ("s", "honest", "failed", 1, 0, 0),
        ("s", "fast", "solved", 10, 0, 0),
        ("s", "fast", "failed", 0, 0, 0),
        ("s", "fast", "failed", 0, 0, 0),
        ("s", "steady", "solved", 8, 0, 0),
        ("s", "steady", "failed", 40, 0, 0),
        ("s", "steady", "failed", 40, 0, 0),
    ]
    ranked = board.rank(rows)["s"]
    assert [r.product for r in ranked] == ["steady", "fast", "honest", "quitter"]
    assert [r.median_actions for r in ranked] == [8.0, 10.0, None, None]
    assert ranked[0].as_json(1, "u")["median_actions"] == 8.0
    assert ranked[-1].as_json(4, "u")["median_actions"] is None


async def test_browsers_get_board_errors_as_html_pages(chamber, runtime):
    toolset, _ = chamber
    browser = "text/html,application/xhtml+xml,*/*;q=0.8"
    for path in ("/board?suite=nope", "/board/cards?suite=chambre-chrono-v0"):
        status, page = await _get(toolset, runtime, path, browser)
        assert status == 400, path
        assert page.startswith("<!doctype html>"), path
        assert "Content-Security-Policy" in page or "<h1>" in page
    status, page = await _get(toolset, runtime, "/board?suite=nope", browser)
    assert "no suite &#x27;nope&#x27;" in page


async def test_a_product_no_card_can_carry_is_a_bad_query_not_a_page_about_it(chamber, runtime):
    # Any text was echoed as the page's title and heading, under Cache-Control: public (a
    # hostile client's finding: content spoofing on a cacheable page).
    toolset, _ = chamber
    browser = "text/html,application/xhtml+xml,*/*;q=0.8"
    spoof = urllib.parse.quote("Official notice: all cards revoked")
    status, page = await _get(
        toolset, runtime, f"/board/cards?suite=chambre-chrono-v0&product={spoof}", browser
    )
    assert status == 400
    assert "Official notice" not in page
    assert "product is not a product id" in page
    status, _ = await _get(toolset, runtime, "/board/cards?suite=chambre-chrono-v0&product=gpt-5")
    assert status == 200


async def test_under_a_public_url_prefix_the_board_links_rows_and_cards_under_it(
    agent, chamber, runtime, wall
):
    """A tester's finding: behind a proxy at /agora, a board row's ``cards`` path was
    ``/board/cards?...``, outside the prefix (its cards' own urls had it)."""
    toolset, _ = chamber
    with trio.fail_after(60):
        wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
        await _solve(agent, "gpt-5.6-sol")
    runtime.public_url = "http://127.0.0.1:8765/agora"
    status, body = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-11-30")
    assert status == 200
    [row] = body["suites"]["chambre-chrono-v0"]
    assert row["cards"].startswith("/agora/board/cards?"), row
    status, cards = await _get(toolset, runtime, row["cards"].removeprefix("/agora"))
    assert status == 200
    assert cards["cards"][0]["url"].startswith("/agora/cards/"), cards


async def test_the_board_counts_unsigned_cards_and_its_cards_page_marks_them(
    agent, chamber, runtime, wall, options, tmp_path
):
    """A sceptical reader's finding: the board said every row "links to the signed cards
    behind it" and the start page "from signed evidence cards", yet it counted cards sealed
    ``pending_signature`` without a word. Unsigned cards still count (a server without a key
    would show an empty board): the pages say so and mark them."""
    toolset, _ = chamber
    with trio.fail_after(60):
        wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
        unsigned = await _fail(agent, "gpt-5.6-sol")
        key = tmp_path / "chamber.key"
        key.write_text("42" * 32)
        options["chamber"]["signing_key"] = str(key)
        signed = await _fail(agent, "gpt-5.6-sol")
    _, body = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-11-30")
    [row] = body["suites"]["chambre-chrono-v0"]
    assert row["attempts"] == 2
    _, listing = await _get(toolset, runtime, row["cards"])
    assert {c["card_id"]: c["evidence_status"] for c in listing["cards"]} == {
        unsigned["card_id"]: "pending_signature",
        signed["card_id"]: "signed",
    }
    browser = "text/html,application/xhtml+xml,*/*;q=0.8"
    _, page = await _get(toolset, runtime, row["cards"], browser)
    items = [li.split("</li>")[0] for li in page.split("<li>")[1:]]
    lines = {li.split('">')[1].split("<")[0]: li for li in items}
    assert lines[unsigned["card_id"]].endswith(" failed, 1 action, pending_signature")
    assert lines[signed["card_id"]].endswith(" failed, 1 action, signed")
    _, page = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-11-30", browser)
    assert "signed cards behind it" not in page
    assert "Every sealed card counts, signed or not yet signed" in page
    assert "a card not signed yet is marked pending_signature" in page
    assert dict(toolset.pages)["/board"] == (
        "Board: products ranked per suite, from sealed evidence cards"
    )


async def test_attempts_still_open_are_counted_apart_and_say_when_the_range_is_final(
    agent, chamber, runtime, wall
):
    # Sealing only the good runs must not pass for the whole record while the others are
    # open: the board says how many are open per product, and until when the range can change.
    toolset, _ = chamber
    wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    with trio.fail_after(60):
        await _solve(agent, "demo-agent")
        kept = [(await agent.enter(product="demo-agent"))["attempt_handle"] for _ in range(2)]
        await agent.enter(product="other-agent", suite="chambre-atelier-v0")
        await agent.enter(product="demo-agent", seed="mine")  # practice: not on the board
        await _fail(agent, "demo-agent")  # sealed: counted, not open
    status, body = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-11-30")
    assert status == 200
    assert body["still_open"] == {
        "chambre-chrono-v0": {"demo-agent": 2},
        "chambre-atelier-v0": {"other-agent": 1},
    }
    assert body["final_after"] == "2026-11-30T14:00:00Z"  # entry + the 7,200 s TTL
    [row] = body["suites"]["chambre-chrono-v0"]
    assert row["attempts"] == 2
    status, page = await _get(toolset, runtime, "/board?to=2026-11-30", accept="text/html")
    assert "Still open, not counted yet: demo-agent 2." in page
    assert "not final before 2026-11-30T14:00:00Z" in page
    # A range that ends before today cannot change: nothing is said of open attempts.
    status, past = await _get(toolset, runtime, "/board?from=2026-11-01&to=2026-11-29")
    assert past["still_open"] == {"chambre-chrono-v0": {}, "chambre-atelier-v0": {}}
    assert past["final_after"] is None
    # Nor one that starts after the last of them can land.
    status, future = await _get(toolset, runtime, "/board?from=2026-12-01&to=2026-12-05")
    assert future["still_open"]["chambre-chrono-v0"] == {}
    assert future["final_after"] is None
    for handle in kept:
        await agent.tool("seal_attempt", challenge_handle=handle)
    status, body = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-11-30")
    assert body["still_open"]["chambre-chrono-v0"] == {}
    assert body["suites"]["chambre-chrono-v0"][0]["attempts"] == 4


async def test_an_open_attempt_counts_only_in_ranges_its_card_can_still_land_in(
    agent, chamber, runtime, wall
):
    # Near midnight: one attempt expires today, another tomorrow; a range of tomorrow alone
    # can get the second's card only (the first is sealed or expires today).
    toolset, _ = chamber
    wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    with trio.fail_after(60):
        await agent.enter(product="demo-agent")  # expires 14:00 today
        wall.current = dt.datetime(2026, 11, 30, 23, 30, tzinfo=dt.UTC)
        await agent.enter(product="demo-agent")  # expires 01:30 tomorrow
    status, body = await _get(toolset, runtime, "/board?from=2026-12-01&to=2026-12-01")
    assert status == 200
    assert body["still_open"]["chambre-chrono-v0"] == {"demo-agent": 1}
    assert body["final_after"] == "2026-12-01T01:30:00Z"
    status, body = await _get(toolset, runtime, "/board?from=2026-11-30&to=2026-12-01")
    assert body["still_open"]["chambre-chrono-v0"] == {"demo-agent": 2}


async def test_the_board_can_rank_only_attempts_named_principals_entered(
    agent, chamber, runtime, wall
):
    # Anyone may claim any product: anonymous callers sealing three empty runs as a named
    # principal's product dragged its row from 1 of 1 to 1 of 4. A reader may rank only the
    # attempts the server's principals entered, and each row's cards follow the same choice.
    from chamber_agent import Agent

    toolset, _ = chamber
    alice = Agent(runtime, dict(toolset.handlers), Principal("alice"))
    wall.current = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    with trio.fail_after(60):
        solved = await _solve(alice, "test-agent")
        for _ in range(3):
            await _fail(agent, "test-agent", looks=0)  # anonymous, no token
    day = "from=2026-11-30&to=2026-11-30&suite=chambre-chrono-v0"
    status, everyone = await _get(toolset, runtime, f"/board?{day}")
    [row] = everyone["suites"]["chambre-chrono-v0"]
    assert (everyone["entered"], row["attempts"], row["solved"]) == ("any", 4, 1)
    status, named = await _get(toolset, runtime, f"/board?{day}&entered=named")
    assert status == 200
    [row] = named["suites"]["chambre-chrono-v0"]
    assert (named["entered"], row["attempts"], row["solved"]) == ("named", 1, 1)
    await agent.enter(product="flood")  # anonymous and open: not the named board's either
    status, named = await _get(toolset, runtime, f"/board?{day}&entered=named")
    assert named["still_open"] == {"chambre-chrono-v0": {}}
    assert named["final_after"] is None
    status, everyone = await _get(toolset, runtime, f"/board?{day}")
    assert everyone["still_open"] == {"chambre-chrono-v0": {"flood": 1}}
    assert "entered=named" in row["cards"]
    status, cards = await _get(toolset, runtime, row["cards"])
    assert [c["card_id"] for c in cards["cards"]] == [solved["card_id"]]
    assert cards["entered"] == "named"
    status, page = await _get(toolset, runtime, f"/board?{day}&entered=named", "text/html")
    assert "<option value=named selected>named principals only</option>" in page
    assert "<option selected>chambre-chrono-v0</option>" in page
    assert "Only attempts entered by the server's named principals" in page
    status, refused = await _get(toolset, runtime, "/board?entered=someone")
    assert status == 400
    assert "entered must be any" in refused["error"]
