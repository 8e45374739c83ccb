"""A toolset's tools as catalog entries, checked before anything opens.

`catalog_entries` is what `agora.server.embed.open_server` calls first: it refuses a
toolset's mistakes (a name served twice, ``tools`` that is no list of named entries or a
tool name MCP does not allow (`agora.server.declared`), a tool without a handler or with one
the server cannot call, a handler keyed by a name no tool has, a schema that does not compile
or whose root is not an object, a migration component two toolsets share) with a
`ValueError` naming the toolset and the tool, before the database or a socket is opened, and
builds each toolset's `ToolEntry` list for `agora.server.app.App`.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from agora.errors import ToolError
from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import Rejection, ToolEntry
from agora.server.declared import contract_of, tools_in_code
from agora.server.declared import tool_names as tool_names  # `agora.server.app` imports it here
from agora.toolsets.base import handler_problem, hook_problems, shown_name

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from agora.errors import Failure
    from agora.mcp.validation import ValidationIssue
    from agora.toolsets.base import Handler, ToolCall, Toolset

log = logging.getLogger("agora.server.app")  # the operator's filters name this one


def tool_entries(toolset: Toolset, options: Mapping[str, Any] | None = None) -> list[ToolEntry]:
    """Catalog entries for a toolset's tools: from its contract, or defined in code, each
    with the description `Toolset.describe` gives it under ``options`` (its table).

    Raises:
        ValueError: a hook of the toolset cannot be called as the server calls it
            (`agora.toolsets.base.hook_problems`), or see `_entry` and `_described`.
    """
    problems = hook_problems(toolset)
    if problems:
        raise ValueError(f"toolset {toolset.name}: {'; '.join(problems)}")
    return _described(toolset, _entries(toolset), options or {})


def _described(toolset: Toolset, entries: list[ToolEntry], options: Mapping[str, Any]
               ) -> list[ToolEntry]:  # fmt: skip
    """``entries`` with the descriptions ``toolset.describe`` gives under ``options``;
    a ValueError if it names a tool the toolset does not list."""
    texts = {} if toolset.describe is None else toolset.describe(options)
    for name in set(texts) - {entry.name for entry in entries}:
        raise ValueError(
            f"toolset {toolset.name}: its describe hook names {name!r}, which none of its"
            " tools is named"
        )
    return [
        replace(entry, description=texts.get(entry.alias_of or entry.name, entry.description))
        for entry in entries
    ]


def _entries(toolset: Toolset) -> list[ToolEntry]:
    """`tool_entries` as its contract or ``tools`` describes them."""
    entries: list[ToolEntry] = []
    if toolset.contract is None:
        for spec in tools_in_code(toolset):
            entries.append(_entry(spec, toolset, spec["name"]))
            # (A contract's schemas are the build's own, checked by its tests: not at start.)
            problem = schema_problem(spec)
            if problem is not None:
                raise ValueError(f"toolset {toolset.name}: tool {spec['name']!r} {problem}")
            entries.extend(
                _entry(spec, toolset, alias, alias_of=spec["name"])
                for alias, canonical in toolset.aliases.items()
                if canonical == spec["name"]
            )
        return entries
    for tool in contract_of(toolset).tools.values():
        listing = tool.to_mcp()
        entries.append(_entry(listing, toolset, tool.name))
        entries.extend(
            _entry(listing, toolset, alias, alias_of=tool.name) for alias in tool.aliases
        )
    return entries


def refuse_stray_handlers(toolset: Toolset) -> None:
    """Refuse a handler keyed by a name no tool of ``toolset`` lists (a misspelt tool name):
    it would never be called, and its tool would be served by another handler or refused
    as having none.

    Raises:
        ValueError: naming the toolset, the key and the closest tool name.
    """
    names = tool_names(toolset)
    for key in toolset.handlers:
        if key not in names:
            near = difflib.get_close_matches(str(key), names, n=1, cutoff=0)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            listed = ", ".join(repr(n) for n in names[:12]) or "none"
            raise ValueError(
                f"toolset {toolset.name} has a handler keyed {key!r}, which none of its tools"
                f" is named{hint} (its tools: {listed})"
            )


def schema_problem(spec: Mapping[str, Any]) -> str | None:
    """What is wrong with the schemas of tools/list entry ``spec`` beyond an inputSchema that
    does not compile (`_entry` says that): a root that is not ``"type": "object"`` (MCP
    requires one, and the official SDK refuses the whole tools/list over one tool), or an
    outputSchema that does not compile (it would fail only when a failure is shaped against
    it, or in the client). None when nothing is.

    Returns:
        A phrase that follows the tool's name.
    """
    from agora.mcp.dialects import SchemaError
    from agora.mcp.validation import compile_validator

    for key in ("inputSchema", "outputSchema"):
        schema = spec.get(key)
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            return (
                f'has an {key} whose root is not `"type": "object"`: MCP requires an object'
                " there (the official SDK refuses the whole tools/list otherwise)"
            )
    output = spec.get("outputSchema")
    if output is not None:
        try:
            compile_validator(output, subject="result field", root="result")
        except SchemaError as exc:
            return f"has an outputSchema that cannot be compiled: {_reason(exc)}"
    return None


def _reason(exc: Exception) -> str:
    """Why a schema does not compile, without the words the caller's sentence says."""
    return str(exc).removeprefix("schema cannot be compiled: ")


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
            f" compiled: {_reason(exc)}"
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
        reject=_rejection(toolset, name),
        refuse=_refusal(toolset),
        fail=_failure_shaper(toolset, name, spec.get("outputSchema")),
    )


