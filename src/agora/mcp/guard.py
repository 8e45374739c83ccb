"""The cheap guard run before any schema, and `ValidationIssue`, what every check reports.

`guard` refuses a decoded JSON value nested too deep, holding too many values, too long as
compact JSON, or (when asked) holding a NUL character (U+0000) in a string or key, which no
store here can keep; `nul_field` is the NUL check alone, for the page routes' JSON bodies. A
tool call's arguments pass through `guard`: given the value's JSON text, a short value is
cleared by a few byte counts, without a walk. This module must not import trio, change the
values it checks, or know schemas (`agora.mcp.validation` runs the schema after it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

MAX_DEPTH = 32
MAX_NODES = 10_000
_CONTAINERS = (dict, list)
NUL_TEXT: Final = "must not contain a NUL character (U+0000): agora stores no text with one"
_ENCODE = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One broken rule at one place in the checked value.

    Attributes:
        path: Keys and indexes from the root to the offending value (empty for the root).
        rule: The JSON Schema keyword broken (``required``, ``type``, ``maxLength``, ...), or
            ``maxDepth`` / ``maxNodes`` / ``maxBytes`` for the size guard.
        message: What the value must be, e.g. ``must match pattern ^[a-h][1-8]$``.
    """

    path: tuple[str | int, ...]
    rule: str
    message: str

    @property
    def keyword(self) -> str:
        """The JSON Schema keyword broken (the same as `rule`)."""
        return self.rule

    @property
    def detail(self) -> str:
        """What the value must be (the same as `message`)."""
        return self.message

    @property
    def field(self) -> str:
        """The path as text: ``preflight.tools_visible``, ``value[2]``; empty for the root."""
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def describe(self, subject: str = "argument", root: str = "arguments") -> str:
        """Render the issue for a model, e.g. ``argument 'from': must match pattern ...``."""
        return (
            f"{subject} '{self.field}': {self.message}" if self.path else f"{root}: {self.message}"
        )

    def to_dict(self) -> dict[str, str]:
        """The issue as JSON: ``{"field", "rule", "message"}``."""
        return {"field": self.field, "rule": self.rule, "message": self.message}


def _nul_path(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where the first U+0000 in ``value`` is (a string, or an object's key), or None."""
    if type(value) is str:
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, child in value.items():
            if "\x00" in key:
                return (*path, key[:64])
            if type(child) is not int and (found := _nul_path(child, (*path, key))) is not None:
                return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            if type(child) is not int and (found := _nul_path(child, (*path, index))) is not None:
                return found
    return None


def nul_field(value: Any) -> str | None:
    """Where the first U+0000 in a decoded JSON ``value`` is, as ``a.b[2]`` text, or None
    (for the page routes' JSON bodies: they refuse a NUL as MCP does, with `NUL_TEXT`)."""
    where = _nul_path(value)
    if where is None:
        return None
    return ValidationIssue(where, "noNul", NUL_TEXT).field or "body"


def _encoded(value: Any) -> bytes | None:
    """``value`` as compact JSON, or None if it is not JSON (say an integer past 64 bits)."""
    try:
        return _ENCODE(value)
    except (msgspec.EncodeError, OverflowError, TypeError):
        return None


def guard(
    value: Any, max_depth: int, max_nodes: int, max_bytes: int, refuse_nul: bool
) -> ValidationIssue | None:
    # The NUL check needs the JSON text too (arguments: at most a message's size).
    encoded = _ENCODE(value) if max_bytes else _encoded(value) if refuse_nul else None
    if encoded is not None:
        if max_bytes and len(encoded) > max_bytes:
            return ValidationIssue((), "maxBytes", f"take more than {max_bytes} bytes as JSON")
        # Each value below the top takes a byte of the text at least, and each level of
        # nesting an opening bracket: a text this short cannot break either limit, so the
        # walk below is skipped (most arguments: a few short fields).
        if len(encoded) <= max_nodes and encoded.count(b"{") + encoded.count(b"[") <= max_depth:
            # `_nul_issue`'s first test, made here: nearly every argument passes it.
            return _nul_issue(value, encoded) if refuse_nul and _NUL in encoded else None
    level, depth, nodes = [value], 0, 0
    while level:
        depth += 1
        below: list[Any] = []
        for item in level:
            if isinstance(item, _CONTAINERS):
                nodes += len(item)
                for child in item.values() if isinstance(item, dict) else item:
                    if isinstance(child, _CONTAINERS):
                        below.append(child)  # noqa: PERF401 - a comprehension is slower here
        if below and depth >= max_depth:
            return ValidationIssue((), "maxDepth", f"are nested deeper than {max_depth} levels")
        if nodes > max_nodes:
            return ValidationIssue((), "maxNodes", f"hold more than {max_nodes} values")
        level = below
    return _nul_issue(value, encoded) if refuse_nul else None


#: How JSON writes U+0000 (in a string or a key; only escaped): an encoding without it has none.
_NUL = b"\\u0000"


def _nul_issue(value: Any, encoded: bytes | None) -> ValidationIssue | None:
    """The first U+0000 in ``value`` (``encoded``: its compact JSON, if made) as an issue."""
    if encoded is None:
        encoded = _encoded(value)
    # With the text, the walk says where, or finds it was a backslash written before "u0000".
    if encoded is not None and _NUL not in encoded:
        return None
    if (where := _nul_path(value)) is not None:
        return ValidationIssue(where, "noNul", NUL_TEXT)
    return None
