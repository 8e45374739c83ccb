"""One MCP session's protocol state machine, sans-io.

Feed it decoded messages with `Session.handle`; it answers what it can itself (initialize, ping,
lists, logging level, discovery, resource subscriptions) and hands the rest to the driver as
`Invoke` actions (tools/call, resources/read, prompts/get, completion/complete) or `Cancel`. The
driver runs those and turns their outcome into a reply (`agora.mcp.results`); `resource_updated`
tells it which changes a subscribed client must hear of. Both handshake revisions (initialize /
initialized) and the 2026-07-28 per-request envelope (``params._meta``, ``server/discover``,
``resultType``) are served; at 2026-07-28 resource updates come on ``subscriptions/listen``
streams (`agora.mcp.listen`), and ``resources/subscribe`` (removed there) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agora.errors import ProtocolError
from agora.mcp import declared, listen
from agora.mcp import jsonrpc as rpc
from agora.mcp.actions import Action, Answer, Cancel, Invoke, Send
from agora.mcp.catalog import Catalog, ToolEntry, page
from agora.mcp.results import tool_result

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from agora.mcp.validation import ValidationIssue

__all__ = ["Action", "Answer", "Cancel", "Invoke", "Send", "Session"]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

#: Results that carry caching directives in the 2026-07-28 revision.
CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
    }
)

DUPLICATE_ID = "duplicate request id"
#: What a 2026-07-28 request whose ``_meta`` logLevel is no log level is told (-32602).
BAD_LOG_LEVEL = f"_meta[{META_LOG_LEVEL!r}] must be one of {', '.join(LOG_LEVELS)}"
#: What a 2026-07-28 ``logging/setLevel`` is told (-32601).
SET_LEVEL_REMOVED = (
    "logging/setLevel was removed in 2026-07-28: send the minimum level with each request, "
    f"in _meta[{META_LOG_LEVEL!r}] (without it, a request gets no log messages)"
)
ALREADY_INITIALIZED = "session already initialized: initialize is sent once per session"

#: Methods the driver runs (async); everything else is answered here.
INVOKED = {
    "tools/call": "tool",
    "resources/read": "resource",
    "prompts/get": "prompt",
    "completion/complete": "complete",
}


@dataclass
class Session:
    """Protocol state of one client session."""

    catalog: Catalog
    server_info: dict[str, Any]
    protocol_version: str | None = None
    initialized: bool = False
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    log_level: str = "info"
    subscriptions: set[str] = field(default_factory=set)
    #: Ids of the requests handed to the driver as `Invoke` and not yet `ended`.
    running: set[rpc.RequestId] = field(default_factory=set)
    #: Open ``subscriptions/listen`` streams: request id -> the URIs each hears of.
    listens: dict[rpc.RequestId, list[str]] | None = None
    #: Subscribes whose check runs: request id -> URI (an unsubscribe of the URI drops them).
    _checking: dict[rpc.RequestId, str] | None = field(default=None, init=False, repr=False)

    def handle(self, msg: rpc.Message) -> list[Action]:
        """React to one message from the client.

        A request whose id is still running is refused (``duplicate request id``), as is a
        second ``initialize``: every transport answers both the same way.
        """
        if isinstance(msg, rpc.Response):
            return [Answer(msg)]
        if isinstance(msg, rpc.Notification):
            return self._notification(msg)
        if msg.id in self.running or (self.listens and msg.id in self.listens):
            return [Send(rpc.error(msg.id, rpc.INVALID_REQUEST, DUPLICATE_ID), msg.id)]
        try:
            actions = self._request(msg)
        except ProtocolError as exc:
            return [Send(rpc.error(msg.id, exc.code, exc.message, exc.data), msg.id)]
        if isinstance(actions[0], Invoke):
            self.running.add(msg.id)
        return actions

    def ended(self, rid: rpc.RequestId) -> None:
        """The driver finished (or refused to run) the `Invoke` for request ``rid``."""
        self.running.discard(rid)
        if self._checking is not None:
            self._checking.pop(rid, None)

    def _notification(self, msg: rpc.Notification) -> list[Action]:
        if msg.method == "notifications/initialized":
            if self.protocol_version is not None:
                self.initialized = True
        elif msg.method == "notifications/cancelled":
            rid = msg.params.get("requestId")
            if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                return [Cancel(rid)]
        return []  # unknown notifications are ignored, as JSON-RPC requires

    def _request(self, msg: rpc.Request) -> list[Action]:
        meta = msg.params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        modern = META_VERSION in meta
        if modern:
            self._check_modern(meta)
        elif msg.method == "initialize":
            if self.protocol_version is not None:
                raise ProtocolError(rpc.INVALID_REQUEST, ALREADY_INITIALIZED)
            return [Send(rpc.result(msg.id, self._initialize(msg.params)), msg.id)]
        elif msg.method != "ping" and self.protocol_version is None:
            raise ProtocolError(
                rpc.INVALID_REQUEST,
                "session not initialized: send initialize first, or put the 2026-07-28 "
                f"envelope in params._meta ({META_VERSION!r})",
            )
        kind = INVOKED.get(msg.method)
        if kind is not None:
            return [self._invoke(msg, kind, meta, modern)]
        if msg.method == listen.LISTEN and modern:
            found = listen.checks(self.catalog, msg.params)
            return [Invoke(msg.id, "listen", msg.method, {}, found, None, meta, modern)]
        if modern and msg.method in ("resources/subscribe", "resources/unsubscribe"):
            raise ProtocolError(rpc.METHOD_NOT_FOUND, listen.SUBSCRIBE_REMOVED)
        if msg.method == "resources/subscribe":
            return [self._subscribe(msg, meta, modern)]
        value = self._answer(msg, meta)
        cacheable = msg.method in CACHEABLE
        return [Send(rpc.result(msg.id, self.finish(value, modern, cacheable=cacheable)), msg.id)]

    def _check_modern(self, meta: dict[str, Any]) -> None:
        version = meta.get(META_VERSION)
        if not isinstance(version, str):
            raise ProtocolError(rpc.INVALID_PARAMS, f"_meta[{META_VERSION!r}] must be a string")
        if not isinstance(caps := meta.get(META_CAPABILITIES), dict):
            said = "is missing" if caps is None else "must hold an object in"
            raise ProtocolError(rpc.INVALID_PARAMS, f"_meta {said} {META_CAPABILITIES!r}")
        if version not in MODERN_VERSIONS:
            raise ProtocolError(
                rpc.UNSUPPORTED_PROTOCOL_VERSION,
                f"unsupported protocol version {version!r}",
                {"supported": list(MODERN_VERSIONS), "requested": version},
            )
        if META_LOG_LEVEL in meta and meta[META_LOG_LEVEL] not in LOG_LEVELS:
            raise ProtocolError(rpc.INVALID_PARAMS, BAD_LOG_LEVEL, {"allowed": list(LOG_LEVELS)})

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        if not isinstance(asked, str):
            said = "needs" if asked is None else "needs a string as"
            raise ProtocolError(rpc.INVALID_PARAMS, f"initialize {said} params.protocolVersion")
        self.client_capabilities = declared.capabilities(params)  # (small, or refused)
        self.client_info = declared.client_info(params)
        self.protocol_version = asked if asked in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
        out: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "capabilities": self.catalog.capabilities(),
            "serverInfo": self.server_info,
        }
        if self.catalog.instructions:
            out["instructions"] = self.catalog.instructions
        return out

    def _answer(self, msg: rpc.Request, meta: dict[str, Any]) -> dict[str, Any]:
        params, cat = msg.params, self.catalog
        match msg.method:
            case "ping":
                return {}
            case "server/discover":
                out: dict[str, Any] = {
                    "supportedVersions": list(MODERN_VERSIONS),
                    "capabilities": cat.capabilities(),
                    "serverInfo": self.server_info,
                }
                if cat.instructions:
                    out["instructions"] = cat.instructions
                return out
            case "tools/list":
                tools, nxt = self._page(cat.listed_tools(), params)
                return _with_cursor({"tools": [t.listing() for t in tools]}, nxt)
            case "resources/list":
                items, nxt = self._page([r for r in cat.resources if not r.template], params)
                return _with_cursor({"resources": [r.listing() for r in items]}, nxt)
            case "resources/templates/list":
                items, nxt = self._page([r for r in cat.resources if r.template], params)
                return _with_cursor({"resourceTemplates": [r.listing() for r in items]}, nxt)
            case "prompts/list":
                prompts, nxt = self._page(list(cat.prompts), params)
                return _with_cursor({"prompts": [p.listing() for p in prompts]}, nxt)
            case "resources/unsubscribe":
                return self._unsubscribe(self._subscription_uri(params))
            case "logging/setLevel":
                if META_VERSION in meta:  # removed at 2026-07-28: no session to hold it
                    raise ProtocolError(rpc.METHOD_NOT_FOUND, SET_LEVEL_REMOVED)
                level = params.get("level")
                if level not in LOG_LEVELS:
                    raise ProtocolError(rpc.INVALID_PARAMS, f"level must be one of {LOG_LEVELS}")
                self.log_level = level
                return {}
        raise ProtocolError(rpc.METHOD_NOT_FOUND, f"method not found: {msg.method}")

    def _unsubscribe(self, uri: str) -> dict[str, Any]:
        self.subscriptions.discard(uri)
        if self._checking:  # a subscribe still checking must not outlive this
            for rid in [r for r, u in self._checking.items() if u == uri]:
                del self._checking[rid]
        return {}

    def _subscription_uri(self, params: dict[str, Any]) -> str:
        if not self.catalog.resources:
            raise ProtocolError(rpc.METHOD_NOT_FOUND, "resources are not offered here")
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise ProtocolError(rpc.INVALID_PARAMS, "params.uri must be a string")
        return uri

    def _subscribe(self, msg: rpc.Request, meta: dict[str, Any], modern: bool) -> Send | Invoke:
        """A resources/subscribe: answered here, or, for a resource with a ``check`` (who may
        see it, whether it exists), an `Invoke` of kind ``subscribe`` that runs the check;
        the driver then calls `subscribed` (or answers the check's error, as a read would)."""
        uri = self._subscription_uri(msg.params)
        found = self.catalog.resource(uri)
        if found is None:
            raise rpc.resource_not_found(uri, modern)
        entry, args = found
        if entry.check is not None:
            if self._checking is None:
                self._checking = {}
            self._checking[msg.id] = uri
            return Invoke(msg.id, "subscribe", uri, args, entry.check, None, meta, modern)
        return Send(rpc.result(msg.id, self.finish(self.subscribed(uri), modern)), msg.id)

    def subscribed(self, uri: str, rid: rpc.RequestId | None = None) -> dict[str, Any]:
        """Subscribe to ``uri`` (the check of subscribe ``rid``, if any, passed); the result.
        If an unsubscribe of ``uri`` came while that check ran, that later word holds."""
        if rid is None or (self._checking is not None and self._checking.pop(rid, None) == uri):
            self.subscriptions.add(uri)
        return {}

    def resource_updated(self, uri: str) -> dict[str, Any] | None:
        """The notifications/resources/updated message for ``uri`` (a resource that changed),
        or None when this session did not subscribe to it."""
        if uri not in self.subscriptions:
            return None
        return rpc.notification("notifications/resources/updated", {"uri": uri})

    def watched(self) -> Iterable[str]:
        """Every URI this session hears of: its subscriptions and its listen streams'."""
        if not self.listens:
            return self.subscriptions
        return self.subscriptions.union(*self.listens.values())

    def _page(self, items: list[Any], params: dict[str, Any]) -> tuple[list[Any], str | None]:
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ProtocolError(rpc.INVALID_PARAMS, "cursor must be a string")
        try:
            return page(items, cursor, self.catalog.page_size)
        except ValueError:
            raise ProtocolError(rpc.INVALID_PARAMS, "invalid cursor") from None

    def _invoke(
        self, msg: rpc.Request, kind: str, meta: dict[str, Any], modern: bool
    ) -> Invoke | Send:
        params = msg.params
        token = meta.get("progressToken")
        if not isinstance(token, (str, int)) or isinstance(token, bool):
            token = None
        if kind == "complete":
            if self.catalog.completion is None:
                raise ProtocolError(rpc.METHOD_NOT_FOUND, "completions are not offered here")
            return Invoke(
                msg.id, kind, "complete", params, self.catalog.completion, token, meta, modern
            )
        field_name = "name" if kind in ("tool", "prompt") else "uri"
        name = params.get(field_name)
        if not isinstance(name, str) or not name:
            raise ProtocolError(rpc.INVALID_PARAMS, f"params.{field_name} must be a string")
        args = params.get("arguments")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ProtocolError(rpc.INVALID_PARAMS, "params.arguments must be an object")
        if kind == "tool":
            tool = self.catalog.tool(name)
            if tool is None:
                raise ProtocolError(rpc.INVALID_PARAMS, self.catalog.unknown_tool(name))
            problems = tool.check(args)
            if problems and tool.refuse is not None:  # refused by a call that reads state
                return Invoke(msg.id, kind, name, args, tool.refuse(problems), token, meta, modern)
            if problems:
                rejected = self._rejected(tool, problems, args, modern)
                return Send(rpc.result(msg.id, rejected), msg.id)
            answers = params.get("inputResponses") if modern else None
            if answers is not None and not isinstance(answers, dict):
                raise ProtocolError(rpc.INVALID_PARAMS, "params.inputResponses must be an object")
            return Invoke(msg.id, kind, name, args, tool.target, token, meta, modern, answers)
        target, args = self._target(kind, name, args, modern)
        return Invoke(msg.id, kind, name, args, target, token, meta, modern)

    def _rejected(
        self, tool: ToolEntry, problems: Sequence[ValidationIssue], args: Any, modern: bool
    ) -> dict[str, Any]:
        if tool.reject is not None:  # the toolset's own body, mirrored as JSON text
            return self.finish(tool_result(tool.reject(problems, args), error=True), modern)
        text = "invalid arguments: " + "; ".join(p.describe() for p in problems)
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        return self.finish(result, modern)

    def _target(
        self, kind: str, name: str, args: dict[str, Any], modern: bool
    ) -> tuple[Any, dict[str, Any]]:
        """The target of a prompts/get or resources/read, and the arguments it gets."""
        if kind == "prompt":
            prompt = self.catalog.prompt(name)
            if prompt is None:
                raise ProtocolError(rpc.INVALID_PARAMS, f"unknown prompt: {name}")
            problems = prompt.problems(args)
            if problems:
                raise ProtocolError(rpc.INVALID_PARAMS, "; ".join(problems))
            return prompt.target, args
        found = self.catalog.resource(name)
        if found is None:
            raise rpc.resource_not_found(name, modern)
        return found[0].target, found[1]

    def finish(
        self, value: dict[str, Any], modern: bool, *, cacheable: bool = False
    ) -> dict[str, Any]:
        """Stamp a result for the 2026-07-28 envelope when the request used it.

        Cacheable results (lists, discovery, resource reads) say ``ttlMs: 0``: agora's
        answers can change with every call, so clients must not reuse them.
        """
        if modern:
            value = dict(value)
            value.setdefault("resultType", "complete")
            if cacheable:
                value.setdefault("ttlMs", 0)
                value.setdefault("cacheScope", "private")
            value.setdefault("_meta", {})[META_SERVER_INFO] = self.server_info
        return value

    def wants_log(self, level: str, meta: dict[str, Any] | None = None) -> bool:
        """Whether a notifications/message at ``level`` passes the client's minimum level.

        Args:
            level: The message's level.
            meta: The ``_meta`` of a 2026-07-28 request (None after the handshake): its
                ``logLevel`` entry sets the minimum for that request alone, and a request
                without one gets no log messages (there is no session to hold a
                ``logging/setLevel``). A handshake session's level is its setLevel's.

        Returns:
            True when the message should be sent.
        """
        floor: Any
        if meta is None:
            floor = self.log_level
        else:
            floor = meta.get(META_LOG_LEVEL)
            if floor not in LOG_LEVELS:  # absent: the client did not opt in
                return False
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(floor)


def _with_cursor(value: dict[str, Any], cursor: str | None) -> dict[str, Any]:
    if cursor is not None:
        value["nextCursor"] = cursor
    return value
