"""The application: enabled toolsets, one catalog per endpoint, identity, web routes.

`App` is transport-free: transports ask it which catalog serves a path, who a bearer token
belongs to, and which route answers a plain HTTP request. It also counts calls in flight so
shutdown can wait for them, and says when shutdown began (`App.draining`) so that connections
refuse new calls.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import trio

from agora import __version__
from agora.errors import ToolError
from agora.mcp.catalog import Catalog, Rejection, ToolEntry
from agora.mcp.session import Session
from agora.runtime.background import supervise
from agora.toolsets.base import handler_problem, hook_problems, shown_name

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from agora.config import Config
    from agora.errors import Failure
    from agora.identity import Principal
    from agora.mcp.validation import ValidationIssue
    from agora.runtime.registry import Runtime
    from agora.toolsets.base import Handler, ToolCall, Toolset
    from agora.web.http import Route

log = logging.getLogger(__name__)

SERVER_INFO = {"name": "agora", "title": "agora", "version": __version__}

#: Toolsets implemented in this build, in listing order.
IMPLEMENTED = ("chamber", "chess", "router", "debate")


def load_toolsets(names: Sequence[str], *, conformance: bool = False) -> list[Toolset]:
    """Import and build the named toolsets (all implemented ones when ``names`` is empty).

    Raises:
        ValueError: if a named toolset is not implemented in this build.
    """
    wanted = list(names) or list(IMPLEMENTED)
    if conformance and "conformance" not in wanted:
        wanted.append("conformance")
    out = []
    for name in wanted:
        if name not in (*IMPLEMENTED, "conformance"):
            raise ValueError(f"toolset {name!r} is not implemented in this build")
        module = importlib.import_module(f"agora.toolsets.{name}")
        out.append(module.toolset())
    return out


def tool_entries(toolset: Toolset) -> list[ToolEntry]:
    """Catalog entries for a toolset's tools: from its contract, or defined in code.

    Raises:
        ValueError: a hook of the toolset cannot be called as the server calls it
            (`agora.toolsets.base.hook_problems`), or see `_entry`.
    """
    problems = hook_problems(toolset)
    if problems:
        raise ValueError(f"toolset {toolset.name}: {'; '.join(problems)}")
    entries: list[ToolEntry] = []
    if toolset.contract is None:
        return [_entry(spec, toolset, spec["name"]) for spec in toolset.tools]
    from agora.mcp.contracts import load_contract

    contract = load_contract(toolset.contract or toolset.name)
    for tool in contract.tools.values():
        listing = tool.to_mcp()
        entries.append(_entry(listing, toolset, tool.name))
        entries.extend(
            _entry(listing, toolset, alias, alias_of=tool.name) for alias in tool.aliases
        )
    return entries


def _entry(
    spec: dict[str, Any], toolset: Toolset, name: str, alias_of: str | None = None
) -> ToolEntry:
    from agora.mcp.dialects import SchemaError
    from agora.mcp.validation import compile_validator

    handler = toolset.handlers.get(name)
    if handler is None:
        raise ValueError(f"toolset {toolset.name} has no handler for tool {name!r}")
    problem = handler_problem(handler)
    if problem is not None:
        raise ValueError(
            f"toolset {toolset.name}: the handler of tool {name!r} ({shown_name(handler)})"
            f" {problem};"
            " a handler is `async def handler(call: ToolCall) -> dict`"
        )
    if "inputSchema" not in spec:
        raise ValueError(f"toolset {toolset.name}: tool {name!r} has no inputSchema")
    limits = toolset.argument_limits
    try:
        validator = compile_validator(
            spec["inputSchema"],
            max_depth=limits.max_depth,
            max_nodes=limits.max_nodes,
            max_bytes=limits.max_bytes,
            refuse_nul=True,
        )
    except SchemaError as exc:
        raise ValueError(
            f"toolset {toolset.name}: tool {name!r} has an inputSchema that cannot be"
            f" compiled: {exc}"
        ) from exc
    return ToolEntry(
        name=name,
        description=spec.get("description", ""),
        input_schema=spec["inputSchema"],
        output_schema=spec.get("outputSchema"),
        annotations=spec.get("annotations") or None,
        title=spec.get("title"),
        check=validator.errors,
        target=handler,
        alias_of=alias_of,
        reject=_rejection(toolset),
        refuse=_refusal(toolset),
        fail=_failure_shaper(toolset, name, spec.get("outputSchema")),
    )


def _rejection(toolset: Toolset) -> Rejection | None:
    if toolset.reject_issues is not None:
        return toolset.reject_issues
    sentences = toolset.reject_arguments
    if sentences is None:
        return None
    return lambda issues: sentences([issue.describe() for issue in issues])


def _refusal(toolset: Toolset) -> Callable[[Sequence[ValidationIssue]], Handler] | None:
    """The target maker for `Toolset.reject_call`: a handler whose answer is the refusal."""
    hook = toolset.reject_call
    if hook is None:
        return None

    def refusing(issues: Sequence[ValidationIssue]) -> Handler:
        async def refuse(call: ToolCall) -> dict[str, Any]:
            raise ToolError(await hook(call, issues))

        return refuse

    return refusing


def _failure_shaper(
    toolset: Toolset, tool: str, output_schema: dict[str, Any] | None
) -> Callable[[Failure], dict[str, Any] | None] | None:
    hook = toolset.shape_failure
    if hook is None:
        return None
    from agora.mcp.validation import compile_validator

    schema = toolset.failure_schema if toolset.failure_schema is not None else output_schema
    # Compiled on the first failure only: most tools never fail.
    check = (
        compile_validator(schema, subject="result field", root="result", lazy=True)
        if schema is not None
        else None
    )

    def shape(failure: Failure) -> dict[str, Any] | None:
        body = hook(failure)
        problems = check.errors(body) if check is not None else ()
        if problems:
            log.error(
                "toolset %s shaped a failure of %s that its outputSchema refuses (%s); "
                "answering with text (correlation %s)",
                toolset.name,
                tool,
                problems[0].describe("result field", "result"),
                failure.correlation_id,
            )
            return None
        return body

    return shape


def tool_names(toolset: Toolset) -> list[str]:
    """Every tool name ``toolset`` serves, canonical names and aliases."""
    if toolset.contract is None:
        return [spec["name"] for spec in toolset.tools]
    from agora.mcp.contracts import load_contract

    contract = load_contract(toolset.contract or toolset.name)
    return [name for tool in contract.tools.values() for name in (tool.name, *tool.aliases)]


def refuse_shadowed_tools(toolsets: Sequence[Toolset]) -> None:
    """Refuse a name served twice, where one would shadow the other or be listed twice.

    Two toolsets with one name (``/mcp/<name>`` would serve only the last), a tool name
    served by two toolsets (``/mcp``), or a tool name one toolset lists twice.

    Raises:
        ValueError: naming the tool or toolset, and its owners.
    """
    owner: dict[str, str] = {}
    named: set[str] = set()
    for toolset in toolsets:
        if toolset.name in named:
            raise ValueError(
                f"two toolsets are named {toolset.name!r}: /mcp/{toolset.name} would serve"
                " only one of them; rename one"
            )
        named.add(toolset.name)
        listed: set[str] = set()
        for name in tool_names(toolset):
            if name in listed:
                raise ValueError(f"toolset {toolset.name} lists tool {name!r} twice")
            listed.add(name)
            first = owner.setdefault(name, toolset.name)
            if first != toolset.name:
                raise ValueError(
                    f"tool {name!r} is served by both toolset {first} and toolset"
                    f" {toolset.name}: /mcp would shadow one of them; rename it or serve"
                    " only one of the two"
                )


def catalog_entries(toolsets: Sequence[Toolset]) -> dict[str, list[ToolEntry]]:
    """Check ``toolsets`` and build each one's catalog entries (before anything opens).

    Returns:
        Each toolset's entries by toolset name, for `App`.

    Raises:
        ValueError: a name served twice (`refuse_shadowed_tools`), a tool without a
            handler, with a handler that cannot be called as ``await handler(call)``
            (`agora.toolsets.base.handler_problem`) or with an inputSchema that cannot be
            compiled, naming the toolset and the tool.
    """
    refuse_shadowed_tools(toolsets)
    return {t.name: tool_entries(t) for t in toolsets}


@dataclass
class Endpoint:
    """A resolved ``/mcp...`` path: its catalog and path parameters."""

    catalog: Catalog
    params: dict[str, str]


class App:
    """Everything a transport needs to serve a request (``entries``: each toolset's catalog
    entries, checked and built by `catalog_entries` before anything opened)."""

    def __init__(
        self,
        config: Config,
        runtime: Runtime,
        toolsets: Sequence[Toolset],
        entries: Mapping[str, list[ToolEntry]],
    ) -> None:
        self.config = config
        self.runtime = runtime
        self.toolsets = {t.name: t for t in toolsets}
        #: Every tokenless request shares one principal (built once, off the request path).
        self.anonymous = config.anonymous()
        self._in_flight = 0
        #: Shutdown began (`drain`): a new call is refused with JSON-RPC error -32011.
        self.draining = False
        self._idle = trio.Event()
        self._idle.set()
        self.routes: list[Route] = [r for t in toolsets for r in t.routes]
        per: dict[str, Catalog] = {}
        everything: list[ToolEntry] = []
        resources: list[Any] = []
        prompts: list[Any] = []
        completion = None
        for t in toolsets:
            everything.extend(entries[t.name])
            resources.extend(t.resources)
            prompts.extend(t.prompts)
            completion = completion or t.completion
            per[t.name] = Catalog(
                tools=entries[t.name],
                resources=t.resources,
                prompts=t.prompts,
                completion=t.completion,
                page_size=config.page_size,
            )
        self._per_toolset = per
        self._all = Catalog(
            tools=everything,
            resources=resources,
            prompts=prompts,
            completion=completion,
            page_size=config.page_size,
        )

    @property
    def in_flight(self) -> int:
        """Calls running now, over every connection."""
        return self._in_flight

    def call_started(self) -> None:
        """Count one more call in flight."""
        if self._in_flight == 0:
            self._idle = trio.Event()
        self._in_flight += 1

    def call_finished(self) -> None:
        """Count one call less; wake `wait_idle` at zero."""
        self._in_flight -= 1
        if self._in_flight == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Until no call is in flight."""
        await self._idle.wait()

    async def drain(
        self, grace: float, until_closed: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """The graceful end of serving, within ``grace`` seconds.

        From now on a new call is refused (`draining`) and every long-poll answers
        (`Runtime.begin_shutdown`); the calls in flight get to answer. Then, if any was in
        flight, the connections stay open ``linger_seconds`` more, or until ``until_closed``
        returns (every client has closed): a client that has just been answered may still
        send the requests that change nothing and need no actor (the official SDK's client
        lists the tools after a result, to check it against its outputSchema), which the
        sessions answer as usual. Without ``until_closed`` (no listener) there is no linger.
        """
        deadline = trio.current_time() + grace
        self.draining = True
        answering = self._in_flight > 0
        self.runtime.begin_shutdown()
        with trio.move_on_at(deadline):
            await self.wait_idle()
            if answering and until_closed is not None:
                with trio.move_on_after(self.config.linger_seconds):
                    await until_closed()

    def start_background(self, nursery: trio.Nursery) -> None:
        """Start every toolset's background tasks in ``nursery`` (cancelled at shutdown)."""
        for toolset in self.toolsets.values():
            for task in toolset.background:
                name = f"{toolset.name}: {getattr(task, '__qualname__', task)}"
                nursery.start_soon(supervise, task, self.runtime, name=name)

    def endpoint(self, path: str, query: Mapping[str, str] | None = None) -> Endpoint | None:
        """The catalog for ``/mcp``, ``/mcp/<toolset>`` or ``/mcp/<toolset>/<param>``.

        Args:
            path: The request path; a ``?query`` on it is read when ``query`` is None.
            query: The URL's query parameters; those the toolset names in its
                ``endpoint_query`` join the endpoint's parameters.
        """
        if query is None and "?" in path:
            path, _, raw = path.partition("?")
            query = dict(parse_qsl(raw))
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] != "mcp" or len(parts) > 3:
            return None
        if len(parts) == 1:
            return Endpoint(self._all, {})
        toolset = self.toolsets.get(parts[1])
        if toolset is None:
            return None
        params: dict[str, str] = {}
        if toolset.endpoint_param:
            params[toolset.endpoint_param] = parts[2] if len(parts) == 3 else "default"
        elif len(parts) == 3:
            return None
        for name in toolset.endpoint_query:
            if query and name in query:
                params[name] = query[name]
        return Endpoint(self._per_toolset[toolset.name], params)

    def new_session(self, endpoint: Endpoint) -> Session:
        """A fresh protocol session on ``endpoint``."""
        return Session(endpoint.catalog, SERVER_INFO)

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The principal of an ``Authorization`` header; None means: answer 401."""
        if not authorization:
            return self.anonymous
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.config.principal_for(token.strip())
