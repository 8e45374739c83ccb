"""End to end in a real browser: the marks and limits a tester found wanting on the page.

``agora serve`` runs in a subprocess; the positions are reached over the page's HTTP API (the
human) and the official ``mcp`` SDK (the agent), then headless Chromium (a worker thread;
`chess_browser`) only looks and types:

- the ring on a square where a capture is legal must stand out from the square it marks, on
  light and dark squares, with White's and with Black's side at the bottom: measured on
  screenshots (3:1 at least, WCAG's contrast for a graphical mark);
- the note box takes 160 characters counted as the server counts them (code points), so 160
  emoji, not the 80 that an input's maxlength (UTF-16 units) let through.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
import trio
from chess_browser import ARTIFACTS, NEEDS_CHROMIUM, chromium, live_page, sync_api
from chess_page_http import http_json, new_table
from chess_players import table_after
from chess_server import agora_serve

pytestmark = [
    pytest.mark.browser,
    NEEDS_CHROMIUM,
    pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning"),
]
mcp = pytest.importorskip("mcp")

#: Per side the human plays: the agent's colour, the moves to the position (the human's
#: over HTTP, the agent's through move_piece, White first), and the captures to look at
#: as (the capturing piece's square, the captured one's square, that square's colour).
SIDES: dict[str, dict[str, Any]] = {
    "white": {
        "agent": "black",
        "moves": ["e2e4", "d7d5", "d2d4", "c7c5"],
        "captures": [("e4", "d5", "light"), ("d4", "c5", "dark")],
    },
    "black": {
        "agent": "white",
        "moves": ["e2e4", "d7d5", "d2d4", "c7c5", "g1f3"],
        "captures": [("d5", "e4", "light"), ("c5", "d4", "dark")],
    },
}
EMOJI = "\U0001f600"


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced PNG (Chromium's screenshots)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, header = 8, b"", b""
    while pos < len(png):
        (size,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + size]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            data += body
        pos += size + 12
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0)
    step = {2: 3, 6: 4}[color]
    raw, rows, prior = zlib.decompress(data), [], bytearray(width * step)
    stride = width * step
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = prior[i], prior[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                near = min((abs(guess - left), 0), (abs(guess - up), 1), (abs(guess - corner), 2))
                line[i] = (line[i] + (left, up, corner)[near[1]]) & 255
        prior = line
        rows.append(bytes(b for x in range(width) for b in line[x * step : x * step + 3]))
    return width, height, rows


def _luminance(rgb: tuple[int, ...]) -> float:
    """WCAG's relative luminance of an sRGB colour."""
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _edge(png: bytes) -> tuple[int, ...]:
    """The colour 2 px inside a square's left edge, halfway down (the ring's band)."""
    _, height, rows = _pixels(png)
    row = rows[height // 2]
    return tuple(row[2 * 3 : 2 * 3 + 3])


def _shot(square: Any) -> bytes:
    """A screenshot of one square. The page redraws the board on each live update (a
    presence change, the stream's first state), which can replace the square's element
    while Chromium waits for it to be stable: the same square is then taken again."""
    for _ in range(4):
        try:
            return bytes(square.screenshot())
        except sync_api.Error as exc:
            if "not attached to the DOM" not in str(exc):
                raise
    return bytes(square.screenshot())


def rings_as_seen(urls: dict[str, str]) -> dict[str, Any]:
    """For each side's page: each capture's ring against its square with no ring."""
    errors: list[str] = []
    seen: dict[str, Any] = {}
    with chromium() as browser:
        for side, url in urls.items():
            page = live_page(browser, url, errors)
            sync_api.expect(page.locator("#role")).to_have_text(f"you play {side}")
            for source, target, colour in SIDES[side]["captures"]:
                square = page.locator(f'[data-square="{target}"]')
                plain = _shot(square)
                page.click(f'[data-square="{source}"]')
                marked = page.locator(f'[data-square="{target}"].{colour}.target.occupied')
                sync_api.expect(marked).to_be_visible()
                ringed = _shot(square)
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"capture-ring-{side}-{target}.png"))
                seen[f"{side} {target} ({colour})"] = _contrast(_edge(plain), _edge(ringed))
                page.click(f'[data-square="{source}"]')  # drops the selection
    seen["errors"] = errors
    return seen


async def test_the_capture_ring_stands_out_on_both_square_colours_and_sides(tmp_path):
    """A tester's finding: the ring on a square where a capture is legal was too faint to
    see (about 2:1 against either square's colour)."""
    with trio.fail_after(120):
        async with agora_serve(tmp_path / "agora.db") as server:
            urls = {
                side: await table_after(
                    server, f"ring-{side}", SIDES[side]["moves"], SIDES[side]["agent"]
                )
                for side in SIDES
            }
            seen = await trio.to_thread.run_sync(rings_as_seen, urls)
    assert seen.pop("errors") == []
    assert len(seen) == 4
    faint = {where: round(ratio, 2) for where, ratio in seen.items() if ratio < 3}
    assert faint == {}, seen


def note_as_typed(url: str, server_state: Any) -> dict[str, Any]:
    """Type 170 emoji into the note box, play e2-e4, and read what the box held."""
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)
        page.click("#human-white")
        sync_api.expect(page.locator("#status")).to_have_text("Your move.")
        page.locator("#note").fill(EMOJI * 170)
        held = page.evaluate("() => Array.from(document.getElementById('note').value).length")
        page.click('[data-square="e2"]')
        page.click('[data-square="e4"]')
        sync_api.expect(page.locator("#moves li")).to_have_count(1)
        return {"held": held, "errors": errors}


async def test_the_note_box_takes_160_characters_as_the_server_counts_them(tmp_path):
    """A tester's finding: the box's maxlength counted UTF-16 units, so 80 emoji at most."""
    with trio.fail_after(90):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "notes")
            seen = await trio.to_thread.run_sync(note_as_typed, table["humanUrl"], None)
            state_url = server.play_url("notes", f"state?token={table['token']}")
            status, state = await http_json("GET", state_url)
    assert seen["errors"] == []
    assert seen["held"] == 160
    assert status == 200
    assert state["history"][0]["note"] == EMOJI * 160
