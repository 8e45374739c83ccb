"""End to end in a real browser: the pages work under a ``public_url`` with a path prefix.

An operator's finding: with ``public_url = "http://host/base"`` behind a proxy that forwards
only ``/base/...``, the human's page loaded but its scripts, styles, piece images and API
calls used root paths (``/play/static/play.js``, ``/play/<table>/state``), which the proxy
does not forward: the page stayed on "Loading…". Now the server takes a path with the
prefix as one without it, and every page links under the prefix (its scripts read it from
the page). Here the browser reaches the server directly, prefix included, as through a
proxy that forwards the path as it is, and every request it makes must stay under the
prefix. Screenshot: ``test-artifacts/chess-prefix.png``.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
import trio
from chess_browser import ARTIFACTS, NEEDS_CHROMIUM, chromium, seated_black
from chess_page_http import http_json, new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]
sync_api = pytest.importorskip("playwright.sync_api")

PREFIX = "/games/agora"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def play_under_the_prefix(human_url: str) -> dict[str, Any]:
    """Seat the agent as White on the human's page; the URLs the page asked for."""
    errors: list[str] = []
    asked: list[str] = []
    with chromium() as browser:
        page = seated_black(_watching(browser, asked, errors), human_url, errors)
        sync_api.expect(page.locator("#board .square img").first).to_be_visible()
        images = page.eval_on_selector_all(
            "#board .square img", "els => els.map(e => e.naturalWidth > 0)"
        )
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "chess-prefix.png"), full_page=True)
    return {"errors": errors, "asked": asked, "images": images}


def _watching(browser: Any, asked: list[str], errors: list[str]) -> Any:
    """A browser whose pages record every URL they request (`seated_black` opens one)."""

    class Watched:
        def new_context(self, **options: Any) -> Any:
            context = browser.new_context(**options)
            context.on("request", lambda request: asked.append(request.url))
            return context

    return Watched()


async def test_the_human_page_works_under_a_public_url_path_prefix(tmp_path, monkeypatch):
    port = _free_port()
    public = f"http://127.0.0.1:{port}{PREFIX}"
    monkeypatch.setenv("AGORA_PUBLIC_URL", public)
    with trio.fail_after(90):
        async with agora_serve(tmp_path / "agora.db", "--port", str(port)) as server:
            table = await new_table(server.url, "prefixed")
            assert table["humanUrl"].startswith(f"{public}/play/prefixed?token="), table
            status, start = await http_json("GET", f"{public}/")  # the prefix, forwarded
            assert status == 200, start
            assert start["mcp"]["path"] == f"{PREFIX}/mcp"
            seen = await trio.to_thread.run_sync(play_under_the_prefix, table["humanUrl"])
    assert seen["errors"] == [], seen["errors"]
    outside = [url for url in seen["asked"] if not url.startswith(public + "/")]
    assert outside == [], outside
    assert any(url.endswith("/play/static/play.js") for url in seen["asked"]), seen["asked"]
    assert any("/play/prefixed/state" in url for url in seen["asked"]), seen["asked"]
    assert seen["images"], "no piece drawn"
    assert all(seen["images"]), seen["images"]
