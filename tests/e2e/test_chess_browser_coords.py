"""End to end in a real browser: the board's coordinate labels are legible on a phone.

``agora serve`` runs in a subprocess; two tables' human pages open in headless Chromium (a
worker thread; `chess_browser`) on a 390x844 phone screen, one seated as White and one as
Black (the board flips, and its coordinates with it). Every label's colour must reach WCAG's
4.5:1 contrast against what it is drawn on (the first background behind it: the page's, in
the frame outside the board), and its text must be at least 12 px.
Screenshots: ``test-artifacts/chess-coords-white.png`` and ``-black.png``.
"""

from __future__ import annotations

import re

import pytest
import trio
from chess_browser import NEEDS_CHROMIUM, on_a_phone_at_both_orientations
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

MIN_CONTRAST = 4.5
MIN_LABEL_PX = 12.0

#: Each coordinate label: its text, its colour, the background it is drawn on (its own or
#: its nearest ancestor's that is not transparent) and its font size.
_LABELS = """() => [...document.querySelectorAll(".coord")].map((label) => {
  let under = label;
  while (under.parentElement && getComputedStyle(under).backgroundColor === "rgba(0, 0, 0, 0)") {
    under = under.parentElement;
  }
  return {
    text: label.textContent,
    color: getComputedStyle(label).color,
    background: getComputedStyle(under).backgroundColor,
    px: parseFloat(getComputedStyle(label).fontSize),
  };
})"""


def _luminance(css: str) -> float:
    """WCAG 2's relative luminance of an opaque ``rgb(r, g, b)`` colour."""
    red, green, blue = (int(n) / 255 for n in re.findall(r"\d+", css)[:3])

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(one: str, two: str) -> float:
    """WCAG 2's contrast ratio of two opaque colours."""
    high, low = sorted((_luminance(one), _luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_the_coordinates_are_legible_at_both_orientations(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            white = await new_table(server.url, "cw")
            black = await new_table(server.url, "cb")
            seen = await trio.to_thread.run_sync(
                on_a_phone_at_both_orientations,
                white["humanUrl"],
                black["humanUrl"],
                lambda page: page.evaluate(_LABELS),
                "chess-coords",
            )
    assert seen["errors"] == []
    for side in ("white", "black"):
        labels = seen[side]
        assert sorted(label["text"] for label in labels) == sorted("12345678abcdefgh"), side
        assert all(label["background"].startswith("rgb(") for label in labels), side  # opaque
        faint = [
            (label["text"], round(contrast(label["color"], label["background"]), 2))
            for label in labels
            if contrast(label["color"], label["background"]) < MIN_CONTRAST
        ]
        assert faint == [], side
        assert min(label["px"] for label in labels) >= MIN_LABEL_PX, side
