"""What a router call may ask the store to keep: the bounds the contract's core inputs leave out.

The twelve core tools serve the seed's schemas as they are, with no ``maxLength`` on an
identifier or a text, and a run keeps what it is given: the idempotency key (on the run and
again on its ledger row), the correlation id, the context, the objective. Before a handler
runs, every string of the arguments is checked by what its nearest key names:

- an identifier (a ``context`` field, or a key ending in ``_id``, ``_ids``, ``_key``, ``_ref``
  or ``_refs``): at most `MAX_IDENTIFIER` characters and no control character. A control
  character is never part of a real id, and ``\\x1f`` in a session id would let a caller
  without a token name another principal's scoped session (`ownership.SEPARATOR`).
- any other text (the objective, a workspace path, a reason): at most `MAX_TEXT` characters;
  one inside an ``observation`` is refused with the observation's own bound, 16 KiB of
  canonical JSON in all (`progress.MAX_OBSERVATION_BYTES`), which a shorter text may still
  break (``observation-invalid``), not with `MAX_TEXT`.

A breach is answered as the schema's own breaches are (``invalid-arguments``, naming the field
and the rule), before anything is read or written. The Memory tools' schemas (the contract's
own) bound their ``context`` more tightly: letters, digits and ``._:-``, at most 128
characters; this adds nothing there but words: a refusal of their pattern says that rule in
words (`_in_words`), not the regex alone. A planning context outside that form is accepted, as the
planning schemas accept it, but its runs can never reach Memory (`memory_misfits`), and
``plan_work`` says so when Memory is configured.

A tool that can never run here (verified-host-required: `NEVER_HERE`, or an adapter tool on
a server with no ``[options.router.adapter]``: `unavailable_here`) skips both checks, the
inputSchema's (`rejection`) and the bounds: its answer is capability-unavailable whatever the
arguments, and an agent learns that at once rather than after fixing every argument.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.contracts import load_contract
from agora.mcp.validation import ValidationIssue
from agora.toolsets.router import replies
from agora.toolsets.router.explained import explained
from agora.toolsets.router.extras import unknown_arguments, warned
from agora.toolsets.router.meant import reworded
from agora.toolsets.router.progress import MAX_OBSERVATION_BYTES
from agora.toolsets.router.run import arguments_refused, refused_for_arguments

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.errors import ToolError
    from agora.toolsets.base import Handler, ToolCall

CONTRACT: Final = load_contract("router")

#: The tools whose availability (verified-host-required) no local condition can meet.
NEVER_HERE: Final = frozenset(
    name
    for name in CONTRACT.tools
    if replies.facts(name).get("availability") == "verified-host-required"
)

#: The tools that run only with an evaluation adapter (configured-adapter-required).
ADAPTER_TOOLS: Final = frozenset(
    name
    for name in CONTRACT.tools
    if replies.facts(name).get("availability") == "configured-adapter-required"
)


#: Why an adapter tool cannot run on a server with no ``[options.router.adapter]``.
NO_ADAPTER: Final = (
    "this server has no evaluation adapter: only its operator can configure one, in the"
    " [options.router.adapter] table of the server's config (agora.toml, docs/options.md);"
    " no argument can make this tool run until then"
)


#: What to do instead, in the contract's ``fallback_action`` field: its words ("Configure a
#: trusted host-side adapter") ask the agent for what only the server's operator can do.
NO_ADAPTER_FALLBACK: Final = (
    "Ask the server's operator to configure an evaluation adapter ([options.router.adapter]"
    " in agora.toml; no agent or argument can), and until then report manual-required"
    " evidence."
)


def no_adapter(tool: str) -> ToolError:
    """An adapter tool (configured-adapter-required) on a server with none configured."""
    return replies.unavailable(tool, fallback=NO_ADAPTER_FALLBACK, message=NO_ADAPTER)


def unavailable_here(call: ToolCall) -> ToolError | None:
    """The capability-unavailable answer of a call no argument could make run on this
    server (a verified-host tool; an adapter tool with no adapter configured), or None."""
    if call.tool in NEVER_HERE:
        return replies.unavailable(call.tool)
    if call.tool in ADAPTER_TOOLS and not call.runtime.options("router").get("adapter"):
        return no_adapter(call.tool)
    return None


#: Longest identifier (session id, idempotency key, correlation id, run id, ref), in characters.
MAX_IDENTIFIER: Final = 256
#: Longest other text (an objective, a path), in characters: the debate's bound on a body.
MAX_TEXT: Final = 32_768
_ID_SUFFIXES: Final = ("_id", "_ids", "_key", "_ref", "_refs")
_LONGEST_ID: Final = f"must be at most {MAX_IDENTIFIER} characters"
_LONGEST_TEXT: Final = f"must be at most {MAX_TEXT} characters"
_CONTROL_TEXT: Final = "must not contain a control character"
#: A text inside an ``observation`` past `MAX_TEXT` is past the observation's own bound too.
_LONGEST_OBSERVED: Final = (
    f"is longer than a whole observation may be: an observation is kept up to"
    f" {MAX_OBSERVATION_BYTES} bytes (16 KiB) of canonical JSON (RFC 8785) in all, every field"
    " included; send a shorter one (e.g. the end of a log)"
)
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _memory_context() -> dict[str, Any]:
    schema = load_contract("router").tools["remember_workflow"].input_schema
    properties: dict[str, Any] = schema["properties"]["context"]["properties"]
    return properties


#: The Memory tools' ``context`` fields as the contract declares them: (pattern, maxLength).
MEMORY_CONTEXT: Final = {
    name: (re.compile(field["pattern"]), int(field["maxLength"]))
    for name, field in _memory_context().items()
}


def memory_misfits(context: dict[str, str]) -> list[str]:
    """The ``context`` fields the Memory tools' schemas would refuse, in schema order."""
    return [
        name for name, (pattern, longest) in MEMORY_CONTEXT.items()
        if len(context[name]) > longest or not pattern.search(context[name])
    ]  # fmt: skip


