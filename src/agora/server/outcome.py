"""Turning a call's outcome into its JSON-RPC reply, for `agora.server.connection.Connection`.

This is where a handler's value or exception becomes the reply: a tool's result, a resource
or prompt, a subscribe whose check passed, a listen whose checks passed (its first message,
the acknowledgement, rather than a result: the stream stays open), or the error each failure
is answered with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.errors import InputRequired, ProtocolError, RequestRefused, ToolError
from agora.mcp import jsonrpc as rpc
from agora.mcp import listen
from agora.mcp.results import RawResult, check_raw, tool_reply, tool_result
from agora.server.failed import failed_reply, failure_of, reply_failed

if TYPE_CHECKING:
    from agora.mcp.session import Invoke
    from agora.server.connection import Connection


def outcome(conn: Connection, inv: Invoke, value: Any, error: Exception | None) -> dict[str, Any]:
    """The reply to a call that returned ``value`` or raised ``error``; never raises.

    A group of exceptions (a handler's nursery) whose leaves are all `ToolError`s is
    answered as the first of them (`ungrouped`), as if the handler had raised it.

    What fails while the reply is built (a `ToolError` body no JSON can hold, a bug in
    wording a failure) is answered too, as -32603 (`reply_failed`): a call that ends
    without a reply leaves its client waiting forever.
    """
    try:
        try:
            if error is not None:
                raise ungrouped(error)
            if inv.kind == "tool":
                if type(value) is RawResult:
                    entry = conn.session.catalog.tool(inv.name)
                    check_raw(value, inv.name, entry.output_schema if entry else None)
                return tool_reply(conn.session, inv.id, value, inv.modern)
            if inv.kind == "listen":  # every check passed
                return listening(conn, inv)
            if inv.kind == "subscribe":  # its check passed: subscribe, and tell the hub
                value = conn.session.subscribed(inv.name, inv.id)
                conn.app.runtime.resources.watch(conn, conn.session.watched())
            cacheable = inv.kind == "resource"
            result = conn.session.finish(value, inv.modern, cacheable=cacheable)
            return rpc.result(inv.id, result)
        except ToolError as exc:
            result = tool_result(exc.body, error=True, text=exc.text)
            return rpc.result(inv.id, conn.session.finish(result, inv.modern))
        except InputRequired as exc:  # 2026-07-28 only: see `ClientChannel.request`
            asked = {"resultType": "input_required", "inputRequests": exc.requests}
            return rpc.result(inv.id, conn.session.finish(asked, inv.modern))
        except (ProtocolError, RequestRefused) as exc:
            code = exc.code
            if code == rpc.RESOURCE_NOT_FOUND and inv.modern:  # removed at 2026-07-28
                code = rpc.INVALID_PARAMS
            return rpc.error(inv.id, code, exc.message, exc.data)
        except Exception as exc:  # the entity, its actor, the store, or a bug
            return failed_reply(conn.session, inv, failure_of(inv, exc))
    except Exception as exc:  # (zero cost until it happens: no frame more per call)
        return reply_failed(inv, exc)
    finally:
        # `raise error` put this frame in the error's traceback: let go of the error, else
        # the two make a reference cycle per failed call, which `agora serve`'s collector
        # policy (`agora.server.heap`) would keep frozen until its next thaw.
        del error


def ungrouped(error: Exception) -> Exception:
    """``error``, or the first `ToolError` of it if it is a group whose every leaf is one:
    Trio's nurseries group what their tasks raise, so a handler that fans out (a nursery of
    checks) and refuses from one task raises its `ToolError` grouped."""
    if not isinstance(error, ExceptionGroup):
        return error
    refusals, rest = error.split(ToolError)
    if refusals is None or rest is not None:
        return error
    first: Exception = refusals
    while isinstance(first, ExceptionGroup):
        first = first.exceptions[0]
    return first


def listening(conn: Connection, inv: Invoke) -> dict[str, Any]:
    """Open listen ``inv`` on ``conn`` (its checks passed); its acknowledgement.

    A session holds at most ``max_in_flight`` listen streams (the cap of its calls in
    flight): over HTTP/1.1, where a listen holds its TCP connection, ``max_connections``
    bounds them first.
    """
    session, rid = conn.session, inv.id
    listens = session.listens
    if listens is None:
        listens = session.listens = {}
    limit = conn.app.config.max_in_flight
    if len(listens) >= limit:
        message = f"too many listen streams (at most {limit}); end one, then listen again"
        data = {"max_in_flight": limit, "retryable": True}
        return rpc.error(rid, rpc.TOO_MANY_IN_FLIGHT, message, data)
    uris = inv.target.uris
    listens[rid] = uris
    conn.app.listening.add(conn)
    conn.app.runtime.resources.watch(conn, session.watched())
    return listen.acknowledged(rid, uris)
