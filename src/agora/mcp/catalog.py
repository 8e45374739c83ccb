"""What one endpoint offers: tools (with compiled argument checks), resources, prompts.

A catalog is built once per endpoint (``/mcp``, ``/mcp/chess``, ...) from the contracts and
the enabled toolsets, and shared by every session on it. Sans-io: no trio, no handlers
called here; each entry carries an opaque ``target`` the async driver knows how to run.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agora.mcp.validation import ValidationIssue
from agora.mcp.wording import closest

#: Returns the problems with the arguments (path, keyword, detail); empty when they are valid.
ArgumentCheck = Callable[[dict[str, Any]], Sequence[ValidationIssue]]
#: Builds the structured error body of rejected arguments in the toolset's vocabulary.
#: The body of a call refused for its arguments: from the problems and the arguments as sent.
Rejection = Callable[[Sequence[ValidationIssue], dict[str, Any]], dict[str, Any]]


def _no_check(args: dict[str, Any]) -> Sequence[ValidationIssue]:
    return ()


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One callable tool as listed in tools/list."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    check: ArgumentCheck = _no_check
    target: Any = None
    #: Set on alias entries: the canonical name. Aliases are callable but never listed.
    alias_of: str | None = None
    #: Builds the structured error body for invalid arguments in the toolset's vocabulary.
    reject: Rejection | None = None
    #: Instead of `reject`: the target (as ``target``) of a call that answers the refusal
    #: of these problems itself, reading what it reports (e.g. the entity's state).
    refuse: Callable[[Sequence[ValidationIssue]], Any] | None = None
    #: Shapes an internal failure (an `agora.errors.Failure`) into the structured body of an
    #: ``isError`` result in the toolset's vocabulary; None (or a None answer) sends text.
    fail: Callable[[Any], dict[str, Any] | None] | None = None

    def listing(self) -> dict[str, Any]:
        """The tools/list entry."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.title:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True, slots=True)
class ResourceEntry:
    """A readable resource (``uri`` may be a template with ``{name}`` parts)."""

    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None
    template: bool = False
    target: Any = None
    #: ``async def check(call) -> dict`` run before a resources/subscribe to this resource is
    #: accepted (it raises the error the client gets, as ``target`` does for a read); None:
    #: any URI the entry matches may be subscribed to, even before it exists.
    check: Any = None

    def listing(self) -> dict[str, Any]:
        """The resources/list (or resources/templates/list) entry."""
        out: dict[str, Any] = {"name": self.name}
        out["uriTemplate" if self.template else "uri"] = self.uri
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        return out

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables ``uri`` binds, or None if it is not this resource.

        A plain resource matches only its own URI (with no variables); a template's
        ``{name}`` parts each match one non-empty path segment (RFC 6570 level 1).
        """
        if not self.template:
            return {} if uri == self.uri else None
        found = _template_pattern(self.uri).fullmatch(uri)
        return found.groupdict() if found else None


@functools.lru_cache(maxsize=256)
def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template)
    # re.split alternates literal text and variable names: even indexes are literals.
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/?#]+)" for i, part in enumerate(parts)
    )
    return re.compile(regex)


@dataclass(frozen=True, slots=True)
class PromptEntry:
    """A prompt template with named arguments."""

    name: str
    description: str = ""
    arguments: tuple[dict[str, Any], ...] = ()
    target: Any = None

    def listing(self) -> dict[str, Any]:
        """The prompts/list entry."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.arguments:
            out["arguments"] = list(self.arguments)
        return out

    def problems(self, args: dict[str, Any]) -> list[str]:
        """What is wrong with prompts/get ``args``: missing required or non-string values."""
        out = [
            f"missing required argument {a['name']!r}"
            for a in self.arguments
            if a.get("required") and a["name"] not in args
        ]
        out.extend(
            f"argument {k!r} must be a string" for k, v in args.items() if not isinstance(v, str)
        )
        return out


@dataclass
class Catalog:
    """Everything one endpoint serves."""

    tools: Sequence[ToolEntry] = ()
    resources: Sequence[ResourceEntry] = ()
    prompts: Sequence[PromptEntry] = ()
    #: Async completion provider target for completion/complete, if any.
    completion: Any = None
    page_size: int = 100
    instructions: str | None = None
    #: The tools of the server's other toolsets, by name: their toolset's name (a caller on
    #: the wrong endpoint is told where the tool is).
    elsewhere: Mapping[str, str] = field(default_factory=dict)
    _tools_by_name: dict[str, ToolEntry] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._tools_by_name = {t.name: t for t in self.tools}

    def tool(self, name: str) -> ToolEntry | None:
        """The tool (canonical or alias) called ``name``."""
        return self._tools_by_name.get(name)

    def unknown_tool(self, name: str) -> str:
        """The refusal of a call to ``name``, which is not here: where it is served, if
        another toolset has it, else the tool it is closest to, if one is close."""
        toolset = self.elsewhere.get(name)
        if toolset is not None:
            return (
                f"unknown tool: {name} is a {toolset} tool, not served on this endpoint;"
                f" connect to /mcp/{toolset} (or /mcp, which serves every toolset)"
            )
        close = closest(name, list(self._tools_by_name))
        return f"unknown tool: {name}" + (f"; did you mean {close}?" if close else "")

    def listed_tools(self) -> list[ToolEntry]:
        """Canonical tools in listing order (aliases are left out)."""
        return [t for t in self.tools if t.alias_of is None]

    def prompt(self, name: str) -> PromptEntry | None:
        """The prompt called ``name``."""
        return next((p for p in self.prompts if p.name == name), None)

    def resource(self, uri: str) -> tuple[ResourceEntry, dict[str, str]] | None:
        """The resource serving ``uri`` and the template variables it binds.

        Plain resources win over templates; among templates, the first listed wins.
        """
        plain = next((r for r in self.resources if not r.template and r.uri == uri), None)
        if plain is not None:
            return plain, {}
        for entry in self.resources:
            bound = entry.match(uri) if entry.template else None
            if bound is not None:
                return entry, bound
        return None

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities this catalog implies."""
        caps: dict[str, Any] = {"tools": {"listChanged": False}, "logging": {}}
        if self.resources:
            caps["resources"] = {"subscribe": True, "listChanged": False}
        if self.prompts:
            caps["prompts"] = {"listChanged": False}
        if self.completion is not None:
            caps["completions"] = {}
        return caps


def page(items: Sequence[Any], cursor: str | None, size: int) -> tuple[list[Any], str | None]:
    """One page of ``items`` after the opaque ``cursor``, and the next cursor if any.

    Raises:
        ValueError: if ``cursor`` was not produced by this function.
    """
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode()).decode().removeprefix("o:"))
        except (ValueError, UnicodeDecodeError):
            raise ValueError("invalid cursor") from None
        if not 0 <= start <= len(items):
            raise ValueError("invalid cursor")
    end = start + size
    nxt = base64.urlsafe_b64encode(f"o:{end}".encode()).decode() if end < len(items) else None
    return list(items[start:end]), nxt
