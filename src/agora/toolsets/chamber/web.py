"""Public card pages: ``GET /cards/{card_id}``, ``GET /cards?date=``, ``GET /chamber/keys``.

A card is served as its stored document bytes (JSON), or as an HTML view when the client's
Accept header prefers text/html (``?format=json`` or ``?format=html`` override); the view
opens with a summary line and any contradictory, practice or expired banner, marks what the
participant sent as participant-declared (`card_page`), and links to the board, the card's
day, its JSON form and ``/chamber/keys``. Every value shown in HTML is
escaped; pages carry a CSP that allows no scripts. Listings read committed rows with
``runtime.read``; nothing here writes or messages actors.
"""

from __future__ import annotations

import datetime as dt
import html
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agora.toolsets.chamber import listings, store
from agora.toolsets.chamber.card_page import KEYS_PATH, card_view
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
    f"{http.PAGE_STYLE}h1,h2,li,.summary{{overflow-wrap:anywhere}}"
    "table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #ddd;"
    "text-align:left;vertical-align:top;overflow-wrap:anywhere}"
    "th{overflow-wrap:normal}th wbr{display:none}code,pre{font-size:13px;word-break:break-all}"
    "@media (max-width:40rem){th wbr{display:inline}}"
)


_PRACTICE = " <strong>practice</strong>"
#: How many cards a listing page holds unless ``limit`` says otherwise, and at most.
PAGE_CARDS = 200
MAX_PAGE_CARDS = 1000


class BadQuery(ValueError):
    """A page query that cannot be answered (the message says why, naming the parameter)."""


def parse_day(text: str, name: str) -> dt.date:
    """``text`` as a UTC day, written ``YYYY-MM-DD`` and nothing else (every page's rule).

    Raises:
        BadQuery: naming ``name``, the parameter it came from.
    """
    try:
        if _DATE.match(text):
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise BadQuery(f"{name} must be a date YYYY-MM-DD")


def parse_limit(request: Request) -> int:
    """The ``limit`` of a listing page: `PAGE_CARDS` unless given, 1 to `MAX_PAGE_CARDS`.

    Raises:
        BadQuery: a limit out of range or not a whole number.
    """
    text = request.query.get("limit", str(PAGE_CARDS))
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_PAGE_CARDS:
        raise BadQuery(f"limit must be a whole number from 1 to {MAX_PAGE_CARDS}")
    return int(text)


def check_format(request: Request) -> None:
    """Refuse a ``?format=`` other than the two every page speaks.

    Raises:
        BadQuery: naming the allowed formats.
    """
    if request.query.get("format", "json") not in ("json", "html"):
        raise BadQuery("format must be json or html (or left out: the Accept header decides)")


def next_page(path: str, request: Request, last: str) -> str:
    """The address of the page after the card ``last``: the same query, ``after=last``."""
    query = {k: v for k, v in request.query.items() if k not in ("after", "format")}
    return f"{path}?{urllib.parse.urlencode({**query, 'after': last})}"


def paged(rows: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """The first ``limit`` of ``rows`` (fetched as ``limit + 1``), and the id to continue
    after when there are more (None on the last page)."""
    shown = rows[:limit]
    return shown, shown[-1]["card_id"] if len(rows) > limit else None


def next_link(href: str | None) -> str:
    """The "Next page" link of a listing, or nothing on its last page."""
    if href is None:
        return ""
    return f'<p><a href="{html.escape(href, quote=True)}" rel=next>Next page</a></p>'


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
    inner = (
        f"<h1>{title}</h1><p>{html.escape(message)}.</p>"
        '<p><a href="/board">Board</a> · <a href="/">Start page</a></p>'
    )
    return page(title, inner, status)


def card_html(document: bytes) -> Response:
    """The HTML view of a card document (every value escaped: `card_page`)."""
    return page(*card_view(document))


async def get_card(request: Request, runtime: Runtime) -> Response:
    """``GET /cards/{card_id}``: the card document, or its HTML view."""
    card_id = request.params.get("card_id", "")
    try:
        check_format(request)
    except BadQuery as exc:
        return error_response(request, 400, str(exc))
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


#: The refusal of an ``after`` that names no card (`listings.UnknownCursor`).
UNKNOWN_AFTER = "after must be the id of a card listed here"


async def list_cards(request: Request, runtime: Runtime) -> Response:
    """``GET /cards?date=YYYY-MM-DD[&after=ID][&limit=N]``: cards sealed that UTC day, in
    the order sealed; ``next_after`` (and the page's "Next page" link) when more follow."""
    date = request.query.get("date") or f"{runtime.clock.wall().astimezone(dt.UTC):%Y-%m-%d}"
    after = request.query.get("after", "")
    try:
        check_format(request)
        parse_day(date, "date")
        limit = parse_limit(request)
        rows = await runtime.read(lambda c: listings.list_cards(c, date, after, limit + 1))
    except BadQuery as exc:
        return error_response(request, 400, str(exc))
    except listings.UnknownCursor:
        return error_response(request, 400, UNKNOWN_AFTER)
    shown, last = paged(rows, limit)
    body: dict[str, Any] = {"date": date, "cards": shown}
    if last is not None:
        body["next_after"] = last
    if not wants_html(request):
        response = Response.json(body)
        response.headers.extend(HEADERS)
        return response
    items = "".join(
        f'<li><a href="/cards/{html.escape(r["card_id"], quote=True)}">'
        f"{html.escape(r['card_id'])}</a> {html.escape(str(r.get('sealed_at', ''))[11:19])} "
        f"{html.escape(str(r.get('suite_id') or ''))} "
        f"<bdi>{html.escape(str(r.get('product') or ''))}</bdi> "
        f"{html.escape(str(r.get('outcome', '')))} "
        f"{html.escape(r['evidence_status'])}{_PRACTICE * bool(r.get('practice'))}</li>"
        for r in shown
    )
    listing = f"<ul>{items}</ul>" if items else f"<p>No cards were sealed on {date}.</p>"
    more = next_link(None if last is None else next_page("/cards", request, last))
    return page(
        f"Chamber cards of {date}",
        f"<h1>Chamber cards of {html.escape(date)}</h1><nav><p><a href=/board>Board</a></p>"
        f"</nav><p>In the order sealed (UTC): time, suite, product, outcome, evidence.</p>"
        f"{listing}{more}",
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


ROUTES = (
    Route("GET", "/cards", list_cards),
    Route("GET", "/cards/{card_id}", get_card),
)