def _in_words(issue: ValidationIssue) -> ValidationIssue:
    """``issue``, with a Memory ``context`` field's pattern said in words: the regex alone
    leaves an agent to read it, and it allows more characters than ``maxLength`` does."""
    name = issue.path[1] if len(issue.path) == 2 and issue.path[0] == "context" else None
    field = MEMORY_CONTEXT.get(name) if isinstance(name, str) else None
    if field is None or issue.rule != "pattern" or field[0].pattern not in issue.message:
        return issue
    return ValidationIssue(
        issue.path, issue.rule,
        "must be letters, digits and . _ : - only (no spaces), starting with a letter or digit,"
        f" at most {field[1]} characters, as the Memory tools' context is",
    )  # fmt: skip


def bounded(handler: Handler) -> Handler:
    """``handler`` behind the bounds: a breach is refused before it runs."""

    async def checked(call: ToolCall) -> dict[str, Any]:
        issue = None if unavailable_here(call) else breach(call.args, ())
        if issue is not None:
            raise refused_for_arguments(call, [issue])
        result: dict[str, Any] = await handler(call)
        return result

    return checked


async def rejection(call: ToolCall, issues: Sequence[ValidationIssue]) -> dict[str, Any]:
    """The body of a call its inputSchema refuses (`Toolset.reject_call`), logged as the
    router's other refusals are: ``invalid-arguments`` (a missing argument said as
    `agora.toolsets.router.meant.reworded` words it, a top-level argument's other rules with
    what to send, as `agora.toolsets.router.explained.explained` says them), or for a tool
    in `NEVER_HERE` capability-unavailable, since no argument could make it run; with the
    warnings of the arguments the tool does not take, as its handler's refusals have."""
    if (unavailable := unavailable_here(call)) is None:
        if (spec := CONTRACT.resolve(call.tool)) is not None:
            issues = reworded(spec.input_schema, call.args, issues)
            issues = [explained(call.tool, spec.input_schema, i) for i in issues]
        body = refused_for_arguments(call, [_in_words(i) for i in issues]).body
    else:
        body = unavailable.body
        arguments_refused(call.tool, call.args, body)
    return warned(body, unknown_arguments(call.tool, call.args))


def breach(
    value: Any, path: tuple[str | int, ...], identifier: bool = False
) -> ValidationIssue | None:
    """The first string under ``value`` (at ``path``) past its bound, or None. Every router
    call passes here (replays too), so a short printable string, which passes whatever it
    names, costs a type test, a length and one ``isprintable``; only others are looked at."""
    entries: Any
    if isinstance(value, dict):
        entries = value.items()
    elif isinstance(value, list):
        entries = enumerate(value)
    else:
        return None
    for key, item in entries:
        kind = type(item)
        if kind is str:
            if len(item) <= MAX_IDENTIFIER and item.isprintable():
                continue
            problem = _string(item, _names_an_id(path, key, identifier))
            if problem is not None:
                if problem == ("maxLength", _LONGEST_TEXT) and path[:1] == ("observation",):
                    problem = ("maxLength", _LONGEST_OBSERVED)  # its own, tighter bound
                return ValidationIssue((*path, key), *problem)
        elif kind is dict or kind is list:
            inner = _names_an_id(path, key, identifier) and (kind is list or type(key) is int)
            found = breach(item, (*path, key), inner)
            if found is not None:
                return found
    return None


def _names_an_id(path: tuple[str | int, ...], key: str | int, identifier: bool) -> bool:
    """Whether the value at ``key`` under ``path`` is an identifier (or a list of them)."""
    if identifier:
        return True
    return type(key) is str and (path == ("context",) or key.endswith(_ID_SUFFIXES))


def _string(text: str, identifier: bool) -> tuple[str, str] | None:
    """(rule, message) if ``text`` is past its bound."""
    if identifier:
        if len(text) > MAX_IDENTIFIER:
            return "maxLength", _LONGEST_ID
        if _CONTROL.search(text):
            return "pattern", _CONTROL_TEXT
    elif len(text) > MAX_TEXT:
        return "maxLength", _LONGEST_TEXT
    return None
