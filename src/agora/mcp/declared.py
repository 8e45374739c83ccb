"""What a client declares at ``initialize``, as a session keeps it for its whole life.

A session lives up to ``session_idle_seconds`` and a principal may hold thousands, so what
it keeps of the client's word must be small whatever the client sent: ``capabilities`` is
refused past `MAX_CAPABILITIES_BYTES` (clients declare theirs in a few dozen bytes; a
megabyte of short strings held as Python objects took 15 MB), and of ``clientInfo`` only
the short texts the server may show are kept (``icons`` and the rest are not used).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc

#: The largest ``capabilities`` object a session keeps, as JSON.
MAX_CAPABILITIES_BYTES: Final = 8192
#: The ``clientInfo`` members kept, each cut to `CLIENT_INFO_CHARS` characters.
CLIENT_INFO_KEPT: Final = ("name", "version", "title")
CLIENT_INFO_CHARS: Final = 256


def capabilities(params: dict[str, Any]) -> dict[str, Any]:
    """``params.capabilities`` of an ``initialize`` ({} when absent).

    Raises:
        ProtocolError: -32602 if it is not an object, or is larger than
            `MAX_CAPABILITIES_BYTES` as JSON.
    """
    caps = params.get("capabilities")
    if caps is None:
        return {}
    if not isinstance(caps, dict):
        raise ProtocolError(rpc.INVALID_PARAMS, "initialize: params.capabilities must be an object")
    size = len(msgspec.json.encode(caps))
    if size > MAX_CAPABILITIES_BYTES:
        raise ProtocolError(
            rpc.INVALID_PARAMS,
            f"initialize: params.capabilities is {size} bytes of JSON, more than the"
            f" {MAX_CAPABILITIES_BYTES} a session keeps",
        )
    return caps


def client_info(params: dict[str, Any]) -> dict[str, str]:
    """The short texts of ``params.clientInfo`` a session keeps (none when absent)."""
    info = params.get("clientInfo")
    if not isinstance(info, dict):
        return {}
    kept = ((key, info.get(key)) for key in CLIENT_INFO_KEPT)
    return {key: value[:CLIENT_INFO_CHARS] for key, value in kept if isinstance(value, str)}
