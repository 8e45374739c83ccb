"""The board's pages: ``GET /board`` (ranked products per suite) and ``GET /board/cards``.

``/board?suite=&from=YYYY-MM-DD&to=YYYY-MM-DD`` answers JSON, or HTML when the client prefers
it (``?format=`` overrides), with one table per suite; each row links to ``/board/cards``,
the list of the cards behind it, each with its evidence status (the board counts sealed
cards, signed or not yet: a server without a signing key would otherwise rank nothing; never
one whose figures contradict each other, `consistency`) and linking to its card page. Dates
are UTC days; the default range is the last `DEFAULT_DAYS` days, at most `MAX_DAYS`. Every
value shown is escaped (products are participant claims); pages carry the card pages' CSP.
Reads committed rows only.
"""

from __future__ import annotations

import datetime as dt
import html
import urllib.parse
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.chamber import board, listings
from agora.toolsets.chamber.identity import PRODUCT_PATTERN
from agora.toolsets.chamber.web import (
    HEADERS,
    UNKNOWN_AFTER,
    BadQuery,
    check_format,
    error_response,
    next_link,
    next_page,
    page,
    paged,
    parse_day,
    parse_limit,
)
from agora.web.http import Request, Response, Route, wants_html
from agora.web.prefix import base_path

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

DEFAULT_DAYS: Final = 30
MAX_DAYS: Final = 366
#: The ranking's figures never wrap; headings and products may. The board page is wider than
#: a card's (eight columns, the last the link to the cards). On a narrow screen (a phone's)
#: each product becomes a block: its name, then its figures two by two, each with its
#: heading (``data-label``), the cards link last; nothing is hidden or scrolls sideways.
_BOARD_STYLE = (
    "body{max-width:64rem}th{overflow-wrap:normal}td{white-space:nowrap}td.n{text-align:right}"
    "td.p{white-space:normal}.wide{overflow-x:auto}"
    "@media (max-width:40rem){table.board thead{display:none}"
    "table.board,table.board tbody{display:block}"
    "table.board tr{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));"
    "border-bottom:1px solid #999;padding:.3rem 0}"
    "table.board td{border:0;white-space:normal;text-align:left}"
    "table.board td[data-label]::before{content:attr(data-label) ': ';color:#555}"
    "table.board td.p{grid-column:1/-1;order:-1;font-weight:600}"
    "table.board td.c{grid-column:1/-1}}"
)


def _range(request: Request, today: dt.date) -> tuple[str, str]:
    """``(from, to)`` of a board query; the default range is clamped at the calendar's
    first day rather than reaching before it."""
    check_format(request)
    last = parse_day(request.query.get("to") or today.isoformat(), "to")
    given = request.query.get("from")
    if given:
        first = parse_day(given, "from")
    else:
        first = last - dt.timedelta(days=min(DEFAULT_DAYS - 1, (last - dt.date.min).days))
    if first > last:
        raise BadQuery("from must not be after to")
    if (last - first).days >= MAX_DAYS:
        raise BadQuery(f"the range may span at most {MAX_DAYS} days")
    return first.isoformat(), last.isoformat()


def _json(body: dict[str, Any], status: int = 200) -> Response:
    response = Response.json(body) if status == 200 else Response.error(status, body["error"])
    response.headers.extend(HEADERS)
    return response


def _cards_url(
    suite_id: str, product: str, first: str, last: str, base: str, named: bool = False
) -> str:
    """A board row's cards, under ``base`` (the path prefix of ``public_url``)."""
    fields = {"suite": suite_id, "product": product, "from": first, "to": last}
    if named:
        fields["entered"] = "named"
    return f"{base}/board/cards?{urllib.parse.urlencode(fields)}"


def _named(request: Request) -> bool:
    """Whether ``?entered=named`` asks for the cards of attempts a named principal entered
    (``any``, the default: every server-seeded card).

    Raises:
        BadQuery: another value.
    """
    entered = request.query.get("entered") or "any"
    if entered not in ("any", "named"):
        raise BadQuery("entered must be any (every card) or named (entered with a token)")
    return entered == "named"


