"""What a request names, and the answers for a page no route serves by its method.

`request_of` turns a parsed head into the `Request` the routes see: its path with every
percent-escape of an unreserved character decoded (``/play/%64efault`` is ``/play/default``,
RFC 3986 6.2.2.2), its query, its headers. `methods_of` and `not_allowed` answer a page
asked by a method none of its routes takes (405 with ``Allow``, HEAD wherever GET is: RFC
9110 9.1 and 15.5.6). No I/O.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from agora.transports.respond import refusal_response
from agora.web.http import Request

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.transports.http1 import Head
    from agora.web.http import Response, Route

#: A percent-escape of an unreserved character (RFC 3986 2.3): the same as the character.
_UNRESERVED_ESCAPE = re.compile(r"%(2[DdEe]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])")


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match[1], 16))


def is_mcp(path: str) -> bool:
    """Whether ``path`` is an MCP endpoint's (``/mcp`` or under it)."""
    return path == "/mcp" or path.startswith("/mcp/")


def methods_of(routes: Iterable[Route], path: str) -> list[str]:
    """The methods the routes serve ``path`` by (none: no route has it)."""
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
        path, query = parts.path, parts.query
    if "%" in path:  # %2F stays as it is: a byte of a name, not a separator
        path = _UNRESERVED_ESCAPE.sub(_unescape, path)
    return Request(
        method=head.method,
        path=path,
        query=dict(parse_qsl(query)) if query else {},
        headers=head.headers,
    )
