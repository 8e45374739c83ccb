"""A ``public_url`` with a path prefix: requests with or without it, links under it.

An operator's finding: behind a proxy publishing agora at ``/base``, every page linked to
root paths the proxy does not forward, and a request forwarded with its prefix got 404.
"""

from __future__ import annotations

from http_support import RawHttp, serve

from agora.web.prefix import base_path, prefixed_html, unprefixed

PAGE = b'<!doctype html><meta charset="utf-8"><a href="/play">p</a><a href=/board>b</a>'


def test_links_lead_under_the_prefix_once_and_scripts_are_told_it():
    page = PAGE + b'<a href="/base/cards/x">c</a><a href="//cdn.example/x">o</a>'
    assert prefixed_html(page, "/base") == (
        b'<!doctype html><meta charset="utf-8"><meta name="agora-base" content="/base">'
        b'<a href="/base/play">p</a><a href=/base/board>b</a>'
        b'<a href="/base/cards/x">c</a><a href="//cdn.example/x">o</a>'
    )
    assert prefixed_html(PAGE, "") == PAGE
    assert prefixed_html(b'<a href="/basement">x</a>', "/base") == b'<a href="/base/basement">x</a>'


def test_only_the_tags_links_move_never_the_texts_words():
    """A tester's finding: a card page showed a participant's ``model x href=/evil`` as
    ``model x href=/base/evil``, text that was not what the card signed."""
    page = b'<p>model x href=/evil src=&quot;/z&quot; action=/n</p><a href="/cards/c">c</a>'
    assert prefixed_html(page, "/base") == (
        b'<p>model x href=/evil src=&quot;/z&quot; action=/n</p><a href="/base/cards/c">c</a>'
    )


def test_a_path_is_taken_with_or_without_the_prefix():
    assert base_path("https://example.com/base/") == "/base"
    assert base_path("https://example.com") == base_path(None) == ""
    assert unprefixed("/base/play/t", "/base") == "/play/t"
    assert unprefixed("/base", "/base") == "/"
    assert unprefixed("/play/t", "/base") == "/play/t"
    assert unprefixed("/basement", "/base") == "/basement"
    assert unprefixed("/base/x", "") == "/base/x"


async def test_the_chamber_pages_and_the_start_page_link_under_the_prefix():
    public = "http://127.0.0.1/base"
    html = {"accept": "text/html"}
    async with (
        serve(toolsets=["chamber"], public_url=public) as server,
        RawHttp.open(server.port) as client,
    ):
        cards = await client.request("GET", "/base/cards", headers=html)
        stripped = await client.request("GET", "/cards", headers=html)  # (a stripping proxy)
        start = await client.request("GET", "/base/", headers=html)
        data = (await client.request("GET", "/")).json()
    assert cards.status == stripped.status == start.status == 200, cards
    assert cards.body == stripped.body
    assert b"href=/base/board>" in cards.body, cards.body
    for path in (b"/board", b"/cards", b"/chamber/keys", b"/healthz"):
        assert b'href="/base' + path + b'"' in start.body, (path, start.body)
    assert data["mcp"]["path"] == "/base/mcp"
    assert b"<code>/base/mcp</code>" in start.body  # the intro names the prefixed path
    assert data["toolsets"][0]["mcp"] == "/base/mcp/chamber"
