"""Public card pages: ``GET /cards/{card_id}``, ``GET /cards?date=``, ``GET /chamber/keys``.

A card is served as its stored document bytes (JSON), or as an HTML view when the client's
Accept header prefers text/html (``?format=json`` or ``?format=html`` override); the view
links to the board, the card's day, its JSON form and ``/chamber/keys``. Every value
shown in HTML is escaped; pages carry a CSP that allows no scripts. Listings read committed
rows with ``runtime.read``; nothing here writes or messages actors.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agora.toolsets.chamber import store
from agora.web import http
from agora.web.http import Request, Response, Route, wants_html

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

_CARD_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HEADERS = [
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "public, max-age=60"),
]
#: Values may break anywhere: a card's nested tables of long names and digests must fit a
#: phone's screen (375 px) rather than widen the page past it. A field name stays whole; on
#: a phone it may break after an underscore (`_name`), never mid-word (``card_sha2 / 56``).
_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}"
    "table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #ddd;"
    "text-align:left;vertical-align:top;overflow-wrap:anywhere}"
    "th{overflow-wrap:normal}th wbr{display:none}code,pre{font-size:13px;word-break:break-all}"
    "@media (max-width:40rem){th wbr{display:inline}}"
)


_PRACTICE = " <strong>practice</strong>"


def page(title: str, inner: str, status: int = 200) -> Response:
    text = (
        f"<!doctype html><html lang=en><meta charset=utf-8>{http.VIEWPORT}"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style><body>{inner}</body></html>"
    )
    response = Response.html(text, status)
    response.headers.extend(HEADERS)
    return response


def error_response(request: Request, status: int, message: str) -> Response:
    """``{"error": message}`` for API clients; a small HTML page for a browser (same status),
    in the chamber's style with a link to the board (`agora.web.http.error_response`)."""
    return http.error_response(request, status, message, _error_page)


def _error_page(status: int, message: str) -> Response:
    title = http.error_title(status)
    inner = f"<h1>{title}</h1><p>{html.escape(message)}.</p><p><a href=/board>Board</a></p>"
    return page(title, inner, status)


def _name(key: object) -> str:
    """A field name that may break after its underscores only (``<wbr>``), never mid-word."""
    return html.escape(str(key)).replace("_", "_<wbr>")


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        rows = "".join(f"<tr><th>{_name(k)}</th><td>{_cell(v)}</td></tr>"
                       for k, v in value.items())  # fmt: skip
        return f"<table>{rows}</table>"
    # <bdi> isolates each value: a right-to-left override in a claim cannot reverse the
    # text around it.
    if isinstance(value, list):
        return ", ".join(f"<bdi>{html.escape(str(v))}</bdi>" for v in value) or "&mdash;"
    if value is None:
        return "&mdash;"
    if not isinstance(value, str):
        # true/false and numbers as the JSON document has them (no text to isolate)
        return f"<code>{html.escape(json.dumps(value))}</code>"
    return f"<code><bdi>{html.escape(value)}</bdi></code>"


def _practice_note(card: dict[str, Any]) -> str:
    source = card.get("seed_source")
    if source is None or source == "server":
        return ""
    why = (
        "the participant chose this room's seed, so the room may have been played before"
        if source == "participant"
        else "this attempt began before the server recorded who drew its seed"
    )
    room = card.get("room_id")
    link = f" Every run of this room carries room id {_cell(room)}." if room else ""
    return (
        '<p class=practice style="border:2px solid #b60;padding:.4rem .8rem">'
        f"<strong>Practice card</strong>: {why}; it is not evidence of a fresh room.{link}</p>"
    )


def _card_links(card: dict[str, Any]) -> str:
    """Where a card page leads: the board, its day's listing, its JSON document, the keys."""
    card_id = urllib.parse.quote(str(card.get("card_id", "")), safe="")
    date = card.get("date")
    links = ["<a href=/board>Board</a>"]
    if isinstance(date, str) and _DATE.match(date):
        links.append(f'<a href="/cards?date={date}">Cards of {date}</a>')
    links.append(f'<a href="/cards/{html.escape(card_id)}?format=json">This card as JSON</a>')
    links.append(f"<a href={KEYS_PATH}>Signing keys</a>")
    return f"<nav><p>{' · '.join(links)}</p></nav>"


