"""Calls the chess toolset's page routes in-process, as the HTTP server would.

Test support only: this module must not assert anything about a response beyond its kind.
"""

from __future__ import annotations

import json

from agora.toolsets.chess.web import ROUTES
from agora.web.http import EventStream, Request, Response


async def http(runtime, method, path, body=None, query=None) -> Response | EventStream:
    for route in ROUTES:
        params = route.match(method, path)
        if params is not None:
            raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body else b""
            request = Request(method, path, query or {}, {}, raw, params)
            return await route.handler(request, runtime)
    raise AssertionError(f"no route for {method} {path}")


async def api(runtime, method, path, body=None, query=None) -> tuple[int, dict]:
    response = await http(runtime, method, path, body, query)
    assert isinstance(response, Response)
    assert response.content_type.startswith("application/json")
    return response.status, json.loads(response.body)
