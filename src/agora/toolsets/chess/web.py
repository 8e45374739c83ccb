"""The human's side of chess over HTTP: the page, its JSON API, and live updates by SSE.

Routes (all under ``/play``):
    GET  /play/static/{name}          the page's assets and piece images (served locally)
    GET  /play (or /play/)            a page that creates a table (lists none)
    POST /play/tables                 create a table: {"name"?} -> its human URL and agent endpoint
    GET  /play/{table}                the page (spectator view without ``?token=``)
    GET  /play/{table}/state          the table as `PageState` JSON (``?token=`` for the human
                                      view; a wrong token is 403, never a silent spectator view)
    GET  /play/{table}/events         SSE: a ``state`` event now and after every change (or the
                                      agent's presence), ``ping`` every 20 s (same token rule)
    GET  /play/{table}/pgn            the current game as a PGN download (public, like the page);
                                      ``?game=N`` an earlier game of the table
    POST /play/{table}/side           {"token", "agentColor": "white" | "black"}
    POST /play/{table}/move           {"token", "from", "to", "promotion"?, "note"?}
    POST /play/{table}/resign         {"token"}
    POST /play/{table}/offer-draw     {"token"}
    POST /play/{table}/accept-draw    {"token"}
    POST /play/{table}/new-game       {"token"}
    POST /play/{table}/agent-token    {"token"}: a new agent token; the old one stops working

Every human action is a command with the table's token, checked by the table entity; a
refusal answers ``{"error", "code"}`` with 400, 403, 404 or 409. A body with a NUL character
(U+0000) in any string, or one nested too deeply to look for it, is refused with 400 before
anything runs, worded as MCP refuses it.
This module only moves requests to commands and snapshots to JSON: no rules, and no HTML
built from data.
"""

from __future__ import annotations

import contextlib
import html
import re
import secrets
from importlib import resources
from typing import TYPE_CHECKING, Final

import chess
import chess.svg
import msgspec
import trio

from agora.errors import ActorStopped
from agora.logsafe import NAME_SEGMENT
from agora.mcp import jsonrpc as rpc
from agora.mcp.guard import NUL_TEXT, nul_field
from agora.toolsets.chess import bodies, page
from agora.toolsets.chess.commands import (
    AcceptDraw,
    CheckToken,
    CreateTable,
    HumanCommand,
    Look,
    NewGame,
    OfferDraw,
    Resign,
    Tokens,
    TrackPage,
)
from agora.toolsets.chess.past import past_game
from agora.toolsets.chess.pgn import game_pgn
from agora.toolsets.chess.table import KIND
from agora.toolsets.chess.terms import BAD_NAME, WRONG_TOKEN, ChessError, agent_token_on_page
from agora.web.http import VIEWPORT, EventStream, Request, Response, Route, wants_html

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

    from agora.runtime.registry import Runtime
    from agora.toolsets.chess.snapshot import Snapshot

KEEPALIVE_SECONDS: Final = 20.0
RESERVED: Final = frozenset({"static", "tables", "api"})
_STATUS: Final = {
    "FORBIDDEN": 403,
    "TABLE_NOT_FOUND": 404,
    "MALFORMED_SQUARE": 400,
    "MALFORMED_PROMOTION": 400,
    "NOTE_TOO_LONG": 400,
}
_SECURITY_HEADERS: Final = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
]
_TYPES: Final = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


def _load_assets() -> dict[str, tuple[bytes, str]]:
    assets: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("agora.toolsets.chess") / "static"
    for item in folder.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in _TYPES:
            assets[item.name] = (item.read_bytes(), _TYPES[suffix] + "; charset=utf-8")
    for symbol in "PNBRQKpnbrqk":
        piece = chess.Piece.from_symbol(symbol)
        assets[f"{page.piece_code(piece)}.svg"] = (chess.svg.piece(piece).encode(), "image/svg+xml")
    return assets


ASSETS: Final = _load_assets()


def _refusal(err: ChessError) -> Response:
    return Response.json({"error": err.message, "code": err.code}, _STATUS.get(err.code, 409))


#: A ``?game=`` value: ASCII digits (``str.isdigit`` takes "²", which ``int`` refuses).
_GAME_NUMBER = re.compile(r"[0-9]{1,9}")
#: The refusal of a human action sent with no body (the decoder would say "truncated").
EMPTY_BODY = 'the body is empty: send a JSON object with the human token, {"token": "..."}'


def _bad_request(error: str) -> Response:
    return Response.json({"error": error, "code": "BAD_REQUEST"}, 400)


def _nul_refusal(body: bytes) -> Response | None:
    """A 400 when the JSON ``body`` holds a NUL (U+0000) anywhere, worded as MCP words it.

    PostgreSQL text cannot hold one and SQLite would keep it: both backends refuse it alike.
    Asked once the typed decode took the body (a flat object of known fields), so the
    untyped decode and the walk here stay small; a body nested past what they can follow
    is a 400 all the same, never a 500.
    """
    if b"\\u0000" not in body:  # JSON can only write U+0000 escaped
        return None
    try:
        where = nul_field(msgspec.json.decode(body))
    except msgspec.DecodeError:
        return None  # the typed decode says what is wrong with it
    except RecursionError:
        return _bad_request(rpc.TOO_DEEP)
    return None if where is None else _bad_request(f"{where} {NUL_TEXT}")