def board_route(suite_ids: tuple[str, ...]) -> Route:
    """``GET /board`` for the contract's active ``suite_ids``."""

    async def get_board(request: Request, runtime: Runtime) -> Response:
        suite = request.query.get("suite") or None
        try:
            if suite is not None and suite not in suite_ids:
                raise BadQuery(f"no suite {suite!r}; suites: {', '.join(suite_ids)}")
            today = runtime.clock.wall().astimezone(dt.UTC).date()
            first, last = _range(request, today)
            named = _named(request)
        except BadQuery as exc:
            return error_response(request, 400, str(exc))
        rows = await runtime.read(
            lambda conn: listings.board_cards(conn, first, last, suite, named)
        )
        ranked = board.rank(rows)
        shown = [suite] if suite else list(suite_ids)
        base = base_path(runtime.public_url)
        still_open: dict[str, dict[str, int]] = {}
        final_after = None
        if last >= today.isoformat():  # an open attempt's card lands today or later
            still_open, final_after = await runtime.read(
                lambda conn: listings.open_attempts(conn, first, suite, named)
            )
        body = {
            "from": first,
            "to": last,
            "seed_source": "server",
            "entered": "named" if named else "any",
            "suites": {
                s: [
                    r.as_json(i + 1, _cards_url(s, r.product, first, last, base, named))
                    for i, r in enumerate(ranked.get(s, []))
                ]
                for s in shown
            },
            "still_open": {s: dict(sorted(still_open.get(s, {}).items())) for s in shown},
            "final_after": final_after,
        }
        if not wants_html(request):
            return _json(body)
        return page(f"Chamber board {first} to {last}", _board_html(body, suite_ids))

    return Route("GET", "/board", get_board)


#: The headings of the figure columns, in order (and their labels on a narrow screen).
_FIGURES: Final = ("#", "attempts", "solved", "success rate", "expired", "quarantined",
                   "median actions of solved attempts", "median hints",
                   "median wrong")  # fmt: skip
#: How rows rank, said on the page under the range.
RANKING: Final = (
    "Products rank by success rate, then fewer median actions of solved attempts (a product "
    "with no solved attempt comes after those with one), then more attempts, then product id. "
    "Only solved attempts count towards the median actions, so sealing or abandoning a bad run "
    "early gains nothing over playing it out."
)