#: Under a card's integrity section: how a reader checks it.
_VERIFY_HINT = (
    "<p>Check it yourself: <code>agora cards verify URL --keys-url SERVER/chamber/keys</code>,"
    " where URL is this page's address (or its JSON document saved as a file) and SERVER"
    " the server you trust.</p>"
)


def card_html(document: bytes) -> Response:
    """The HTML view of a card document (every value escaped)."""
    try:
        doc = json.loads(document)
    except ValueError:
        doc = None
    card = doc.get("card") if isinstance(doc, dict) else None
    if not isinstance(card, dict):
        pretty = html.escape(document.decode("utf-8", "replace"))
        return page("ScoreIA Chamber card", f"<h1>ScoreIA Chamber card</h1><pre>{pretty}</pre>")
    title = f"ScoreIA Chamber card {card.get('card_id', '')}"
    status = doc.get("evidence_status") if isinstance(doc, dict) else None
    inner = (
        f"<h1>{html.escape(title)}</h1>{_card_links(card)}{_practice_note(card)}"
        f"<p>Evidence status: {_cell(status)}. Identity fields are participant claims unless "
        "their assurance says otherwise.</p>"
        f"{_cell(card)}<h2>Integrity</h2>"
        f"{_cell({'card_sha256': doc.get('card_sha256'), 'signature': doc.get('signature')})}"
        f"{_VERIFY_HINT}"
    )
    return page(title, inner)


async def get_card(request: Request, runtime: Runtime) -> Response:
    """``GET /cards/{card_id}``: the card document, or its HTML view."""
    card_id = request.params.get("card_id", "")
    if not _CARD_ID.match(card_id):
        return error_response(request, 404, "no such card")
    document = await runtime.read(lambda conn: store.card_document(conn, card_id))
    if document is None:
        return error_response(request, 404, "no such card")
    if wants_html(request):
        return card_html(document)
    response = Response(200, document, "application/json")
    response.headers.extend(HEADERS)
    return response


async def list_cards(request: Request, runtime: Runtime) -> Response:
    """``GET /cards?date=YYYY-MM-DD[&after=ID][&limit=N]``: cards sealed that UTC day."""
    date = request.query.get("date") or f"{runtime.clock.wall().astimezone(dt.UTC):%Y-%m-%d}"
    try:
        if not _DATE.match(date):
            raise ValueError(date)
        dt.date.fromisoformat(date)
        limit = int(request.query.get("limit", "200"))
    except ValueError:
        return error_response(request, 400, "date must be YYYY-MM-DD and limit a number")
    limit = max(1, min(limit, 1000))
    after = request.query.get("after", "")
    rows = await runtime.read(lambda conn: store.list_cards(conn, date, after, limit))
    body: dict[str, Any] = {"date": date, "cards": rows}
    if len(rows) == limit:
        body["next_after"] = rows[-1]["card_id"]
    if not wants_html(request):
        response = Response.json(body)
        response.headers.extend(HEADERS)
        return response
    items = "".join(
        f'<li><a href="/cards/{html.escape(r["card_id"], quote=True)}">'
        f"{html.escape(r['card_id'])}</a> {html.escape(str(r.get('outcome', '')))} "
        f"{html.escape(r['evidence_status'])}{_PRACTICE * bool(r.get('practice'))}</li>"
        for r in rows
    )
    return page(
        f"Chamber cards of {date}",
        f"<h1>Chamber cards of {html.escape(date)}</h1><ul>{items or '<li>none</li>'}</ul>",
    )


KeysFn = Callable[["Runtime"], Awaitable[dict[str, Any]]]


def keys_route(keys: KeysFn) -> Route:
    """``GET /chamber/keys``: the operator's public keys as JSON (``keys()`` lists them)."""

    async def get_keys(request: Request, runtime: Runtime) -> Response:
        response = Response.json(await keys(runtime))
        response.headers.extend(HEADERS)
        return response

    return Route("GET", KEYS_PATH, get_keys)


def pool_route(status: Callable[[], dict[str, Any]]) -> Route:
    """``GET /chamber/pool``: ready rooms per suite (for operators and load tests)."""

    async def get_pool(request: Request, runtime: Runtime) -> Response:
        response = Response.json({"suites": status()})
        response.headers.append(("Cache-Control", "no-store"))
        return response

    return Route("GET", "/chamber/pool", get_pool)


#: Where a server publishes the keys its cards are signed with.
KEYS_PATH = "/chamber/keys"

ROUTES = (
    Route("GET", "/cards", list_cards),
    Route("GET", "/cards/{card_id}", get_card),
)
