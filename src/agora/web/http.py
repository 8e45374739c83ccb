"""Plain-HTTP request/response types shared by the transport and the pages that toolsets serve.

A `Route` maps a method and a path pattern such as ``/play/{table}`` to an async handler that
receives a `Request` and returns a `Response` or an `EventStream` (served as Server-Sent
Events until the iterator ends or the client goes away). This module does no I/O itself.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.runtime.registry import Runtime


@dataclass(slots=True)
class Request:
    """One HTTP request, body fully read (bounded by the transport's size limit)."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lower-cased names
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)
    principal: Principal | None = None
    #: Its response was chosen by its Accept (`wants_html`): it is sent with ``Vary: Accept``,
    #: so that a shared cache does not hand a browser's HTML to an API client.
    negotiated: bool = False

    def json(self) -> Any:
        """Decode the body as JSON.

        Raises:
            ValueError: if the body is not valid JSON.
        """
        return json.loads(self.body or b"null")


@dataclass(slots=True)
class Response:
    """A complete HTTP response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Response:
        """A JSON response."""
        return cls(status, json.dumps(value).encode(), "application/json")

    @classmethod
    def html(cls, text: str, status: int = 200) -> Response:
        """An HTML page."""
        return cls(status, text.encode(), "text/html; charset=utf-8")

    @classmethod
    def error(cls, status: int, message: str) -> Response:
        """A JSON error body ``{"error": message}``."""
        return cls.json({"error": message}, status)


@dataclass(slots=True)
class EventStream:
    """A Server-Sent Events response.

    Each item is ``(event_name_or_None, data_text)``, or bytes already in SSE wire format.
    """

    events: AsyncIterator[tuple[str | None, str] | bytes]
    headers: list[tuple[str, str]] = field(default_factory=list)


RouteHandler = Callable[["Request", "Runtime"], Awaitable[Response | EventStream]]


@dataclass(slots=True)
class Route:
    """A method + path pattern (``{name}`` matches one path segment) and its handler.

    The front end checks Host/Origin for every route, and refuses a state-changing request
    (any method but GET/HEAD/OPTIONS) that looks cross-site or whose body is not JSON. With
    ``needs_principal``, when principals are configured, an anonymous caller gets 401: the
    route acts like a tool call and needs a bearer token, as the MCP endpoint does.
    """

    method: str
    pattern: str
    handler: RouteHandler
    needs_principal: bool = False
    _regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        parts = re.split(r"\{(\w+)\}", self.pattern)
        regex = ""
        for i, part in enumerate(parts):
            regex += re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)"
        self._regex = re.compile(f"^{regex}$")

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters if this route serves ``method path`` (a GET route serves HEAD
        too: the same response without its body), else None."""
        if method != self.method and not (method == "HEAD" and self.method == "GET"):
            return None
        m = self._regex.match(path)
        return m.groupdict() if m else None

    def serves_path(self, path: str) -> bool:
        """Whether this route serves ``path`` by some method."""
        return self._regex.match(path) is not None


def media_quality(accept: str, wanted: str) -> float:
    """How much ``accept`` wants the media type ``wanted`` (0: not at all): the one reading
    of Accept that pages, the MCP POST's check and the SSE GET's share.

    The most specific range that matches decides (RFC 9110, 12.5.1): ``application/json;
    q=0.1, */*`` wants JSON at 0.1 whatever ``*/*`` says. A tie between two types goes to
    the one named more specifically (the fraction added); the ``q`` name is read in any case.
    """
    main = wanted.split("/")[0]
    ranges = {wanted: 2, f"{main}/*": 1, "*/*": 0}
    found: dict[int, float] = {}  # specificity -> the best q given at it
    for part in accept.split(","):
        media, *params = (f.strip() for f in part.split(";"))
        specific = ranges.get(media.lower())
        if specific is None:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = min(max(float(value.strip()), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        found[specific] = max(found.get(specific, 0.0), q)
    if not found:
        return 0.0
    specific = max(found)
    q = found[specific]
    return q + specific / 1000 if q > 0 else 0.0


def wants_html(request: Request) -> bool:
    """Whether to answer HTML: ``?format=``, else Accept prefers text/html over JSON (the
    request is then marked `Request.negotiated`: its response varies with Accept)."""
    forced = request.query.get("format")
    if forced in ("json", "html"):
        return forced == "html"
    request.negotiated = True
    accept = request.headers.get("accept", "")
    return media_quality(accept, "text/html") > media_quality(accept, "application/json")


#: Every HTML page agora serves carries it: without it a phone's browser lays the page out
#: 980 px wide and shrinks it to the screen, so its text shows at a third of its size.
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'

#: The look every HTML page of agora's starts from (a chamber page's, and `error_page`'s):
#: a 500 page must not fall back to the browser's serif where a 400 page does not.
PAGE_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}"
)

#: The headers of `error_page` and the start page: no script, style or anything else may
#: load; no sniffing.
PAGE_HEADERS = (
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"),
    ("X-Content-Type-Options", "nosniff"),
)


def error_title(status: int) -> str:
    """The heading of a refusal page: ``Not found`` for 404, ``Bad request`` for 400, ..."""
    titles = {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        412: "Precondition failed",
    }
    return titles.get(status, "Unavailable" if status == 503 else "Error")


def error_page(status: int, message: str) -> Response:
    """A small HTML page saying ``message`` (escaped), with ``status``."""
    title = error_title(status)
    text = (
        f"<!doctype html><html lang=en><meta charset=utf-8>{VIEWPORT}<title>{title}</title>"
        f"<style>{PAGE_STYLE}</style><body><h1>{title}</h1><p>{html.escape(message)}</p>"
        '<p><a href="/">Start page</a>: what this server runs</p></body></html>'
    )
    response = Response.html(text, status)
    response.headers.extend(PAGE_HEADERS)
    return response


def error_response(
    request: Request,
    status: int,
    message: str,
    page: Callable[[int, str], Response] = error_page,
) -> Response:
    """``{"error": message}`` for API clients; for a browser (`wants_html`) an HTML page
    with the same status and message, ``page(status, message)``: a refused page request must
    not show a person a line of JSON."""
    if not wants_html(request):
        return Response.error(status, message)
    return page(status, message)
