"""The one error root of agora, and the two ways an error leaves the server.

A `ProtocolError` becomes a JSON-RPC error object; a `ToolError` becomes a tool result with
``isError: true`` whose structured body tells the model what went wrong and what to do next.
This module must not import trio or anything that does I/O. `Failure` describes an internal
failure for the toolset hook that shapes it into the toolset's own vocabulary.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Literal


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
            chamber's ``{"ok": false, "code": ..., "retryable": ..., "recovery_hint": ...}``),
            or a sentence: ``ToolError("no such note")`` is the body ``{"error": "no such
            note"}`` with that sentence as its text.
        text: Optional human text for the text block; defaults to the JSON of ``body`` (to
            the sentence, when ``body`` is one).

    Raises:
        TypeError: ``body`` is neither a dict nor a str (raised where the error is built,
            not when it is answered).
    """

    def __init__(self, body: dict[str, Any] | str, text: str | None = None) -> None:
        if isinstance(body, str):
            text = body if text is None else text
            body = {"error": body}
        elif not isinstance(body, dict):
            raise TypeError(
                "ToolError takes the structured error as a dict (or a sentence, as a str),"
                f" not {type(body).__name__}"
            )
        super().__init__(text or str(body.get("error") or body.get("message") or body))
        self.body = body
        self.text = text


class InputRequired(Exception):
    """A 2026-07-28 call needs its client's input first (multi round-trip requests, SEP-2322).

    At that revision a server sends no request of its own (``roots/list``,
    ``sampling/createMessage``, ``elicitation/create``): the call is answered with
    ``resultType: "input_required"`` and ``inputRequests`` (key -> the request), and the client
    sends the call again with ``inputResponses`` (key -> its result). Raised by
    `agora.server.channel.ClientChannel.request`; nothing the call did before it may count.
    Not an `AgoraError`: a handler that catches those (a client's refusal) lets this through.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("input required: " + ", ".join(requests))
        self.requests = requests


class RequestRefused(Exception):
    """A 2026-07-28 call refused for what its client declared or sent, found as a handler asks
    it (`agora.server.channel.ClientChannel.request`): a capability the request did not
    declare (-32021, ``data.requiredCapabilities``), or an ``inputResponses`` answer that is
    not the result of the method asked (-32602). Answered as the JSON-RPC error it
    carries, as a `ProtocolError` is, but not an `AgoraError`: a handler that catches those
    (a client that failed to answer an optional request) lets this through.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


#: Why the store could not write, when the operating system says so (`StoreError.cause`):
#: the database's disk is full, its files or file system refuse writes, or the disk failed.
StoreCause = Literal["disk_full", "read_only", "io_error"]

#: How each `StoreCause` is named to a client: what happened, in words an operator acts on.
STORE_CAUSES: dict[str, str] = {
    "disk_full": "the database's disk is full",
    "read_only": "the database is read-only (its files or file system refuse writes)",
    "io_error": "the database's disk reported an I/O error",
}
#: What a client is told of a store failure a retry may cure: fixed words, whatever the
#: database or its driver said (libpq names the server's address, port and user).
STORE_AWAY = "the database is unavailable or did not answer in time; nothing was changed"


class StoreError(AgoraError):
    """The store could not commit or read.

    Attributes:
        outcome_unknown: True when a commit was in flight as it failed (the database went
            away during COMMIT, or COMMIT did not return in time): the change may or may not
            have been saved. False: the caller's command certainly had no effect.
        cause: What the disk said (`StoreCause`), or None when the failure is not the
            disk's (a lost connection, a timeout, a bad statement).
        permanent: True when retrying cannot help: the statement itself failed (a
            constraint violation, a syntax error, a missing table or column;
            `agora.store.failures`). A bug, answered as an internal error; its message is
            for the operator's log, never for a client. False: a retry may succeed.
        told: The store has logged this failure's episode already (another process held
            the write lock: one WARNING, then a count), so the lines of each call it failed
            go to DEBUG with their correlation ids.
    """

    def __init__(
        self,
        *args: object,
        outcome_unknown: bool = False,
        cause: StoreCause | None = None,
        permanent: bool = False,
        told: bool = False,
    ) -> None:
        super().__init__(*args)
        self.outcome_unknown = outcome_unknown
        self.cause = cause
        self.permanent = permanent
        self.told = told


class ActorStopped(AgoraError):
    """The actor stopped (shutdown or crash) before it could answer this command."""


#: What kind of internal failure ended a call (see `Failure`).
FailureKind = Literal["internal", "stopped", "store", "unexpected"]


@dataclass(frozen=True, slots=True)
class Failure:
    """A call that failed inside the server, as a toolset's ``shape_failure`` hook sees it.

    Attributes:
        kind: ``internal`` (the entity failed on the command or could not be loaded;
            nothing was changed), ``stopped`` (its actor stopped, e.g. at shutdown),
            ``store`` (the store could not commit or read, for a reason a retry may cure),
            ``unexpected`` (a bug: in the handler, its traceback logged under
            ``correlation_id``; or a store failure no retry can cure, such as a constraint
            violation or a missing column, logged with the database's words).
        message: Text safe to show a client; no internal detail.
        retryable: Whether the same call may succeed if made again (nothing was saved).
        correlation_id: Names the server's log line for this failure (``corr-`` + 16 hex).
        tool: The tool name the client called.
        outcome_unknown: The change may or may not have been saved (its commit was in
            flight when the store failed): the client must read the current state before
            deciding to call again (``retryable`` is then false).
        cause: Why the store refused the write (`StoreCause`: disk full, read-only, I/O
            error), already named in ``message``; None when the failure is not the disk's.
    """

    kind: FailureKind
    message: str
    retryable: bool
    correlation_id: str
    tool: str
    outcome_unknown: bool = False
    cause: StoreCause | None = None


def new_correlation_id() -> str:
    """A fresh id to name one failure in the log and in the answer (``corr-`` + 16 hex)."""
    return f"corr-{secrets.token_hex(8)}"