def _json(body: bytes) -> Response:
    return Response(200, body, "application/json", [("Cache-Control", "no-store")])


def _valid_table(name: str) -> bool:
    return bool(NAME_SEGMENT.fullmatch(name)) and name not in RESERVED


async def _is_human(runtime: Runtime, table: str, token: str | None) -> bool:
    """Whether ``token`` is the table's human token; no token means a spectator.

    Raises:
        ChessError: ``FORBIDDEN`` for a token that is not the table's.
    """
    if not token:
        return False
    whose: str | None = await runtime.call(KIND, table, CheckToken(token))
    if whose == "agent":
        raise ChessError("FORBIDDEN", agent_token_on_page(table))
    if whose is None:
        raise ChessError("FORBIDDEN", WRONG_TOKEN)
    return True


async def asset(request: Request, runtime: Runtime) -> Response:
    """Serve one static asset or piece image."""
    found = ASSETS.get(request.params["name"])
    if found is None:
        return Response.error(404, "no such asset")
    body, content_type = found
    return Response(200, body, content_type, [("Cache-Control", "no-cache")])


async def index_page(request: Request, runtime: Runtime) -> Response:
    """Serve the page that creates tables (with ``POST /play/tables``); it lists none."""
    body, content_type = ASSETS["index.html"]
    return Response(200, body, content_type, list(_SECURITY_HEADERS))


def _error_page(status: int, message: str) -> Response:
    """A small HTML page for a browser's refused request (no script, no data but escaped)."""
    text = (
        f'<!doctype html><html lang="en"><meta charset="utf-8">{VIEWPORT}<title>agora chess</title>'
        '<link rel="stylesheet" href="/play/static/play.css"><body><h1>agora chess</h1>'
        f'<p role="alert">{html.escape(message)}</p>'
        '<p><a href="/play">Create a table</a> · <a href="/">Start page</a></p></body></html>'
    )
    return Response(status, text.encode(), "text/html; charset=utf-8", list(_SECURITY_HEADERS))


async def play_page(request: Request, runtime: Runtime) -> Response:
    """Serve the page; it reads the table and token from its own URL.

    A browser asking for a table that does not exist gets an HTML page saying so (404);
    other clients get the JSON refusal.
    """
    table = request.params["table"]
    browser = wants_html(request)
    if not _valid_table(table):
        message = "There is no such table."
        return _error_page(404, message) if browser else Response.error(404, "no such table")
    try:
        await runtime.call(KIND, table, Look())
    except ChessError as err:
        return _error_page(_STATUS.get(err.code, 409), err.message) if browser else _refusal(err)
    body, content_type = ASSETS["play.html"]
    return Response(200, body, content_type, list(_SECURITY_HEADERS))


async def state(request: Request, runtime: Runtime) -> Response:
    """The table as the viewer sees it."""
    table = request.params["table"]
    if not _valid_table(table):
        return Response.error(404, "no such table")
    try:
        snap: Snapshot = await runtime.call(KIND, table, Look())
        human = await _is_human(runtime, table, request.query.get("token"))
    except ChessError as err:
        return _refusal(err)
    return _json(page.encode(page.page_state(snap, human=human, public_url=runtime.public_url)))


async def events(request: Request, runtime: Runtime) -> Response | EventStream:
    """Stream the table's state: once now, then after every change."""
    table = request.params["table"]
    if not _valid_table(table):
        return Response.error(404, "no such table")
    try:
        await runtime.call(KIND, table, Look())
        token = request.query.get("token")
        human = await _is_human(runtime, table, token)
    except ChessError as err:
        return _refusal(err)
    seat = token if human else None
    return EventStream(_stream(runtime, table, seat), [("Cache-Control", "no-store")])


def _news(sent: tuple[int, bool, bool] | None) -> Callable[[Snapshot], bool]:
    # The agent's presence fades with no change: each poll's `Look` judges it (within 20 s).
    return lambda snap: (snap.version, snap.agent_present, snap.agent_shared) != sent


async def _stream(
    runtime: Runtime, table: str, token: str | None
) -> AsyncIterator[tuple[str | None, str]]:
    """The page's events; a human's stream (``token``) counts as their page at the table
    (`TrackPage`) from its first event until it ends, however it ends."""
    if token is not None:
        try:
            await runtime.call(KIND, table, TrackPage(token, connected=True))
        except ChessError:
            return
    try:
        async with contextlib.aclosing(_events(runtime, table, human=token is not None)) as out:
            async for event in out:
                yield event
    finally:
        if token is not None:  # also when cancelled (the page went away): the count drops
            with trio.CancelScope(shield=True), contextlib.suppress(ChessError, ActorStopped):
                await runtime.call(KIND, table, TrackPage(token, connected=False))


