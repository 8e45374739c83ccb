"""What `agora.mcp.session.Session.handle` asks its driver to do: one action per step.

Plain records (slotted, not frozen: one per message, and a frozen field costs ~0.1 us).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.mcp import jsonrpc as rpc


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Send:
    """Send ``message`` to the peer (``related`` = the request it belongs to, if any)."""

    message: dict[str, Any]
    related: rpc.RequestId | None = None


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Invoke:
    """Run ``kind`` for request ``id``; reply with the session's ``*_result`` helpers."""

    id: rpc.RequestId
    kind: str
    name: str
    args: dict[str, Any]
    target: Any
    progress_token: str | int | None
    meta: dict[str, Any]
    modern: bool
    #: A 2026-07-28 tools/call's ``params.inputResponses`` (the client's answers to the
    #: ``inputRequests`` of its previous round), else None.
    input_responses: dict[str, Any] | None = None


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Cancel:
    """The client cancelled request ``id``: stop it; send nothing for it."""

    id: rpc.RequestId


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Answer:
    """The client answered a request we sent it."""

    response: rpc.Response


Action = Send | Invoke | Cancel | Answer
