"""The one error root of agora, and the two ways an error leaves the server.

A `ProtocolError` becomes a JSON-RPC error object; a `ToolError` becomes a tool result with
``isError: true`` whose structured body tells the model what went wrong and what to do next.
This module must not import trio or anything that does I/O.
"""

from __future__ import annotations

from typing import Any


class AgoraError(Exception):
    """Root of every error agora raises on purpose."""


class ProtocolError(AgoraError):
    """A request the MCP layer refuses: sent back as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ToolError(AgoraError):
    """A business or validation failure inside a tool, sent back as an ``isError`` result.

    Args:
        body: The structured error the model reads (the toolset's own vocabulary, e.g. the
            chamber's ``{"ok": false, "code": ..., "retryable": ..., "recovery_hint": ...}``).
        text: Optional human text for the text block; defaults to the JSON of ``body``.
    """

    def __init__(self, body: dict[str, Any], text: str | None = None) -> None:
        super().__init__(text or str(body.get("error") or body.get("message") or body))
        self.body = body
        self.text = text


class StoreError(AgoraError):
    """The store could not commit or read; the caller's command had no effect."""


class ActorStopped(AgoraError):
    """The actor stopped (shutdown or crash) before it could answer this command."""
