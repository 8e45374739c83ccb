"""The start page (``GET /``): what a person finds at the server's address, and where the
refusal pages' "Start page" link leads. Before it, ``/`` was a 404 and the 404 and 500 pages
linked nowhere."""

from __future__ import annotations

import html
import re

import pytest
import trio
from e2e_http import http

from agora.config import KNOWN_TOOLSETS

TIMEOUT = 30

#: What a browser sends when it navigates to a page.
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


async def test_the_start_page_lists_the_toolset_served_and_its_pages(agora):
    with trio.fail_after(TIMEOUT):
        page = await http(agora.port, "GET", "/", headers=BROWSER)
        data = await http(agora.port, "GET", "/")
        head = await http(agora.port, "HEAD", "/", headers=BROWSER)
        posted = await http(agora.port, "POST", "/", {}, headers=BROWSER)
    assert page.status == 200, page
    assert page.headers["content-type"].startswith("text/html"), page
    assert "default-src 'none'" in page.headers["content-security-policy"]
    text = page.body.decode()
    assert "<h2>chess</h2>" in text, text
    assert html.escape("/mcp/chess/<table>") in text, text
    assert '<a href="/play">' in text, text
    assert "/board" not in text, text  # chess only here
    assert '<a href="/healthz">' in text, text
    assert data.status == 200, data
    assert data.headers["content-type"] == "application/json", data
    doc = data.json()
    assert [t["name"] for t in doc["toolsets"]] == ["chess"], doc
    assert doc["toolsets"][0]["mcp"] == "/mcp/chess/<table>", doc
    assert doc["mcp"]["path"] == "/mcp", doc
    assert head.status == 200, head
    assert head.body == b"", head
    assert posted.status == 405, posted
    assert "MCP clients connect to /mcp" in posted.body.decode(), posted


async def test_every_page_the_start_page_lists_answers_a_browser(start_agora):
    agora = start_agora()  # every toolset of the tree
    with trio.fail_after(TIMEOUT):
        doc = (await http(agora.port, "GET", "/?format=json")).json()
        listed = [(t["name"], p["path"]) for t in doc["toolsets"] for p in t["pages"]]
        probes = [p["path"] for p in doc["probes"]]
        answers = {}
        for _name, path in listed:
            answers[path] = await http(agora.port, "GET", path, headers=BROWSER)
        for path in probes:
            answers[path] = await http(agora.port, "GET", path)
    assert sorted(t["name"] for t in doc["toolsets"]) == sorted(KNOWN_TOOLSETS)
    assert {path for _, path in listed} >= {"/board", "/cards", "/chamber/keys", "/play"}, listed
    for path, reply in answers.items():
        assert reply.status == 200, (path, reply)


@pytest.mark.parametrize("path", ["/nope", "/cards/no-such-card", "/play/no-such-table"])
async def test_a_refusal_page_links_to_the_start_page(start_agora, path):
    agora = start_agora()
    with trio.fail_after(TIMEOUT):
        refused = await http(agora.port, "GET", path, headers=BROWSER)
        links = re.findall(r'href="?([^" >]+)', refused.body.decode())
        assert refused.status == 404, refused
        assert "/" in links, (path, links)
        start = await http(agora.port, "GET", "/", headers=BROWSER)
    assert start.status == 200, start
    assert "<h1>agora</h1>" in start.body.decode(), start