async def _events(
    runtime: Runtime, table: str, *, human: bool
) -> AsyncGenerator[tuple[str | None, str], None]:
    sent: tuple[int, bool, bool] | None = None
    while not runtime.closing:
        news = _news(sent)
        try:
            snap = await runtime.poll(KIND, table, Look(), ready=news, timeout=KEEPALIVE_SECONDS)
        except ChessError:
            return
        if news(snap):
            sent = (snap.version, snap.agent_present, snap.agent_shared)
            view = page.page_state(snap, human=human, public_url=runtime.public_url)
            yield "state", page.encode(view).decode()
        elif not runtime.closing:
            yield "ping", "{}"


def _action(
    parse: Callable[[bytes], HumanCommand],
) -> Callable[[Request, Runtime], Awaitable[Response]]:
    async def handler(request: Request, runtime: Runtime) -> Response:
        table = request.params["table"]
        if not _valid_table(table):
            return Response.error(404, "no such table")
        if not request.body.strip():
            return _bad_request(EMPTY_BODY)
        try:
            command = parse(request.body)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            return _bad_request(rpc.decode_problem(request.body, err))
        # Once the typed decode took it (a flat object of known fields), not before: an
        # untyped decode and walk of any body took up to 0.5 s of the event loop for a
        # megabyte of arrays (a reviewer's finding).
        if (refused := _nul_refusal(request.body)) is not None:
            return refused
        try:
            snap: Snapshot = await runtime.call(KIND, table, command)
        except ChessError as err:
            return _refusal(err)
        view = page.page_state(snap, human=True, public_url=runtime.public_url)
        return _json(page.encode(view))

    handler.__doc__ = f"Run the human action parsed by {parse.__name__}."
    return handler


async def pgn(request: Request, runtime: Runtime) -> Response:
    """The current game (or ``?game=N``, an earlier one) as PGN, offered as a download."""
    table = request.params["table"]
    if not _valid_table(table):
        return Response.error(404, "no such table")
    try:
        snap: Snapshot = await runtime.call(KIND, table, Look())
    except ChessError as err:
        return _refusal(err)
    asked = request.query.get("game")
    if asked is not None:
        if not _GAME_NUMBER.fullmatch(asked) or not 1 <= int(asked) <= snap.game_number:
            return Response.error(404, f"no game {asked[:12]!r} at this table")
        if int(asked) < snap.game_number:
            past = await runtime.read(lambda conn: past_game(conn, table, int(asked)))
            if past is None:
                return Response.error(404, f"no game {asked} at this table")
            snap = past
    text = game_pgn(snap, page.spectator_url(runtime.public_url, table))
    name = f"agora-{table}-game{snap.game_number}.pgn"
    headers = [
        ("Content-Disposition", f'attachment; filename="{name}"'),
        ("Cache-Control", "no-store"),
    ]
    return Response(200, text.encode(), "application/x-chess-pgn; charset=utf-8", headers)


async def create_table(request: Request, runtime: Runtime) -> Response:
    """Create a table; answer its human URL, token and the agent's endpoints."""
    try:
        body = msgspec.json.decode(request.body or b"{}", type=bodies.CreateBody)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        return _bad_request(rpc.decode_problem(request.body, err))
    if (refused := _nul_refusal(request.body)) is not None:  # (after the typed decode)
        return refused
    # Names are lower case in URLs: "Friday" makes table "friday" rather than a refusal.
    name = body.name.strip().lower() if body.name is not None else "t-" + secrets.token_hex(4)
    if not _valid_table(name):
        return _bad_request(f"{name[:40]!r} {BAD_NAME}")
    try:
        tokens: Tokens = await runtime.call(
            KIND, name, CreateTable(secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        )
    except ChessError as err:
        return _refusal(err)
    links = page.agent_links(runtime.public_url, name, tokens.agent)
    return Response.json(
        {
            "table": name,
            "token": tokens.human,
            "humanUrl": page.human_url(runtime.public_url, name, tokens.human),
            "spectatorUrl": page.spectator_url(runtime.public_url, name),
            "agentToken": tokens.agent,
            "agent": msgspec.to_builtins(links),
        },
        201,
    )


ROUTES: Final = (
    Route("GET", "/play/static/{name}", asset),
    Route("GET", "/play", index_page),
    Route("GET", "/play/", index_page),
    Route("POST", "/play/tables", create_table, needs_principal=True),
    Route("GET", "/play/{table}", play_page),
    Route("GET", "/play/{table}/state", state),
    Route("GET", "/play/{table}/events", events),
    Route("POST", "/play/{table}/side", _action(bodies.side)),
    Route("POST", "/play/{table}/move", _action(bodies.move)),
    Route("POST", "/play/{table}/resign", _action(bodies.token_only(Resign))),
    Route("POST", "/play/{table}/offer-draw", _action(bodies.token_only(OfferDraw))),
    Route("POST", "/play/{table}/accept-draw", _action(bodies.token_only(AcceptDraw))),
    Route("POST", "/play/{table}/new-game", _action(bodies.token_only(NewGame))),
    Route("POST", "/play/{table}/agent-token", _action(bodies.new_agent_token)),
    Route("GET", "/play/{table}/pgn", pgn),
)
