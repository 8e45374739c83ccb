"""Headless Debian Chromium for the chess page's end-to-end tests (Playwright's sync API).

`chromium` opens the browser, `new_page` a page that records the page's errors (and accepts
every confirm), `live_page` one that waits for its live connection. Playwright's sync API has
its own event loop: call these in a worker thread. This module must not play or check.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
PAGE_TIMEOUT_MS = 15_000

#: Skips a module's tests without the browser (Playwright missing skips the importing module).
NEEDS_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (apt-get)"
)
sync_api = pytest.importorskip("playwright.sync_api")


def _browser(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS
    )


#: A desktop's viewport, `new_page`'s.
DESKTOP = {"width": 1280, "height": 900}


def new_page(browser: Any, errors: list[str]) -> Any:
    """A page of its own context whose script errors land in ``errors``; confirms accepted."""
    context = browser.new_context(
        viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda dialog: dialog.accept())
    return page


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Debian Chromium under Playwright's sync API, closed at the end."""
    sync_api.expect.set_options(timeout=PAGE_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        browser = _browser(playwright)
        try:
            yield browser
        finally:
            browser.close()


def live_page(browser: Any, url: str, errors: list[str]) -> Any:
    """A fresh page on ``url``, once it shows its live connection."""
    page = new_page(browser, errors)
    page.goto(url)
    sync_api.expect(page.locator("#live")).to_have_text("live")
    return page


def seated_white(browser: Any, url: str, errors: list[str]) -> Any:
    """A `live_page` on the human's ``url`` seated as White, its first move awaited."""
    page = live_page(browser, url, errors)
    page.click("#human-white")
    sync_api.expect(page.locator("#status")).to_have_text("Your move.")
    return page


def seated_black(browser: Any, url: str, errors: list[str]) -> Any:
    """A `live_page` on the human's ``url`` that gave the agent White (the human plays Black)."""
    page = live_page(browser, url, errors)
    page.click("#agent-white")
    sync_api.expect(page.locator("#role")).to_have_text("you play black")
    return page


#: A phone's viewport (an iPhone 12-15's CSS pixels).
PHONE = {"width": 390, "height": 844}
#: Browser context options per screen: a phone's (touch) and a desktop's.
SCREENS: dict[str, dict[str, Any]] = {
    "phone": {"viewport": PHONE, "is_mobile": True, "has_touch": True},
    "desktop": {"viewport": DESKTOP},
}
#: Widths between and below those, where the squares still shrink with the screen: the
#: narrowest phones in use, and a window too narrow for 64 px squares.
NARROWER: dict[str, dict[str, Any]] = {
    "narrow phone": {"viewport": {"width": 320, "height": 640}, "is_mobile": True,
                     "has_touch": True},
    "small window": {"viewport": {"width": 480, "height": 800}},
}  # fmt: skip


def at_both_orientations(
    white_url: str, black_url: str, look: Callable[[Any], Any], shots: str, screen: str
) -> dict[str, Any]:
    """Each of two human pages, on the `SCREENS` (or `NARROWER`) entry ``screen``, once the
    human took White
    (``white_url``) and Black (``black_url``): ``look(page)`` of each by side, then its
    screenshot as ``<shots>-<side>.png`` in `ARTIFACTS`; ``"errors"``: the pages' script
    errors."""
    expect = sync_api.expect
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        for side, url, button in (("white", white_url, "#human-white"),
                                  ("black", black_url, "#agent-white")):  # fmt: skip
            context = browser.new_context(**(SCREENS | NARROWER)[screen])
            page = context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            expect(page.locator("#live")).to_have_text("live")
            page.click(button)
            expect(page.locator("#role")).to_have_text(f"you play {side}")
            seen[side] = look(page)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{shots}-{side}.png"), full_page=True)
            context.close()
    seen["errors"] = errors
    return seen


def on_a_phone_at_both_orientations(
    white_url: str, black_url: str, look: Callable[[Any], Any], shots: str
) -> dict[str, Any]:
    """`at_both_orientations` on a phone."""
    return at_both_orientations(white_url, black_url, look, shots, "phone")
