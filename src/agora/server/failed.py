"""What a call that failed inside the server is answered: the failure named, logged, shaped.

`failure_of` turns what a handler raised past the toolset's own refusals (`ToolError` and
`ProtocolError` never come here) into a `Failure`: the command's entity failed
(`InternalError`), its actor stopped (`ActorStopped`), the store failed (`StoreError`), or a
bug. Each is logged once under a fresh correlation id that the client is given too. A store
failure reaches the client in fixed words (`store_words`: its message may hold the
database's address, user and the driver's text), its detail in that log line. A store
failure no retry can cure (`agora.store.failures`: a bug in SQL, a schema changed under the
server) is answered as a bug: a fixed text, not retryable, its details only in the log.
`failed_reply` words the answer, in the toolset's vocabulary when its ``shape_failure`` hook
gives one; `reply_failed` is the last resort when no reply could be built or sent (a bug
here, a value no JSON can hold), so that no call ends unanswered; `page_failure` is the same
for a page route (a chess table made from its page). No I/O here but the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from agora.errors import (
    STORE_AWAY,
    STORE_CAUSES,
    ActorStopped,
    Failure,
    FailureKind,
    StoreError,
    new_correlation_id,
)
from agora.logsafe import loggable, one_line
from agora.mcp import jsonrpc as rpc
from agora.mcp.results import tool_result
from agora.runtime.actor import InternalError
from agora.store.neutral import Busy, Conflict
from agora.web.http import Request, Response, error_page, wants_html

if TYPE_CHECKING:
    from agora.mcp.session import Invoke, Session

log = logging.getLogger("agora.server.connection")  # the operator's filters name this one

#: What a client is told of a store failure no retry can cure (the details are logged).
STORE_BUG: Final = "internal error; nothing was changed"
#: The same when a commit was in flight (`StoreError.outcome_unknown`).
STORE_UNKNOWN: Final = "the change may or may not have been saved (the database did not confirm it)"


def store_words(exc: StoreError) -> str:
    """What a client is told of ``exc`` (a store failure a retry may cure): the disk's part
    when the disk is to blame, else fixed words; the database's own words stay in the log.
    A version guard's answer (`Busy`, `Conflict`) is agora's own, worded for clients."""
    if isinstance(exc, Busy | Conflict):
        return str(exc)
    if exc.outcome_unknown:
        return STORE_UNKNOWN
    if exc.cause is not None:
        return f"{STORE_CAUSES[exc.cause]}; nothing was changed"
    return STORE_AWAY


def failure_of(inv: Invoke, exc: Exception) -> Failure:
    """The `Failure` of call ``inv`` that raised ``exc``, logged under its correlation id."""
    return _failure(f"{inv.kind} {inv.name}", inv.name, exc)


def page_failure(req: Request, exc: Exception) -> Response:
    """What a page route (``req``) that raised ``exc`` answers, logged as a call's failure
    is: the runtime's safe message when the store or an entity failed (503, with
    ``retryable``, the disk's part as ``cause`` and the correlation id: a full or read-only
    disk is the operator's to fix, not a bug), else ``internal error`` (500) with the id; a
    browser asking for the page (`wants_html`) gets the same words as a small HTML page."""
    failure = _failure(f"page {req.method} {loggable(req.path)}", req.path, exc)
    body: dict[str, Any] = {"error": failure.message, "correlation_id": failure.correlation_id}
    status = 500 if failure.kind == "unexpected" else 503
    if wants_html(req):
        return error_page(status, f"{failure.message} (correlation id {failure.correlation_id})")
    if failure.kind == "unexpected":
        return Response.json(body, 500)
    body["retryable"] = failure.retryable
    if failure.outcome_unknown:
        body["outcome_unknown"] = True
    if failure.cause is not None:
        body["cause"] = failure.cause
    return Response.json(body, 503)


def _failure(where: str, tool: str, exc: Exception) -> Failure:
    # An entity's own bug was logged with its traceback where it failed: under that id.
    correlation = getattr(exc, "correlation_id", "") or new_correlation_id()
    if isinstance(exc, (InternalError, StoreError)) and exc.permanent:  # no retry cures it
        detail = exc.detail if isinstance(exc, InternalError) else str(exc)
        log.error("%s failed: %s (correlation %s)", where, one_line(detail), correlation)
        return Failure("unexpected", STORE_BUG, False, correlation, tool)
    if isinstance(exc, (InternalError, ActorStopped, StoreError)):
        kind: FailureKind = (
            ("store" if exc.away else "internal")  # the store away: its failure, said so
            if isinstance(exc, InternalError)
            else ("stopped" if isinstance(exc, ActorStopped) else "store")
        )
        # An entity's answer is worded for clients; what the store said is its ``detail``.
        said = exc.detail if isinstance(exc, InternalError) and exc.detail else exc
        cause = getattr(exc, "cause", None)  # the disk's part, named in the message
        # A refusal the disk caused, or a write dropped while another process held the
        # write lock (``told``), is logged by the store once per episode, not per call.
        told = cause is not None or getattr(exc, "told", False)
        level = logging.DEBUG if told else logging.WARNING
        log.log(level, "%s failed: %s (correlation %s)", where, one_line(said), correlation)
        unknown = bool(getattr(exc, "outcome_unknown", False))
        # An entity's failure is already worded for clients; the store's is the database's.
        said = store_words(exc) if isinstance(exc, StoreError) else str(exc)
        retryable = not unknown and not getattr(exc, "bug", False)  # a bug fails again
        return Failure(kind, said, retryable, correlation, tool, unknown, cause)
    log.error("%s failed (correlation %s)", where, correlation, exc_info=exc)
    return Failure("unexpected", "internal error", False, correlation, tool)


def reply_failed(inv: Invoke, exc: Exception) -> dict[str, Any]:
    """The answer to call ``inv`` when building or sending its reply raised ``exc``: JSON-RPC
    -32603 ``internal error`` with a fresh correlation id, logged once with the traceback.

    The last resort of `agora.server.connection`: every call that was not cancelled gets a
    reply, since a client left without one waits forever (an in-process request) or sees
    its connection dropped (an SDK client over HTTP).
    """
    correlation = new_correlation_id()
    log.error(
        "%s %s failed while its reply was built or sent (correlation %s)",
        inv.kind,
        inv.name,
        correlation,
        exc_info=exc,
    )
    data = {"correlation_id": correlation}
    return rpc.error(inv.id, rpc.INTERNAL_ERROR, "internal error", data)


def failed_reply(session: Session, inv: Invoke, failure: Failure) -> dict[str, Any]:
    """The answer to a call that failed inside the server: in the toolset's vocabulary
    when its ``shape_failure`` hook answers, else text (or -32603 for a bug)."""
    entry = session.catalog.tool(inv.name) if inv.kind == "tool" else None
    body = entry.fail(failure) if entry is not None and entry.fail is not None else None
    retry = "; retry the call" if failure.retryable else ""
    if failure.outcome_unknown:
        retry = "; read the current state before deciding to call again"
    text = f"{failure.message}{retry} (correlation id {failure.correlation_id})"
    if body is not None:
        result = tool_result(body, error=True, text=text)
    elif failure.kind == "unexpected":
        data = {"correlation_id": failure.correlation_id}
        return rpc.error(inv.id, rpc.INTERNAL_ERROR, "internal error", data)
    else:
        result = {"content": [{"type": "text", "text": text}], "isError": True}
    return rpc.result(inv.id, session.finish(result, inv.modern))