def _cards_label(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


def _actions(median: float | None) -> str:
    """The median actions of solved attempts as shown; "none" when nothing was solved."""
    return "none" if median is None else f"{median:g}"


def _form(body: dict[str, Any], suite_ids: tuple[str, ...]) -> str:
    """The board's own query as a form (a GET to this page): the range, the suite, and
    whether only attempts a named principal entered count."""
    shown = list(body["suites"])
    one = shown[0] if len(shown) == 1 and len(suite_ids) > 1 else ""
    suites = "".join(
        f"<option{' selected' * (s == one)}>{html.escape(s)}</option>" for s in suite_ids
    )
    named = body["entered"] == "named"
    return (
        "<form method=get><label>From <input type=date name=from"
        f' value="{html.escape(body["from"], quote=True)}"></label> <label>to <input'
        f' type=date name=to value="{html.escape(body["to"], quote=True)}"></label> <label>'
        f"suite <select name=suite><option value=''>every suite</option>{suites}</select>"
        "</label> <label>entered by <select name=entered><option value=any>anyone</option>"
        f"<option value=named{' selected' * named}>named principals only</option></select>"
        "</label> <button>Show</button></form>"
    )


def _board_html(body: dict[str, Any], suite_ids: tuple[str, ...] = ()) -> str:
    entered = (
        "Only attempts entered by the server's named principals (with a bearer token) count."
        if body["entered"] == "named"
        else "Attempts entered by anyone count: an anonymous caller may claim any product,"
        " so choose named principals only to rank the attempts the server's principals"
        " entered."
    )
    parts = [
        f"<style>{_BOARD_STYLE}</style>",
        f"<h1>ScoreIA Chamber board</h1>{_form(body, suite_ids or tuple(body['suites']))}"
        f"<p>{html.escape(body['from'])} to "
        f"{html.escape(body['to'])} (UTC). Only rooms whose seed the server drew count; "
        f"practice runs on chosen seeds never rank. Products are participant claims. {entered} "
        "Every "
        "sealed card counts, signed or not yet signed, except one whose figures contradict "
        "each other (its card page says which), which counts nowhere; each row links to the "
        f"cards behind it, where a card not signed yet is marked pending_signature.</p>"
        f"<p>{RANKING}</p>",
    ]
    if body["final_after"] is not None:
        parts.append(
            "<p>Some attempts are still open: each counts once sealed, or at its expiry if "
            "left unsealed (the sweep then publishes its card, sealed by expiry), so this range "
            f"is not final before {html.escape(body['final_after'])}.</p>"
        )
    heads = (_FIGURES[0], "product", *_FIGURES[1:], "cards")
    for suite, rows in body["suites"].items():
        parts.append(f"<h2>{html.escape(suite)}</h2>")
        if body["still_open"][suite]:
            said = ", ".join(
                f"{html.escape(product)} {n}" for product, n in body["still_open"][suite].items()
            )
            parts.append(f"<p>Still open, not counted yet: {said}.</p>")
        if not rows:
            parts.append("<p>No server-seeded cards in this range.</p>")
            continue
        head = "".join(f"<th>{h}</th>" for h in heads)
        lines = []
        for r in rows:
            href = html.escape(r["cards"], quote=True)
            figures = (r["rank"], r["attempts"], r["solved"], f"{r['success_rate']:.0%}",
                       r["expired"], r["quarantined"], _actions(r["median_actions"]),
                       f"{r['median_hints']:g}", f"{r['median_wrong_submissions']:g}")  # fmt: skip
            labelled = zip(_FIGURES, figures, strict=True)
            n = [f'<td class=n data-label="{h}">{v}</td>' for h, v in labelled]
            cells = (
                f"{n[0]}<td class=p>{html.escape(r['product'])}</td>{''.join(n[1:])}"
                f'<td class=c><a href="{href}">{_cards_label(r["attempts"])}</a></td>'
            )
            lines.append(f"<tr>{cells}</tr>")
        table = (
            f"<table class=board><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(lines)}</tbody></table>"
        )
        parts.append(f"<div class=wide>{table}</div>")
    return "".join(parts)


async def get_board_cards(request: Request, runtime: Runtime) -> Response:
    """``GET /board/cards?suite=&product=&from=&to=[&after=ID][&limit=N]``: the cards behind
    one row, in the order sealed; ``next_after`` (and a "Next page" link) when more follow."""
    suite, product = request.query.get("suite", ""), request.query.get("product", "")
    after = request.query.get("after", "")
    try:
        if not suite or not product:
            raise BadQuery("suite and product are required")
        if not PRODUCT_PATTERN.match(product):  # no card carries it: not echoed in a page
            raise BadQuery("product is not a product id (^[a-z0-9][a-z0-9._-]{0,78}$)")
        first, last = _range(request, runtime.clock.wall().astimezone(dt.UTC).date())
        limit = parse_limit(request)
        named = _named(request)
        rows = await runtime.read(
            lambda c: listings.board_card_ids(
                c, suite, product, first, last, after, limit + 1, named
            )
        )
    except BadQuery as exc:
        return error_response(request, 400, str(exc))
    except listings.UnknownCursor:
        return error_response(request, 400, UNKNOWN_AFTER)
    shown, last_id = paged(rows, limit)
    body: dict[str, Any] = {"suite": suite, "product": product, "from": first, "to": last}
    body["entered"] = "named" if named else "any"
    base = base_path(runtime.public_url)
    body["cards"] = [{**r, "url": f"{base}/cards/{r['card_id']}"} for r in shown]
    if last_id is not None:
        body["next_after"] = last_id
    if not wants_html(request):
        return _json(body)
    items = "".join(
        f'<li><a href="{html.escape(c["url"], quote=True)}">{html.escape(c["card_id"])}</a> '
        f"{html.escape(c['sealed_at'])} {html.escape(c['outcome'])}, "
        f"{c['actions_used']} action{'s' * (c['actions_used'] != 1)}, "
        f"{html.escape(c['evidence_status'])}</li>"
        for c in body["cards"]
    )
    title = f"{product} on {suite}, {first} to {last}"
    if named:
        title += ", entered by named principals"
    empty = f"No server-seeded cards of {product} on {suite} from {first} to {last}."
    listing = f"<ul>{items}</ul>" if items else f"<p>{html.escape(empty)}</p>"
    more = next_link(None if last_id is None else next_page("/board/cards", request, last_id))
    inner = (
        f"<h1>{html.escape(title)}</h1><nav><p><a href=/board>Board</a></p></nav>"
        "<p>In the order sealed (UTC): time, outcome, actions, evidence (a card not signed"
        f" yet is pending_signature).</p>{listing}{more}"
    )
    return page(title, inner)


def routes(suite_ids: tuple[str, ...]) -> tuple[Route, Route]:
    """The board's routes for the given active suites."""
    return board_route(suite_ids), Route("GET", "/board/cards", get_board_cards)
