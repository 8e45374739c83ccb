"""``subscriptions/listen`` (2026-07-28, SEP-2575): the wire side of a listen stream, sans-io.

At 2026-07-28 a client hears of changes only on a listen stream: its ``subscriptions/listen``
request stays open, the first message on it is ``notifications/subscriptions/acknowledged``
with the part of the requested filter the server honours, every later notification carries
the listen request's id under ``_meta[SUBSCRIPTION_ID]``, and a graceful end (shutdown) is the
request's result. agora's tool, prompt and resource lists never change, so only
``resourceSubscriptions`` is honoured; the list-changed kinds are left out of the
acknowledgement, and never sent.

Each URI passes the checks ``resources/subscribe`` applies: it must name a resource of the
catalog, and a resource with a ``check`` runs it. A URI that fails refuses the whole listen,
before the acknowledgement, with the error a subscribe would get (-32602, not the -32002 that
2026-07-28 removed): the client learns which URI and why (an omitted URI would look like one
the server merely ignores).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc

if TYPE_CHECKING:
    from agora.mcp.catalog import Catalog

LISTEN = "subscriptions/listen"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: What a 2026-07-28 ``resources/subscribe`` or ``resources/unsubscribe`` is told (-32601).
SUBSCRIBE_REMOVED = (
    "resources/subscribe and resources/unsubscribe were removed in 2026-07-28: "
    "use subscriptions/listen with params.notifications.resourceSubscriptions"
)


@dataclass(slots=True)
class ListenChecks:
    """The `Invoke` target of a listen: runs each requested resource's ``check`` in turn
    (with the URI as ``call.tool`` and its template variables as ``call.args``, as for a
    subscribe); the first that raises refuses the listen."""

    uris: list[str]
    checks: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)

    async def __call__(self, call: Any) -> dict[str, Any]:
        for uri, args, check in self.checks:
            call.tool, call.args = uri, args
            await check(call)
        return {}


def checks(catalog: Catalog, params: dict[str, Any]) -> ListenChecks:
    """The URIs a listen request asks to hear of, and the checks they need.

    Raises:
        ProtocolError: malformed ``params.notifications`` (-32602), or a URI that names no
            resource of the catalog (-32602 "Resource not found": 2026-07-28 removed -32002).
    """
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise ProtocolError(rpc.INVALID_PARAMS, "params.notifications must be an object")
    uris = wanted.get("resourceSubscriptions", [])
    if not isinstance(uris, list) or not all(isinstance(u, str) and u for u in uris):
        raise ProtocolError(
            rpc.INVALID_PARAMS, "notifications.resourceSubscriptions must be a list of URIs"
        )
    out = ListenChecks(list(dict.fromkeys(uris)))
    for uri in out.uris:
        found = catalog.resource(uri)
        if found is None:
            raise rpc.resource_not_found(uri, modern=True)
        entry, args = found
        if entry.check is not None:
            out.checks.append((uri, args, entry.check))
    return out


def acknowledged(rid: rpc.RequestId, uris: list[str]) -> dict[str, Any]:
    """The first message of listen ``rid``'s stream: the filter it honours."""
    honoured: dict[str, Any] = {"resourceSubscriptions": uris} if uris else {}
    params = {"notifications": honoured, "_meta": {SUBSCRIPTION_ID: rid}}
    return rpc.notification(ACKNOWLEDGED, params)


def updated(rid: rpc.RequestId, uri: str) -> dict[str, Any]:
    """notifications/resources/updated for ``uri``, on listen ``rid``'s stream."""
    params = {"uri": uri, "_meta": {SUBSCRIPTION_ID: rid}}
    return rpc.notification("notifications/resources/updated", params)


def ended(rid: rpc.RequestId) -> dict[str, Any]:
    """The result that ends listen ``rid`` gracefully (``Session.finish`` stamps it)."""
    return {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: rid}}
