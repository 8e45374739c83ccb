"""Public card pages: JSON documents, escaped HTML views, dated listings, legacy bytes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from harness import Session

from agora.toolsets.chamber import cards, store, verify, web
from agora.toolsets.chamber.commands import Expire
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.signing import signer_from_bytes
from agora.web.http import Request

LEGACY = Path(__file__).parent / "fixtures" / "legacy_cards"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def get(path: str, accept: str = "*/*", **query: str) -> Request:
    params = {}
    if path.startswith("/cards/"):
        params["card_id"] = path.removeprefix("/cards/")
    return Request("GET", path, query, {"accept": accept}, b"", params)


async def sealed_card(agent, **extra) -> dict:
    h = (await agent.enter(**extra))["attempt_handle"]
    return await agent.tool("seal_attempt", challenge_handle=h)


async def test_a_card_is_served_as_its_stored_document(runtime, agent):
    sealed = await sealed_card(agent)
    response = await web.get_card(get(f"/cards/{sealed['card_id']}"), runtime)
    assert response.status == 200
    assert response.content_type == "application/json"
    stored = await runtime.read(lambda c: store.card_document(c, sealed["card_id"]))
    assert response.body == stored
    doc = json.loads(response.body)
    assert doc["card"] == sealed["card"]
    assert doc["evidence_status"] == "pending_signature"
    assert verify.verify_document(response.body).hash_ok


async def test_browsers_get_an_html_view_with_everything_escaped(runtime, agent):
    sealed = await sealed_card(agent, model_claim="<script>alert('x')</script> & co")
    response = await web.get_card(get(f"/cards/{sealed['card_id']}", BROWSER), runtime)
    assert response.content_type.startswith("text/html")
    page = response.body.decode()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in page
    assert (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'",
    ) in response.headers
    forced = await web.get_card(get(f"/cards/{sealed['card_id']}", BROWSER, format="json"), runtime)
    assert forced.content_type == "application/json"


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        pytest.param("*/*", False, id="curl"),
        pytest.param("", False, id="none"),
        pytest.param("application/json", False, id="json"),
        pytest.param(BROWSER, True, id="browser"),
        pytest.param("text/html;q=0.5, application/json", False, id="json-preferred"),
        pytest.param("text/*", True, id="text-wildcard"),
    ],
)
def test_content_negotiation(accept, html):
    assert web.wants_html(get("/cards/x", accept)) is html


async def test_unknown_and_malformed_card_ids_are_404(runtime):
    for card_id in ("card-20990101-0000000000000000", "..%2Fetc", "x" * 101):
        response = await web.get_card(get(f"/cards/{card_id}"), runtime)
        assert response.status == 404


async def test_listing_by_date_pages_through_cards(runtime, agent, wall):
    ids = sorted([(await sealed_card(agent))["card_id"] for _ in range(3)])
    response = await web.list_cards(get("/cards", date="2026-11-30", limit="2"), runtime)
    body = json.loads(response.body)
    assert [c["card_id"] for c in body["cards"]] == ids[:2]
    assert body["next_after"] == ids[1]
    rest = await web.list_cards(get("/cards", date="2026-11-30", after=ids[1]), runtime)
    assert [c["card_id"] for c in json.loads(rest.body)["cards"]] == ids[2:]
    today = json.loads((await web.list_cards(get("/cards"), runtime)).body)
    assert today["date"] == "2026-11-30"
    assert len(today["cards"]) == 3
    entry = today["cards"][0]
    assert entry["outcome"] == "failed"
    assert entry["suite_id"] == "chambre-chrono-v0"
    page = await web.list_cards(get("/cards", BROWSER, date="2026-11-30"), runtime)
    assert page.body.decode().count('<a href="/cards/card-') == 3
    empty = json.loads((await web.list_cards(get("/cards", date="2001-01-01"), runtime)).body)
    assert empty["cards"] == []


@pytest.mark.parametrize("query", [{"date": "2026-13-01"}, {"date": "yesterday"}, {"limit": "x"}])
async def test_bad_listing_queries_are_400(runtime, query):
    assert (await web.list_cards(get("/cards", **query), runtime)).status == 400


async def test_legacy_cards_are_served_byte_for_byte(runtime):
    legacy = default_contract().legacy_toolset_id
    for path in LEGACY.glob("*.json"):
        data = path.read_bytes()
        card_id, date = cards.legacy_fields(data, legacy)
        await runtime.write([store.import_legacy(card_id, date, data, legacy)])
        response = await web.get_card(get(f"/cards/{card_id}"), runtime)
        assert response.body == data
        page = await web.get_card(get(f"/cards/{card_id}", BROWSER), runtime)
        assert page.status == 200
        assert b"<script" not in page.body


async def test_right_to_left_text_in_a_claim_stays_inside_its_value(runtime, agent):
    # Overrides (U+202E) are refused at entry; right-to-left letters are a name's own.
    claim = "model \u05e2\u05d1\u05e8\u05d9\u05ea 2"
    sealed = await sealed_card(agent, model_claim=claim)
    response = await web.get_card(get(f"/cards/{sealed['card_id']}", BROWSER), runtime)
    page = response.body.decode()
    assert f"<bdi>{claim}</bdi>" in page
    assert f"<code><bdi>{sealed['card_id']}</bdi></code>" in page


async def test_browsers_get_errors_as_small_html_pages_with_the_same_status(runtime):
    cases = [
        (web.get_card, get("/cards/card-nope", BROWSER), 404, "no such card"),
        (web.list_cards, get("/cards", BROWSER, date="2026-02-30"), 400, "date must be"),
    ]
    for handler, request, status, message in cases:
        response = await handler(request, runtime)
        assert response.status == status
        assert response.content_type.startswith("text/html")
        page = response.body.decode()
        assert message in page
        assert page.startswith("<!doctype html>")
        api = await handler(
            Request("GET", request.path, request.query, {"accept": "*/*"}, b"", request.params),
            runtime,
        )
        assert (api.status, api.content_type) == (status, "application/json")
        assert message in json.loads(api.body)["error"]


async def test_a_card_page_links_to_the_board_its_day_its_json_and_the_keys(runtime, agent):
    sealed = await sealed_card(agent)
    card_id, date = sealed["card_id"], sealed["card"]["date"]
    page = (await web.get_card(get(f"/cards/{card_id}", BROWSER), runtime)).body.decode()
    for href in ("/board", f'"/cards?date={date}"', f'"/cards/{card_id}?format=json"'):
        assert f"<a href={href}>" in page, href
    assert "<a href=/chamber/keys>" in page
    assert "agora cards verify URL" in page


def _page(document: bytes) -> str:
    return web.card_html(document).body.decode()


def test_a_card_page_opens_with_a_summary_line_and_marks_expired_cards():
    """A sceptical reader's finding: the page opened on a table of 25 fields, the product,
    outcome and signature far down; an expired card had no banner as practice cards do."""
    key = signer_from_bytes(b"42" * 32)
    sealed = Session(seed="web").seal(signer=key)
    page = _page(cards.publish(sealed.card.body, sealed.card.signature))
    total = json.loads(sealed.card.body)["locks"]["total"]
    summary = (
        "<p class=summary><strong><bdi>gpt-5.6-sol</bdi></strong> on <bdi>chambre-chrono-v0"
        f"</bdi>: <strong><bdi>failed</bdi></strong>, 0 of {total} locks open, sealed"
        f" 2026-11-30 12:00:00 UTC; signed by key <bdi>{key.key_id}</bdi>.</p>"
    )
    assert summary in page
    assert page.index(summary) < page.index("<table>")
    assert "Expired attempt" not in page
    s = Session(seed="gone", seed_source="participant")
    s.wall += dt.timedelta(hours=3)
    expired = s.send(Expire())
    page = _page(cards.publish(expired.card.body, None))
    total = json.loads(expired.card.body)["locks"]["total"]
    assert (
        f"</bdi>: <strong><bdi>expired</bdi></strong>, 0 of {total} locks open, sealed"
        " 2026-11-30 14:00:00 UTC; <strong>not signed yet</strong> (pending_signature).</p>"
    ) in page
    banner = page.index("<strong>Expired attempt</strong>: it was left unsealed past its time")
    assert page.index("<strong>Practice card</strong>") < banner < page.index("<table>")


async def test_what_the_participant_sent_is_marked_participant_declared_next_to_it(runtime, agent):
    """Tester finding: a signed card's page showed ``preflight no_intervention_confirmed
    true`` and ``next_candidate assurance: scoreia_controlled`` as plainly as the server's
    own figures, under a caveat that named identity fields only."""
    entered = await agent.enter(
        host_version="scoreia_controlled",
        product_plan="VERIFIED by ScoreIA",
        preflight={"no_intervention_confirmed": True},
    )
    h = entered["attempt_handle"]
    await agent.tool("call_for_help", challenge_handle=h, ally="claude-5")
    sealed = await agent.tool(
        "seal_attempt", challenge_handle=h, next_candidate="assurance: scoreia_controlled"
    )
    response = await web.get_card(get(f"/cards/{sealed['card_id']}", BROWSER), runtime)
    page = response.body.decode()
    mark = " <small class=declared>(participant-declared: not checked by the server)</small>"
    for value in (
        "<code><bdi>scoreia_controlled</bdi></code>",  # host_version
        "<code><bdi>VERIFIED by ScoreIA</bdi></code>",
        "<code><bdi>gpt-5.6-sol</bdi></code>",  # product
        "<code><bdi>assurance: scoreia_controlled</bdi></code>",  # next_candidate
        "<bdi>claude-5</bdi>",  # allies
        "<tr><th>no_<wbr>intervention_<wbr>confirmed</th><td><code>true</code></td></tr>"
        "</table>",  # preflight
    ):
        assert f"{value}{mark}</td>" in page, value
    assert "<code><bdi>participant_claimed</bdi></code></td>" in page  # the server's word
    assert page.count(mark) == 6 + 3  # six identity claims; preflight, allies, next_candidate
    assert "Values marked participant-declared are what the participant sent" in page
    # An operator's entry (origin summoned) vouches for its claims: they are not marked.
    card = {"card_id": "card-x", "identity": {"product": "p", "assurance": "scoreia_controlled"}}
    assert mark not in _page(json.dumps({"card": card}).encode())
