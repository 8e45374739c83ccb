"""A page's HTML laid out in Debian's Chromium on a desktop and on a phone, for layout tests.

`laid_out` loads the HTML into a fresh tab per screen (`SCREENS`) and returns what a script
evaluated there measured. Test modules that use it set ``pytestmark = BROWSER`` (skipped
where Chromium or playwright is missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]
SCREENS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1200, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


def laid_out(html: str, script: str) -> dict[str, Any]:
    """Per screen name, what ``script`` (a JavaScript function) returns on ``html``."""
    sync_api = pytest.importorskip("playwright.sync_api")
    seen: dict[str, Any] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            for name, options in SCREENS.items():
                tab = browser.new_context(**options).new_page()
                tab.set_content(html)
                seen[name] = tab.evaluate(script)
        finally:
            browser.close()
    return seen


def width(name: str) -> int:
    """The screen ``name``'s width in CSS pixels."""
    return int(SCREENS[name]["viewport"]["width"])
