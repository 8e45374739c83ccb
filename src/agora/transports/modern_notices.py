"""A 2026-07-28 POST that is no request: a notification is accepted (202), a response refused.

That revision has no session id, so such a POST names none; asking for one (the handshake
revisions' 400) would tell a client to do what its revision does not have. Streamable HTTP
lets a server accept a notification POST with 202 and no body, as the official SDK's server
does. Nothing acts on it: the revision defines no client-to-server notification over HTTP. Its
cancellation is the client closing its connection (`Link.watch_hangup` ends that call), and a
``notifications/cancelled`` could name no call of its own connection, which carries one
request at a time (the front end reads a connection's next request once the current response
is over). Honouring one by request id across connections would let one client (with no
principals configured, any client) cancel another's call. A notification whose version (its
``_meta`` envelope's, else its ``MCP-Protocol-Version`` header) is not served, or whose header
says another version than its envelope, is refused with that revision's error and 400, as a
request is; so is a response (a 2026-07-28 server sends the client no request to answer).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agora.mcp import jsonrpc as rpc
from agora.mcp.session import META_VERSION, MODERN_VERSIONS
from agora.transports.standard_headers import VERSION_HEADER
from agora.web.http import Response

if TYPE_CHECKING:
    from collections.abc import Mapping

log = logging.getLogger("agora.transports.streamable")

NO_RESPONSES = "a 2026-07-28 client sends no responses: its server sends it no requests"


def is_modern(msg: rpc.Notification | rpc.Response, headers: Mapping[str, str]) -> bool:
    """A notification or response of the 2026-07-28 revision (its POST named no session):
    its envelope or its ``MCP-Protocol-Version`` header says so."""
    meta = msg.params.get("_meta") if isinstance(msg, rpc.Notification) else None
    if isinstance(meta, dict) and META_VERSION in meta:
        return True
    return headers.get(VERSION_HEADER) in MODERN_VERSIONS


def answer(msg: rpc.Notification | rpc.Response, headers: Mapping[str, str]) -> Response:
    """202 for a notification at a served version, else the 400 that says why not."""
    if isinstance(msg, rpc.Response):
        return Response.json(rpc.error(None, rpc.INVALID_REQUEST, NO_RESPONSES), 400)
    meta = msg.params.get("_meta")
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    sent = headers.get(VERSION_HEADER)
    if version is not None and sent is not None and sent != version:
        mismatch = "Header mismatch: the MCP-Protocol-Version header is not params._meta's"
        return Response.json(rpc.error(None, rpc.HEADER_MISMATCH, mismatch), 400)
    asked = version if version is not None else sent
    if asked not in MODERN_VERSIONS:
        data = {"supported": list(MODERN_VERSIONS), "requested": asked}
        why = f"unsupported protocol version {asked!r}"
        return Response.json(rpc.error(None, rpc.UNSUPPORTED_PROTOCOL_VERSION, why, data), 400)
    log.debug("2026-07-28 notification %s accepted and dropped", msg.method)
    return Response(202)
