"""The interface between the server and a toolset.

A toolset is a name, a contract (tool names, descriptions and schemas from `contracts/`),
async handlers keyed by tool name, the migrations of its tables, and optionally HTTP routes
for human pages. Toolsets know nothing about transports; handlers receive a `ToolCall` and
return a JSON-able dict (the structured result) or raise `agora.errors.ToolError`.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agora.errors import Failure, ProtocolError
from agora.identity import Principal
from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import ResourceEntry
from agora.mcp.guard import MAX_DEPTH, MAX_NODES
from agora.runtime.hooks import handler_problem, shown_name
from agora.store.migrations import Migration
from agora.web.http import Route

if TYPE_CHECKING:
    from agora.mcp.validation import ValidationIssue
    from agora.runtime.background import BackgroundTask
    from agora.runtime.registry import Runtime
    from agora.toolsets.options import OptionsCheck, OptionSpec

# Principal, Migration and Route live in their own layers (identity, store, web), and
# handler_problem and shown_name in the runtime (its `periodic` checks its step with them);
# they are re-exported here because toolsets have always imported them from this module.
__all__ = [
    "ArgumentLimits",
    "Failure",
    "Handler",
    "Migration",
    "Principal",
    "ReadResource",
    "Route",
    "ToolCall",
    "Toolset",
    "handler_problem",
    "hook_problems",
    "resource",
    "shown_name",
]


ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
LogFn = Callable[[str, Any], Awaitable[None]]
UpdatedFn = Callable[[str], Awaitable[None]]


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def _no_log(level: str, data: Any) -> None:
    return None


def _no_close() -> None:
    return None


async def _no_update(uri: str) -> None:
    return None


#: The `ToolCall.endpoint` key naming, comma-separated, the query parameters of the URL that
#: some toolset's ``endpoint_query`` reads but this endpoint ignores (``/mcp?token=...``).
IGNORED_QUERY: Final = "ignored_query"


@dataclass(slots=True)
class ToolCall:
    """One tools/call as a handler sees it.

    Attributes:
        tool: The canonical or alias name the client called.
        args: Arguments, already validated against the tool's inputSchema.
        principal: The authenticated caller.
        endpoint: Path parameters of the endpoint the client connected to, e.g.
            ``{"table": "default"}`` for ``/mcp/chess``; `IGNORED_QUERY` names the query
            parameters the URL carried that another endpoint reads but this one ignores
            (``token`` on ``/mcp``), so that a tool can say where to pass them.
        runtime: The actor registry, store and clock.
        progress: Report progress (sent only if the client asked with a progressToken).
        log: Send a notifications/message at a level (filtered by logging/setLevel, or at
            2026-07-28 by the request's ``_meta`` logLevel: none without one).
        meta: The request's ``_meta`` object, if any.
        client: Sends server-to-client requests (sampling, elicitation) on this call's
            stream; an ``agora.server.channel.ClientChannel`` when available.
        close_stream: End the transport stream carrying this call's messages without ending
            the call (Streamable HTTP: the client resumes with ``Last-Event-ID``; a no-op
            on transports without resumable streams). Later messages are buffered.
        resource_updated: Tell this session that the resource at a URI changed; sends
            ``notifications/resources/updated`` if the client subscribed to it.
        connection: The connection (MCP session) the call arrived on: the same object for
            every call of one session, e.g. a key for per-connection limits; None when a
            handler is called directly.
        local_client: Whether the client is the process that started this server or runs
            inside it (stdio, `agora.server.embed.Server.client`): its files are the server's
            files, so what it says of them (MCP roots) may be trusted. False on WebSocket and
            HTTP, where the client may be anyone who can reach the port.
    """

    tool: str
    args: dict[str, Any]
    principal: Principal
    runtime: Runtime
    endpoint: Mapping[str, str] = field(default_factory=dict)
    progress: ProgressFn = _no_progress
    log: LogFn = _no_log
    meta: Mapping[str, Any] = field(default_factory=dict)
    client: Any = None
    close_stream: Callable[[], None] = _no_close
    resource_updated: UpdatedFn = _no_update
    connection: object | None = None
    local_client: bool = False


Handler = Callable[[ToolCall], Awaitable[dict[str, Any]]]
#: Reads one resource: ``call.tool`` is the URI, ``call.args`` the template variables.
ReadResource = Callable[[ToolCall], Awaitable[Any]]


def hook_problems(toolset: Toolset) -> list[str]:
    """What is wrong with the hooks ``toolset`` gives the server besides its tool handlers
    (`handler_problem`, with what each is called with), one sentence each naming the hook."""
    body = "dict[str, Any]"
    hooks: list[tuple[str, object, tuple[str, ...], str]] = [
        ("completion", toolset.completion, ("the ToolCall",), body),
        ("reject_call", toolset.reject_call, ("the ToolCall", "the problems"), body),
        ("on_start", toolset.on_start, ("the Runtime",), "None"),
    ]
    hooks += [
        (f"background task {i}", task, ("the Runtime",), "None")
        for i, task in enumerate(toolset.background)
    ]
    out = []
    for what, hook, takes, returns in hooks:
        problem = None if hook is None else handler_problem(hook, takes, returns)
        if problem is not None:
            out.append(f"its {what} ({shown_name(hook)}) {problem}")
    return out


def resource(
    uri: str,
    name: str,
    read: ReadResource,
    *,
    description: str = "",
    mime_type: str = "application/json",
    check: ReadResource | None = None,
) -> ResourceEntry:
    """A resource a toolset serves, for `Toolset.resources`.

    Args:
        uri: The URI, or a template whose ``{name}`` parts each match one path segment
            (``debate://topic/{topic}``); clients subscribe to concrete URIs.
        name: Its name in resources/list.
        read: ``async def read(call) -> value``: a str is sent as text, bytes as a base64
            blob, anything else as JSON text. A `LookupError` (say, the entity does not
            exist) answers "Resource not found".
        description: Shown in the listing.
        mime_type: Of the contents (JSON by default).
        check: ``async def check(call) -> None``, run before a resources/subscribe to the
            URI is accepted: a `LookupError` refuses it with the very error a read gets
            ("Resource not found"). Without it any URI the entry matches may be subscribed
            to, even one that does not exist yet.

    Returns:
        The catalog entry; listed as a template when ``uri`` has ``{...}`` parts.
    """

    for what, function, returns in (("read", read, "Any"), ("check", check, "None")):
        problem = None if function is None else handler_problem(function, returns=returns)
        if problem is not None:
            raise ValueError(
                f"resource {uri!r}: its {what} function {problem}; it is"
                f" `async def {what}(call: ToolCall)`"
            )

    def not_found(call: ToolCall) -> ProtocolError:
        return ProtocolError(rpc.RESOURCE_NOT_FOUND, "Resource not found", {"uri": call.tool})

    async def target(call: ToolCall) -> dict[str, Any]:
        try:
            value = await read(call)
        except LookupError:
            raise not_found(call) from None
        body: dict[str, Any] = {"uri": call.tool, "mimeType": mime_type}
        if isinstance(value, str):
            body["text"] = value
        elif isinstance(value, bytes):
            body["blob"] = base64.b64encode(value).decode()
        else:
            body["text"] = rpc.encode(value).decode()
        return {"contents": [body]}

    subscribable = None
    if check is not None:
        confirm = check

        async def subscribable(call: ToolCall) -> dict[str, Any]:
            try:
                await confirm(call)
            except LookupError:
                raise not_found(call) from None
            return {}

    return ResourceEntry(
        uri, name, description, mime_type, template="{" in uri, target=target, check=subscribable
    )


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Size and depth limits on one toolset's tool arguments (from its contract).

    Attributes:
        max_depth: Deepest nesting of objects and arrays (the arguments object is level 1).
        max_nodes: Most values in total (object members plus array items).
        max_bytes: Largest size of the arguments as compact JSON; 0 for none of its own (the
            transports' 1,048,576-byte message limit still applies).
    """

    max_depth: int = MAX_DEPTH
    max_nodes: int = MAX_NODES
    max_bytes: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.max_depth <= MAX_DEPTH:
            # A toolset's limit stays well below the transports' hard ceiling
            # (`agora.mcp.jsonrpc.MAX_PARAMS_DEPTH`; the arguments sit at params' level 2),
            # so arguments just past the limit still reach the toolset, which refuses them.
            raise ValueError(f"max_depth must be 1..{MAX_DEPTH}, not {self.max_depth}")


@dataclass
class Toolset:
    """A named set of tools served at ``/mcp/<name>`` and listed in ``/mcp``."""

    name: str
    handlers: Mapping[str, Handler]
    migrations: Sequence[Migration] = ()
    routes: Sequence[Route] = ()
    #: Pages a person may start from, listed on the server's start page (``/``): (path, what
    #: it shows), e.g. ``("/board", "...")``. Pages reached only by a link (a card, a table)
    #: are not listed.
    pages: Sequence[tuple[str, str]] = ()
    #: Tool names that are aliases of a canonical tool of `tools`: alias -> canonical.
    #: Answered like that tool, never listed. (A contract file declares its own.)
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: Extra endpoint path segment name, e.g. "table" makes /mcp/chess/<table> valid.
    endpoint_param: str | None = None
    #: Query parameters of the endpoint URL handed to handlers in ``ToolCall.endpoint``,
    #: e.g. ("token",) makes /mcp/chess/<table>?token=... a credential the toolset checks.
    endpoint_query: Sequence[str] = ()
    #: Called once when the server starts (inside its nursery), e.g. to print the human URL:
    #: ``async def on_start(runtime) -> None``, after the store is migrated and the listener
    #: accepts, before the background tasks and before `open_server` yields. What it raises
    #: stops the start (raised by `open_server`, with a note naming the toolset).
    on_start: Callable[[Runtime], Awaitable[None]] | None = None
    #: Tasks the server runs in its nursery from start (after ``on_start``) to shutdown
    #: (cancelled after the grace period): sweeps, phase timeouts, retention. Each is
    #: ``async def task(runtime)``; `agora.runtime.background.periodic` repeats a step.
    #: An exception is logged and ends that task only.
    background: Sequence[BackgroundTask] = ()
    #: Contract file name under contracts/ (default: the toolset name); None for a toolset
    #: whose tools are defined in code (`tools`), like the conformance fixtures.
    contract: str | None = ""
    #: Tools defined in code, as tools/list entries (name, description, inputSchema, ...).
    tools: Sequence[dict[str, Any]] = ()
    #: Resources served by resources/list, resources/templates/list, resources/read and
    #: resources/subscribe: build them with `resource` (or, for fixtures, catalog entries
    #: whose target takes a ToolCall and returns the MCP result).
    resources: Sequence[ResourceEntry] = ()
    #: Prompts served by prompts/list and prompts/get: `agora.mcp.catalog.PromptEntry`
    #: items, each with its MCP arguments and a ``target``, ``async def (call) -> dict``
    #: that gets them as ``call.args`` (checked: required ones given, all strings) and
    #: returns the GetPromptResult (``{"messages": [...]}``).
    prompts: Sequence[Any] = ()
    #: Answers completion/complete for its prompts' arguments and its resource templates'
    #: variables: ``call.args`` is the request's params (``ref``, ``argument``, ``context``),
    #: the return value the result (``{"completion": {"values", "total", "hasMore"}}``).
    #: None: the method is refused (-32601). At ``/mcp`` the first toolset's that has one.
    completion: Callable[[ToolCall], Awaitable[dict[str, Any]]] | None = None
    #: Builds the structured body of an invalid-arguments error in the toolset's own
    #: vocabulary (e.g. the chamber envelope) from the problems found, each a
    #: `ValidationIssue` with ``path`` (keys and indexes), ``keyword`` (the JSON Schema
    #: keyword broken, or maxDepth/maxNodes/maxBytes), ``detail`` and ``describe()``.
    #: None sends the problems as text only.
    reject_issues: Callable[[Sequence[ValidationIssue]], dict[str, Any]] | None = None
    #: The same body built by a call of its own, for a refusal that reports the entity's
    #: state (the chess table's turn and legal moves): ``async def reject(call, issues)``
    #: may read the entity (never change it) and returns the body. Used instead of
    #: `reject_issues` when set; the refused call then counts as a call in flight.
    reject_call: (
        Callable[[ToolCall, Sequence[ValidationIssue]], Awaitable[dict[str, Any]]] | None
    ) = None
    #: Older form of `reject_issues` that gets the problems as sentences
    #: (``argument 'from': must match ...``); used only when `reject_issues` is None.
    reject_arguments: Callable[[list[str]], dict[str, Any]] | None = None
    #: Told of each call refused for its arguments before any handler ran, with a body from
    #: `reject_issues` or `reject_arguments`: ``rejected(tool, arguments, body)``, the
    #: arguments as sent. For a log line (the router logs its writes' refusals with their
    #: correlation_id): it runs on the event loop as the refusal is answered, so it must not
    #: block; what it raises is logged, and the refusal answered all the same.
    rejected: Callable[[str, dict[str, Any], dict[str, Any]], None] | None = None
    #: Shapes an internal failure of one of its tools (`agora.errors.Failure`: kind, safe
    #: message, retryable, correlation id, tool) into the structured body of an ``isError``
    #: result in the toolset's vocabulary. The body must validate against the tool's
    #: outputSchema (the server checks, logs and falls back to text if it does not).
    #: None: text only, and an unexpected exception is JSON-RPC -32603 with the id.
    shape_failure: Callable[[Failure], dict[str, Any]] | None = None
    #: The JSON Schema a shaped failure must satisfy instead of the tool's outputSchema, for
    #: a toolset whose ``isError`` bodies lie outside its strict outputSchemas (the router's
    #: refusals do). The server still checks, logs and falls back to text on a mismatch.
    failure_schema: dict[str, Any] | None = None
    #: Limits on the arguments of every tool of this toolset, checked before the schema.
    argument_limits: ArgumentLimits = field(default_factory=lambda: ArgumentLimits())
    #: The keys of its ``[options.<name>]`` table it reads, each with the type of its value
    #: (`agora.toolsets.options.OptionSpec`): the server refuses to start on any other key
    #: or on a value of another type. None: the table is passed on unchecked; ``{}``: the
    #: toolset takes no options.
    options: OptionSpec | None = None
    #: Checks the values of that table at start, once their types passed: ranges, files that
    #: must load (`agora.toolsets.options.OptionsCheck`); a `ValueError` it raises refuses
    #: the start with its message, before anything opens. None: nothing more is checked.
    options_check: OptionsCheck | None = None
    #: What a model should know before its first call (the ``instructions`` of the
    #: initialize result and of ``server/discover`` at ``/mcp/<name>``; at ``/mcp`` each
    #: toolset's, under its name): how to fill what no host supplies, the first call. A
    #: client may show it to the model or not; the tools must not depend on it.
    instructions: str | None = None
    #: Its tools' descriptions as this server lists them, where they depend on its
    #: ``[options.<name>]`` table (a tool that cannot run as configured says so first):
    #: ``describe(table) -> {tool name: description}``, called once at start, after
    #: `options_check` passed; a tool left out keeps the description its contract or `tools`
    #: gives (an alias is listed as its tool). None: the descriptions depend on no option.
    describe: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None
