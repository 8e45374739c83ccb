"""What a request names, and the answers for a page no route serves by its method.

`request_of` turns a parsed head into the `Request` the routes see: its path with every
percent-escape of an unreserved character decoded (``/play/%64efault`` is ``/play/default``,
RFC 3986 6.2.2.2), its query, its headers. `gate` refuses a request no route may see (a bad
Host, another site's Host or Origin, an unknown bearer token) and `page_refusal` one a page
may not take (cross-site, a precondition, no principal where one is needed). `methods_of`
and `not_allowed` answer a page asked by a method none of its routes takes (405 with
``Allow``, HEAD wherever GET is: RFC 9110 9.1 and 15.5.6). No I/O.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from agora.logsafe import loggable
from agora.mcp import jsonrpc as rpc
from agora.transports import guard
from agora.transports.respond import refusal_response
from agora.web.http import Request, Response

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agora.identity import Principal
    from agora.transports.http1 import Head
    from agora.web.http import Route

BEARER = ("www-authenticate", 'Bearer realm="agora"')
#: The 401 of an MCP request without a token where ``allow_anonymous`` is false.
TOKEN_REQUIRED = (
    "Unauthorized: this server serves MCP only to callers with a bearer token (allow_anonymous"
    " = false): send Authorization: Bearer <token> (agora stdio --token, or AGORA_TOKEN)"
)
#: The 401 of an Authorization header naming no principal: it also says where the tokens a
#: toolset hands out (a chess table's agent token) go instead.
UNKNOWN_BEARER = (
    "Unauthorized: unknown bearer token (Authorization carries the token of a principal of the"
    " server's [[principals]]; a token a toolset gives out, such as a chess table's agent token,"
    " goes in the endpoint URL as ?token=)"
)
#: `UNKNOWN_BEARER` on a server with no ``[[principals]]``: no token can be known there, and
#: every caller is anonymous (``allow_anonymous = false`` needs principals), so: send none.
NO_PRINCIPALS_BEARER = (
    "Unauthorized: unknown bearer token: this server has no [[principals]], so it knows no"
    " token: send none (no Authorization header: unset AGORA_TOKEN, drop --token), every caller"
    " here is anonymous; a token a toolset gives out, such as a chess table's agent token, goes"
    " in the endpoint URL as ?token="
)

#: The causes of `Refused` the log says (`agora.transports.episodes.Refusals`).
UNKNOWN_TOKEN = "401 unknown bearer token"
NO_TOKEN = "401 no bearer token"
NOT_ALLOWED = "403 Host or Origin not allowed"
#: The causes of `page_refusal`'s refusals the log says, by status.
PAGE_CAUSES = {401: NO_TOKEN, 403: "403 cross-site page request"}


class Refused(NamedTuple):
    """A request `gate` refuses: its answer, and why, for the log."""

    status: int
    body: Response | dict[str, object]
    headers: list[tuple[str, str]]
    #: One of the causes above (a fixed phrase, never the token), or None: a malformed
    #: request, which only its client needs to hear about.
    cause: str | None = None
    #: What the operator may change, said with the cause's first refusal.
    detail: str = ""


#: A percent-escape of an unreserved character (RFC 3986 2.3): the same as the character.
_UNRESERVED_ESCAPE = re.compile(r"%(2[DdEe]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])")


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match[1], 16))


def is_mcp(path: str) -> bool:
    """Whether ``path`` is an MCP endpoint's (``/mcp`` or under it), read as the endpoints
    are found (`agora.server.app.App.endpoint`: empty segments skipped, so ``//mcp`` too)."""
    return path.lstrip("/").partition("/")[0] == "mcp"


def methods_of(routes: Iterable[Route], path: str, *, literal: bool = False) -> list[str]:
    """The methods the routes serve ``path`` by (none: no route has it); ``literal``: only
    routes whose pattern names the path itself, with no parameter."""
    if literal:  # (a pattern without a parameter serves the one path it spells)
        return sorted({route.method for route in routes if route.pattern == path})
    return sorted({route.method for route in routes if route.serves_path(path)})


def not_allowed(req: Request, methods: list[str], hint: str = "") -> Response:
    """405 for a page that is there but not served by ``req.method``, with its ``Allow``
    (HEAD wherever GET is: RFC 9110, 9.1); ``hint`` ends the message."""
    allow = [*methods, "HEAD"] if "GET" in methods else methods
    shown = ", ".join(allow)
    resp = refusal_response(req, 405, f"{req.method} is not allowed here; use {shown}{hint}")
    resp.headers.append(("allow", shown))
    return resp


def request_of(head: Head) -> Request:
    """The request ``head`` makes (origin-form or absolute-form target)."""
    target = head.target
    if target.startswith("/"):
        path, _, query = target.partition("?")
    else:
        parts = urlsplit(target)
        path, query = parts.path or "/", parts.query  # an empty path means / (RFC 9110 4.2.3)
    if "%" in path:  # %2F stays as it is: a byte of a name, not a separator
        path = _UNRESERVED_ESCAPE.sub(_unescape, path)
    return Request(
        method=head.method,
        path=path,
        query=dict(parse_qsl(query)) if query else {},
        headers=head.headers,
    )


def _target_refusal(target: str) -> str | None:
    """Why a request target that is not a path is refused, or None for an absolute http(s)
    URL (RFC 9112 3.2: origin-form ``/...``, absolute-form, ``*``; authority-form is for
    CONNECT, which names no resource a server of pages and MCP endpoints has)."""
    try:
        parts = urlsplit(target)
    except ValueError:
        parts = None
    if parts is not None and parts.scheme in ("http", "https") and parts.netloc:
        return None
    shown = loggable(target, 80)
    return (
        f'Bad Request: request target "{shown}" is neither a path (/...) nor an absolute http URL'
    )


def _asterisk_refusal(method: str) -> tuple[int, str]:
    """The answer to a request whose target is ``*`` (asterisk-form, RFC 9112 3.2.4): only
    OPTIONS may use it, to ask about the server as a whole, which this server does not
    answer (501, RFC 9110 15.6.2); with any other method the request is malformed (400)."""
    if method == "OPTIONS":
        return 501, "Not Implemented: OPTIONS * (the server as a whole) is not answered here"
    return 400, f'Bad Request: request target "*" is only for OPTIONS, not {loggable(method, 40)}'


def gate(
    head: Head,
    req: Request,
    allowed_hosts: Iterable[str],
    authenticate: Callable[[str | None], Principal | None],
    probe: bool,
    anonymous_mcp: bool = True,
    named_principals: bool = True,
) -> Refused | None:
    """The refusal of a request no route may see (a bad Host, a target of ``*``, a Host or
    Origin of another site, an unknown bearer token, or no token on an MCP endpoint unless
    ``anonymous_mcp``), else None with ``req.principal`` set. A ``probe`` (``/healthz``,
    ``/readyz``) is public: a balancer's stray credentials must not fail it. Without
    ``named_principals`` (no ``[[principals]]``) an unknown token's refusal says to send none."""
    headers = head.headers
    problem = guard.host_syntax_refusal(head.headers.get("host"), head.version)
    if problem is not None:
        return Refused(400, refusal_response(req, 400, problem), [])
    if head.target == "*":
        status, problem = _asterisk_refusal(head.method)
        return Refused(status, refusal_response(req, status, problem), [])
    if not head.target.startswith("/"):
        # Absolute form: the target names the host, and Host is ignored (RFC 9112 3.2.2).
        # Anything else (a bare name, CONNECT's host:port) names no resource here.
        problem = _target_refusal(head.target)
        if problem is not None:
            return Refused(400, refusal_response(req, 400, problem), [])
        headers = {**headers, "host": urlsplit(head.target).netloc}
    if not guard.origin_allowed(headers, allowed_hosts):
        refused = guard.host_refusal(headers, allowed_hosts)
        return Refused(403, refusal_response(req, 403, refused), [], NOT_ALLOWED, refused)
    req.principal = authenticate(None if probe else headers.get("authorization"))
    if req.principal is None:
        said = UNKNOWN_BEARER if named_principals else NO_PRINCIPALS_BEARER
        if is_mcp(req.path):
            body = rpc.error(None, rpc.INVALID_REQUEST, said)
            return Refused(401, body, [BEARER], UNKNOWN_TOKEN)
        # a page's refusal: HTML for a browser, else {"error": ...}
        return Refused(401, refusal_response(req, 401, said), [BEARER], UNKNOWN_TOKEN)
    if not anonymous_mcp and req.principal.anonymous and is_mcp(req.path):
        body = rpc.error(None, rpc.INVALID_REQUEST, TOKEN_REQUIRED)
        return Refused(401, body, [BEARER], NO_TOKEN, "allow_anonymous = false")
    return None


def page_refusal(req: Request, needs_principal: bool, named_principals: bool) -> Response | None:
    """The refusal of a page request that looks cross-site (403), sends no JSON body (415),
    sets a precondition, or comes without a principal's token to a route that
    ``needs_principal`` on a server with ``named_principals``; else None."""
    refused = guard.cross_site_refusal(req.method, req.headers)
    if refused is not None:
        return refusal_response(req, *refused)
    if req.method not in guard.SAFE_METHODS and guard.precondition_fails(req.headers):
        return refusal_response(req, 412, guard.NO_ENTITY_TAGS)
    assert req.principal is not None
    if needs_principal and named_principals and req.principal.anonymous:
        resp = refusal_response(req, 401, "Unauthorized: this action needs a bearer token")
        resp.headers.append(BEARER)
        return resp
    return None