def _rejection(toolset: Toolset, tool: str) -> Rejection | None:
    """The body of a call to ``tool`` refused for its arguments, told to `Toolset.rejected`."""
    body: Callable[[Sequence[ValidationIssue]], dict[str, Any]]
    if toolset.reject_issues is not None:
        body = toolset.reject_issues
    elif toolset.reject_arguments is not None:
        body = _in_sentences(toolset.reject_arguments)
    else:
        return None
    told = toolset.rejected
    if told is None:
        return lambda issues, _args: body(issues)

    def rejection(issues: Sequence[ValidationIssue], args: dict[str, Any]) -> dict[str, Any]:
        refusal = body(issues)
        try:
            told(tool, args, refusal)
        except Exception:  # a log line's mistake: the caller is answered all the same
            log.exception("toolset %s: its rejected hook failed on %s", toolset.name, tool)
        return refusal

    return rejection


def _in_sentences(
    hook: Callable[[list[str]], dict[str, Any]],
) -> Callable[[Sequence[ValidationIssue]], dict[str, Any]]:
    """`Toolset.reject_arguments` given the problems as sentences."""
    return lambda issues: hook([issue.describe() for issue in issues])


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
        # What `failed_reply` then sends: what it sends without the hook.
        instead = "JSON-RPC -32603" if failure.kind == "unexpected" else "text"
        try:
            body = hook(failure)
            problems = check.errors(body) if check is not None else ()
            if not problems:
                rpc.encode(body)  # sent with a text of its own: only the transport encodes it
        except Exception:  # the hook, its schema or its body: answered as if there were none
            log.exception(
                "toolset %s failed to shape a failure of %s; answering with %s (correlation %s)",
                toolset.name,
                tool,
                instead,
                failure.correlation_id,
            )
            return None
        if problems:
            log.error(
                "toolset %s shaped a failure of %s that its outputSchema refuses (%s); "
                "answering with %s (correlation %s)",
                toolset.name,
                tool,
                problems[0].describe("result field", "result"),
                instead,
                failure.correlation_id,
            )
            return None
        return body

    return shape


