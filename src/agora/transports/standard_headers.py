"""The standard request headers of a 2026-07-28 Streamable HTTP POST, checked against its body.

``MCP-Protocol-Version`` mirrors ``params._meta``'s protocol version, ``Mcp-Method`` the method,
and ``Mcp-Name`` the target of the requests that name one (`NAME_BEARING`), so that a proxy can
route on headers alone; a server that reads the body must refuse a request whose headers are
missing or say otherwise (HeaderMismatch, -32020, with HTTP 400). ``Mcp-Name`` may be carried
Base64-encoded (``=?base64?...?=``), for a name that is no plain ASCII header value. Pure
functions of a request's (lower-cased) headers and decoded body; no I/O.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from agora.mcp.session import HANDSHAKE_VERSIONS, MODERN_VERSIONS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.mcp import jsonrpc as rpc

VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
#: Methods whose target ``Mcp-Name`` mirrors: the ``params`` key that holds it.
NAME_BEARING = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
_PREFIX = "=?base64?"
_SUFFIX = "?="


def sessionless_refusal(headers: Mapping[str, str]) -> str:
    """The refusal of a request that needs a session and names none: that its
    ``MCP-Protocol-Version`` is one this server does not speak at all (naming those it does),
    or else that the ``Mcp-Session-Id`` header is required."""
    version = headers.get(VERSION_HEADER)
    known = {*HANDSHAKE_VERSIONS, *MODERN_VERSIONS}
    if version is None or version in known:
        return "Bad Request: Mcp-Session-Id header is required"
    spoken = ", ".join(sorted(known))
    return f"Bad Request: unsupported MCP-Protocol-Version {version} (this server speaks {spoken})"


def header_mismatch(headers: Mapping[str, str], msg: rpc.Request, version: object) -> str | None:
    """Why the standard headers of request ``msg`` (whose envelope names ``version``) do not
    match it, or None when they do."""
    sent = headers.get(VERSION_HEADER)
    if sent != version:
        said = "missing" if sent is None else "not params._meta's protocol version"
        return f"Header mismatch: the MCP-Protocol-Version header is {said}"
    sent = headers.get(METHOD_HEADER)
    if sent != msg.method:
        said = "missing" if sent is None else "not the request's method"
        return f"Header mismatch: the Mcp-Method header is {said} ({msg.method})"
    key = NAME_BEARING.get(msg.method)
    if key is None:
        return None
    target = msg.params.get(key)
    if not isinstance(target, str):  # no name to mirror: the method itself refuses it
        return None
    sent = headers.get(NAME_HEADER)
    if sent is None:
        return f"Header mismatch: {msg.method} needs the Mcp-Name header (params.{key})"
    if decode_value(sent) != target:
        return f"Header mismatch: the Mcp-Name header is not params.{key} of the request"
    return None


def decode_value(value: str) -> str | None:
    """A header value as sent, or the text of its Base64 form; None if that form is broken
    (bad Base64 or UTF-8), so that it never matches."""
    if not (value.startswith(_PREFIX) and value.endswith(_SUFFIX)):
        return value
    payload = value[len(_PREFIX) : len(value) - len(_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
