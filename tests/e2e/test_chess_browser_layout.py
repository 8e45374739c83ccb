"""End to end in a real browser: the chess page's move list fits the longest moves.

``agora serve`` runs in a subprocess and its default table's page in headless Chromium (a
worker thread; `chess_browser`). The page draws a history made of the longest SAN moves
(seven characters: a capture that promotes with check, a queen named by its square) through
its own `chessView.render`; no move may overflow its column or run into the next one.

The board, on a desktop and on a 390x844 phone, with the human as White and as Black (the board
flips): every piece picture is drawn the same size and fills most of its square, whichever
square it stands on; no coordinate label covers a piece; the labels are at least 12 px, inside
the viewport, hidden from screen readers and beside their own rank or file; the page does not
scroll sideways. Screenshots: ``test-artifacts/chess-board-<screen>-<side>.png``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio
from chess_browser import (
    NARROWER,
    NEEDS_CHROMIUM,
    SCREENS,
    at_both_orientations,
    chromium,
    live_page,
)
from chess_page_http import new_table
from chess_server import agora_serve

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

LONGEST = ["exd8=Q+", "Qa1xb2+", "R1xd8#", "cxd8=Q+", "Nbxd7#", "gxh1=N#"]

DRAW_HISTORY = """(sans) => {
  const state = JSON.parse(JSON.stringify(window.__state));
  state.history = sans.map((san, i) => ({
    ply: i + 1, moveNumber: Math.floor(i / 2) + 1, color: i % 2 ? "black" : "white",
    san, uci: "e2e4", from: "e2", to: "e4", by: i % 2 ? "agent" : "human", note: null,
  }));
  state.lastMove = state.history[state.history.length - 1];
  chessView.render(state, { selected: null, focus: null, dragging: null }, "#");
  const out = [];
  for (const row of document.querySelectorAll("#moves li")) {
    const cells = [...row.children].map((c) => c.getBoundingClientRect());
    const spans = [...row.querySelectorAll(".san")];
    out.push({
      text: spans.map((s) => s.textContent),
      overflow: spans.some((s) => s.scrollWidth > s.clientWidth),
      overlap: cells.some((c, i) => i > 0 && c.left < cells[i - 1].right),
    });
  }
  return out;
}"""


def draw_longest_moves(url: str) -> tuple[list[dict[str, Any]], list[str]]:
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)
        page.evaluate(
            "() => fetch(location.pathname + '/state').then(r => r.json())"
            ".then(s => { window.__state = s; })"
        )
        rows: list[dict[str, Any]] = page.evaluate(DRAW_HISTORY, LONGEST)
    return rows, errors


async def test_the_longest_moves_fit_their_columns(tmp_path):
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            url = f"{server.url}/play/default"
            rows, errors = await trio.to_thread.run_sync(draw_longest_moves, url)
    assert [san for row in rows for san in row["text"]] == LONGEST
    assert [row for row in rows if row["overflow"] or row["overlap"]] == []
    assert errors == []


#: The least share of its square a piece picture fills, across and down.
MIN_PIECE_SHARE = 0.85
#: How much, in CSS pixels, the piece pictures' widths may differ.
PIECE_SLACK_PX = 1.0
MIN_LABEL_PX = 12.0

#: The squares' boxes and their pictures', the coordinate labels' text boxes, and the page's
#: widths; in the viewport's coordinates, the page scrolled to its top.
_BOARD = """() => {
  window.scrollTo(0, 0);
  const box = (r) => ({ left: r.left, top: r.top, right: r.right, bottom: r.bottom,
                        width: r.width, height: r.height });
  const text = (el) => { const range = document.createRange(); range.selectNodeContents(el);
                         return box(range.getBoundingClientRect()); };
  return {
    squares: [...document.querySelectorAll("#board .square")].map((square) => {
      const piece = square.querySelector("img");
      return { square: square.dataset.square, box: box(square.getBoundingClientRect()),
               piece: piece && box(piece.getBoundingClientRect()) };
    }),
    labels: [...document.querySelectorAll(".coord")].map((label) => ({
      text: label.textContent,
      box: text(label),
      px: parseFloat(getComputedStyle(label).fontSize),
      hidden: label.closest('[aria-hidden="true"]') !== null,
    })),
    viewport: { width: window.innerWidth, height: window.innerHeight },
    clientWidth: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
  };
}"""


def _board(page: Any) -> dict[str, Any]:
    page.evaluate("() => document.fonts.ready")
    page.wait_for_function("() => [...document.images].every((image) => image.complete)")
    board: dict[str, Any] = page.evaluate(_BOARD)
    return board


def _overlap(one: dict[str, float], two: dict[str, float]) -> bool:
    return (
        one["left"] < two["right"]
        and two["left"] < one["right"]
        and one["top"] < two["bottom"]
        and two["top"] < one["bottom"]
    )


def _inside(inner: dict[str, float], outer: dict[str, float], slack: float = 0.5) -> bool:
    return (
        inner["left"] >= outer["left"] - slack
        and inner["top"] >= outer["top"] - slack
        and inner["right"] <= outer["right"] + slack
        and inner["bottom"] <= outer["bottom"] + slack
    )


def _beside_its_squares(label: dict[str, Any], squares: list[dict[str, Any]]) -> bool:
    """A rank's digit level with its rank's squares, a file's letter in line with its file's."""
    digit = label["text"].isdigit()
    own = [s["box"] for s in squares if s["square"][1 if digit else 0] == label["text"]]
    middle = (
        (label["box"]["top"] + label["box"]["bottom"]) / 2
        if digit
        else (label["box"]["left"] + label["box"]["right"]) / 2
    )
    low, high = ("top", "bottom") if digit else ("left", "right")
    return len(own) == 8 and all(box[low] <= middle <= box[high] for box in own)


def board_problems(board: dict[str, Any]) -> dict[str, Any]:
    """What is wrong with one laid-out board (empty lists and True when nothing is)."""
    squares = board["squares"]
    pieces = [s for s in squares if s["piece"]]
    widths = [s["piece"]["width"] for s in pieces]
    labels = board["labels"]
    view = board["viewport"]
    return {
        "squares": len(squares),
        "pieces": len(pieces),
        "uneven": round(max(widths) - min(widths), 2) > PIECE_SLACK_PX,
        "small": [
            (s["square"], round(s["piece"]["width"] / s["box"]["width"], 2))
            for s in pieces
            if s["piece"]["width"] < MIN_PIECE_SHARE * s["box"]["width"]
            or s["piece"]["height"] < MIN_PIECE_SHARE * s["box"]["height"]
        ],
        "off_square": [s["square"] for s in pieces if not _inside(s["piece"], s["box"])],
        "texts": "".join(sorted(label["text"] for label in labels)),
        "covering": [
            (label["text"], s["square"])
            for label in labels
            for s in pieces
            if _overlap(label["box"], s["piece"])
        ],
        "tiny": [label["text"] for label in labels if label["px"] < MIN_LABEL_PX],
        "spoken": [label["text"] for label in labels if not label["hidden"]],
        "off_screen": [
            label["text"]
            for label in labels
            if not _inside(
                label["box"],
                {"left": 0, "top": 0, "right": view["width"], "bottom": view["height"]},
                slack=0,
            )
        ],
        "astray": [label["text"] for label in labels if not _beside_its_squares(label, squares)],
        "sideways_scroll": board["scrollWidth"] > board["clientWidth"],
    }


FINE = {
    "squares": 64,
    "pieces": 32,
    "uneven": False,
    "small": [],
    "off_square": [],
    "texts": "12345678abcdefgh",
    "covering": [],
    "tiny": [],
    "spoken": [],
    "off_screen": [],
    "astray": [],
    "sideways_scroll": False,
}


async def test_every_piece_fills_its_square_alike_and_no_coordinate_covers_one(tmp_path):
    seen: dict[str, Any] = {}
    screens = [*SCREENS, *NARROWER]
    with trio.fail_after(150):
        async with agora_serve(tmp_path / "agora.db") as server:
            for screen in screens:
                name = screen.replace(" ", "-")
                white = await new_table(server.url, f"{name}-w")
                black = await new_table(server.url, f"{name}-b")
                look = partial(
                    at_both_orientations,
                    white["humanUrl"],
                    black["humanUrl"],
                    _board,
                    f"chess-board-{name}",
                    screen,
                )
                seen[screen] = await trio.to_thread.run_sync(look)
    assert {screen: seen[screen]["errors"] for screen in screens} == {s: [] for s in screens}
    wrong = {}
    for screen in screens:
        for side in ("white", "black"):
            found = board_problems(seen[screen][side])
            differing = {key: value for key, value in found.items() if value != FINE[key]}
            if differing:
                wrong[f"{screen}, {side} at the bottom"] = differing
    assert wrong == {}
    assert seen["phone"]["white"]["viewport"]["width"] == 390


#: Renders a state with a status longer than any line beside the board, the agent's draw
#: offer pending, on the human's turn, then measures the two columns and the draw buttons.
_LONG_STATUS = """() => {
  const state = JSON.parse(JSON.stringify(window.__state));
  state.phase = "human_turn";
  state.status = "Your move. " + "The agent played a long and winding line of moves. ".repeat(3);
  state.drawOffer = "agent";
  chessView.render(state, { selected: null, focus: null, dragging: null }, "#");
  const box = (id) => document.getElementById(id).getBoundingClientRect();
  const shown = (id) => getComputedStyle(document.getElementById(id)).display !== "none";
  const play = box("play"), frame = box("board-frame");
  const aside = document.querySelector("aside").getBoundingClientRect();
  return {
    beside: aside.left >= play.right && aside.top < play.bottom,
    playWidth: play.width, frameWidth: frame.width,
    offer: shown("offer-draw"), accept: shown("accept-draw"),
  };
}"""


def long_status_on_a_desktop(url: str) -> tuple[dict[str, Any], list[str]]:
    errors: list[str] = []
    with chromium() as browser:
        page = live_page(browser, url, errors)  # a 1280x900 desktop
        page.evaluate(
            "() => fetch(location.pathname + '/state' + location.search).then(r => r.json())"
            ".then(s => { window.__state = s; })"
        )
        seen: dict[str, Any] = page.evaluate(_LONG_STATUS)
    return seen, errors


async def test_a_long_status_wraps_beside_the_moves_and_offering_is_accepting(tmp_path):
    """Newcomer findings: on a 1280 px desktop, a resignation's status widened the board's
    column until the moves and the agent's panel dropped below the board; and while the
    agent's offer stood, "Offer draw" was shown beside "Accept", and agreed the draw."""
    with trio.fail_after(60):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "long")
            seen, errors = await trio.to_thread.run_sync(
                long_status_on_a_desktop, table["humanUrl"]
            )
    assert errors == []
    assert seen["beside"], seen
    assert seen["playWidth"] <= seen["frameWidth"] + 1, seen
    assert (seen["offer"], seen["accept"]) == (False, True)