def refuse_shadowed_tools(toolsets: Sequence[Toolset]) -> None:
    """Refuse a name served twice, where one would shadow the other or be listed twice.

    Two toolsets with one name (``/mcp/<name>`` would serve only the last), a tool name
    served by two toolsets (``/mcp``), or a tool name one toolset lists twice; and a toolset
    name that cannot be its endpoint's path segment (``my/notes`` was served at no path).

    Raises:
        ValueError: naming the tool or toolset, and its owners.
    """
    owner: dict[str, str] = {}
    named: set[str] = set()
    for toolset in toolsets:
        if not _TOOLSET_NAME.fullmatch(toolset.name):
            raise ValueError(
                f"toolset name {toolset.name!r} cannot be its endpoint's path segment"
                " (/mcp/<name>): use 1-64 lower-case letters, digits, - and _, a letter first"
            )
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
            if (first := _claimed_before(owner, name, toolset.name)) is not None:
                raise ValueError(
                    f"tool {name!r} is served by both toolset {first} and toolset"
                    f" {toolset.name}: /mcp would shadow one of them; rename it or serve"
                    " only one of the two"
                )


#: A toolset's name: the last segment of its endpoint's path, ``/mcp/<name>``.
_TOOLSET_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,63}")


def _claimed_before(owner: dict[str, str], name: str, toolset: str) -> str | None:
    """The toolset that claimed ``name`` in ``owner`` before ``toolset`` did, or None (the
    name is ``toolset``'s now)."""
    first = owner.setdefault(name, toolset)
    return first if first != toolset else None


def refuse_shared_migrations(toolsets: Sequence[Toolset]) -> None:
    """Refuse a migration component that two toolsets' migrations both name, and two steps
    of one toolset with one component and version.

    The store records one version per component: a toolset's step that reuses another's
    component (``chess`` beside the built-in chess) is either refused late, once the
    database file exists, naming no toolset (one version taken twice), or applied and
    recorded as that component's version, which the other toolset then finds newer than its
    own on the next start.

    Raises:
        ValueError: naming the component and both toolsets (or the toolset and the step).
    """
    owner: dict[str, str] = {}
    for toolset in toolsets:
        versions: set[tuple[str, int]] = set()
        for step in toolset.migrations:  # one version taken twice: one step would never run
            if (step.component, step.version) in versions:
                raise ValueError(
                    f"toolset {toolset.name} has two migration steps {step.component}"
                    f" v{step.version}: one of them would never run; number them apart"
                )
            versions.add((step.component, step.version))
        for component in {step.component for step in toolset.migrations}:
            if (first := _claimed_before(owner, component, toolset.name)) is not None:
                raise ValueError(
                    f"migration component {component!r} is used by both toolset {first} and"
                    f" toolset {toolset.name}: the database keeps one version per component;"
                    " name each toolset's migrations after the toolset"
                )


def catalog_entries(
    toolsets: Sequence[Toolset], options: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, list[ToolEntry]]:
    """Check ``toolsets`` and build each one's catalog entries (before anything opens),
    described under its table of ``options`` (checked: `Toolset.describe`).

    Returns:
        Each toolset's entries by toolset name, for `App`.

    Raises:
        ValueError: a name served twice (`refuse_shadowed_tools`), ``tools`` that is no
            list of named entries or a tool name MCP does not allow
            (`agora.server.declared.tool_names`), a tool without a handler, with a handler
            that cannot be called as ``await handler(call)``
            (`agora.toolsets.base.handler_problem`), with an inputSchema that cannot be
            compiled or (a tool defined in code) an outputSchema that cannot, or a schema
            whose root is not an object (`schema_problem`), naming the toolset and the tool;
            a handler keyed by a name no tool has (`refuse_stray_handlers`); a migration
            component in two toolsets (`refuse_shared_migrations`). A toolset without
            ``contract=None`` whose contract is not packaged: `NoContract` (a ValueError).
    """
    refuse_shadowed_tools(toolsets)
    refuse_shared_migrations(toolsets)
    for toolset in toolsets:  # first: a misspelt key also leaves its tool without a handler
        refuse_stray_handlers(toolset)
    return {t.name: tool_entries(t, (options or {}).get(t.name)) for t in toolsets}
