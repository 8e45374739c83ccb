"""JSON Schema checks of tool arguments and results, compiled once, explained so a model can act.

`compile_validator` turns a contract schema into a `Validator` backed by code that fastjsonschema
generates. A rejection names the field (``preflight.tools_visible``, ``value[2]``) and the rule
broken (``required``, ``type``, ``pattern``, ...), e.g. ``argument 'from': must match pattern
^[a-h][1-8]$``. A cheap depth, size and NUL guard (`agora.mcp.guard`) runs before the schema.

Dialects: a schema is first checked, as written, against the metaschema of its dialect
(`agora.mcp.metaschema`, `malformed_keyword`; the dialect its ``$schema`` names, 2020-12
without one, an unknown one refused); then draft-04/06/07 schemas are compiled as they are,
and 2019-09 and 2020-12 ones rewritten to draft-07 by `agora.mcp.dialects` first. Whatever
fastjsonschema raises on a schema is a `SchemaError`.

This module must not import trio, change the values it checks (no defaults are filled in),
assert ``format`` unless asked, or fetch a remote ``$ref``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import fastjsonschema

from agora.errors import AgoraError
from agora.mcp.dialects import HANDLERS, SchemaError, dialect_of, normalise_schema
from agora.mcp.guard import MAX_DEPTH, MAX_NODES, ValidationIssue, guard
from agora.mcp.wording import describe, misspelt, not_allowed, required

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "ArgumentError",
    "SchemaError",
    "ValidationIssue",
    "Validator",
    "compile_validator",
    "normalise_schema",
]

_NAME_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


class ArgumentError(AgoraError, ValueError):
    """Arguments (or a result) broke the schema; nothing was done with them.

    Args:
        field_path: The first offending field (``preflight.tools_visible``; empty for the root).
        rule: The keyword it broke (``required``, ``pattern``, ...).
        message: Complete text for the model, naming field and rule.
        issues: Every issue found; the first is the one named above.
    """

    def __init__(
        self, field_path: str, rule: str, message: str, issues: Sequence[ValidationIssue] = ()
    ) -> None:
        super().__init__(message)
        self.field_path = field_path
        self.rule = rule
        self.message = message
        self.issues = tuple(issues)

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON, for the body of an ``isError`` tool result."""
        body: dict[str, Any] = {"field": self.field_path, "rule": self.rule}
        return body | {"message": self.message, "issues": [i.to_dict() for i in self.issues]}


def _path(name: str | None) -> tuple[str | int, ...]:
    # fastjsonschema names values "data", "data.preflight.tools_visible", "data.value[2]".
    text = (name or "data").removeprefix("data")
    return tuple(key if key else int(index) for key, index in _NAME_TOKEN.findall(text))


def _issues(exc: fastjsonschema.JsonSchemaValueException) -> list[ValidationIssue]:
    path, rule, value = _path(exc.name), exc.rule or "false", exc.value
    definition = exc.definition if isinstance(exc.definition, dict) else {}
    if rule == "required" and isinstance(value, dict):
        missing = [key for key in definition.get("required", ()) if key not in value]
        fields = definition.get("properties", {})
        sent = misspelt(value, definition, missing)  # a missing property often came misspelt
        return [
            ValidationIssue((*path, key), rule, required(fields.get(key), sent.get(key)))
            for key in missing
        ]
    if rule == "additionalProperties" and isinstance(value, dict):
        known = definition.get("properties", {})
        patterns = [re.compile(p) for p in definition.get("patternProperties", {})]
        extra = [k for k in value if k not in known and not any(p.search(k) for p in patterns)]
        # Echo at most a little of what the client sent.
        return [
            ValidationIssue((*path, key[:64]), rule, not_allowed(key, known, value))
            for key in extra[:8]
        ]
    return [ValidationIssue(path, rule, describe(rule, definition, value, exc.message))]


class Validator:
    """A schema compiled once (by `compile_validator`); validating never changes the value."""

    __slots__ = ("_all", "_compile", "_fast", "_limits", "_nouns", "schema")

    def __init__(
        self,
        schema: Mapping[str, Any] | bool,
        compile_fn: Callable[[bool], Callable[[Any], Any]],
        nouns: tuple[str, str],
        limits: tuple[int, int, int, bool],
        lazy: bool = False,
    ) -> None:
        self.schema = schema
        self._compile = compile_fn
        self._fast: Callable[[Any], Any] | None = None if lazy else compile_fn(True)
        # The collect-every-error variant is compiled on first need: most values are valid.
        self._all: Callable[[Any], Any] | None = None
        self._nouns = nouns
        self._limits = limits

    def check(self, value: Any) -> None:
        """Accept ``value`` (decoded JSON, e.g. a tools/call ``arguments`` object) or raise at
        its first problem: `ArgumentError` naming the field and the rule it breaks (schema or
        depth/size guard); `SchemaError` only from a ``lazy`` validator that cannot compile."""
        issues = self._first_issues(value)
        if issues:
            text = "; ".join(issue.describe(*self._nouns) for issue in issues[:3])
            if len(issues) > 3:
                text += f" (and {len(issues) - 3} more)"
            raise ArgumentError(issues[0].field, issues[0].rule, text, issues)

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` passes the guard and the schema."""
        return not self._first_issues(value)

    def problems(self, value: Any) -> list[str]:
        """Every problem as a sentence for the model; empty when ``value`` is valid."""
        return [issue.describe(*self._nouns) for issue in self.errors(value)]

    def errors(self, value: Any) -> list[ValidationIssue]:
        """Every issue in ``value``, not only the first; empty when it is valid."""
        first = self._first_issues(value)
        if not first or first[0].rule in ("maxDepth", "maxNodes", "maxBytes", "noNul"):
            return first
        if self._all is None:
            self._all = self._compile(False)
        try:
            self._all(value)
        except fastjsonschema.JsonSchemaValuesException as exc:
            return [issue for error in exc.errors for issue in _issues(error)] or first
        except fastjsonschema.JsonSchemaValueException as exc:
            return _issues(exc) or first
        return first

    def _compile_fast(self) -> Callable[[Any], Any]:
        self._fast = self._compile(True)
        return self._fast

    def _first_issues(self, value: Any) -> list[ValidationIssue]:
        guarded = guard(value, *self._limits)
        if guarded is not None:
            return [guarded]
        try:
            (self._fast or self._compile_fast())(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            return _issues(exc) or [ValidationIssue(_path(exc.name), exc.rule or "", exc.message)]
        return []


def compile_validator(
    schema: Mapping[str, Any] | bool,
    *,
    subject: str = "argument",
    root: str = "arguments",
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    max_bytes: int = 0,
    assert_formats: bool = False,
    lazy: bool = False,
    refuse_nul: bool = False,
) -> Validator:
    """Compile a JSON Schema into a reusable `Validator`.

    Args:
        schema: The schema: draft-04/06/07, 2019-09 or 2020-12 (no ``$schema`` means 2020-12).
        subject: Noun for one field in messages (``argument 'from': ...``); e.g.
            ``"result field"`` when checking tool results.
        root: Noun for the whole value in messages (``arguments: must be an object, ...``).
        max_depth: Deepest nesting of objects and arrays accepted before the schema runs.
        max_nodes: Most values (object members plus array items) accepted in total.
        max_bytes: Largest size of the value as compact JSON (0: no limit of its own).
        assert_formats: Reject strings that break ``format``; off by default, since ``format``
            is an annotation in the 2020-12 default vocabulary (and in the jsonschema reference).
        refuse_nul: Refuse a NUL character (U+0000) in any string or key, before the schema
            runs (tool arguments: every store must be able to keep what a call sends, and
            PostgreSQL text cannot hold NUL, so both backends refuse it alike).
        lazy: Generate the code on the first check instead of now (a big schema takes 10-25 ms);
            a schema that cannot be compiled then raises `SchemaError` from that first check.

    Returns:
        The compiled validator.

    Raises:
        SchemaError: The schema is invalid or uses something this module cannot honour.
    """
    target: dict[str, Any] | bool | None = None

    def compile_fn(fast_fail: bool) -> Callable[[Any], Any]:
        nonlocal target
        if target is None:
            # First: the rewrite assumes well-formed keywords, and this names them as written.
            problem = malformed_keyword(schema)
            if problem is not None:
                raise SchemaError(f"schema cannot be compiled: {problem}")
            target = normalise_schema(schema)
        return _compiled(target, assert_formats, fast_fail)

    limits = (max_depth, max_nodes, max_bytes, refuse_nul)
    return Validator(schema, compile_fn, (subject, root), limits, lazy)


def _compiled(target: Any, assert_formats: bool, fast_fail: bool) -> Callable[[Any], Any]:
    """fastjsonschema's code for ``target``; whatever it raises, a `SchemaError`."""
    try:
        validate: Callable[[Any], Any] = fastjsonschema.compile(
            target,
            handlers=HANDLERS,
            use_default=False,
            use_formats=assert_formats,
            fast_fail=fast_fail,
        )
    except SchemaError:  # a remote $ref (`agora.mcp.dialects.HANDLERS`): already worded
        raise
    except (fastjsonschema.JsonSchemaDefinitionException, re.error) as exc:
        raise SchemaError(f"schema cannot be compiled: {exc}") from exc
    except Exception as exc:  # fastjsonschema tripping over a shape the metaschema let by
        raise SchemaError(
            f"schema cannot be compiled: fastjsonschema failed on it ({type(exc).__name__}: {exc})"
        ) from exc
    return validate


#: The metaschema validators (`agora.mcp.metaschema`), by dialect.
_METAS: dict[str, Validator] = {}
#: The guard's limits for a schema checked as a value: none that a schema could reach.
_META_LIMITS = (10_000, 10**9, 0, False)
_MAPS = {(key,) for key in ("properties", "patternProperties", "$defs", "dependentSchemas")}


def malformed_keyword(schema: Mapping[str, Any] | bool) -> str | None:
    """Which keyword of ``schema``, as written, the metaschema of its dialect refuses (or its
    ``$schema``, naming no dialect), as ``keyword 'properties.x.minLength': must be an
    integer, got string``; None if none."""
    try:
        dialect = dialect_of(schema)
    except SchemaError as exc:
        return str(exc)
    meta = _METAS.get(dialect)
    if meta is None:
        from agora.mcp.metaschema import BY_DIALECT

        definition = BY_DIALECT[dialect]
        meta = _METAS[dialect] = Validator(
            definition,
            lambda fast: _compiled(definition, False, fast),
            ("keyword", "schema"),
            _META_LIMITS,
        )
    issues = meta.errors(schema)
    if not issues:
        return None
    first = issues[0]
    if first.rule == "anyOf" and first.path[-1:] == ("type",):  # "strin", say
        return (
            f"keyword '{first.field}': must name a JSON type (array, boolean, integer, null,"
            " number, object, string) or list them"
        )
    hint = ""
    if dialect == "2020-12" and first.path[-1:] == ("items",) and first.message.endswith("array"):
        # Unless "items" names a property (a map's key is a name, not a keyword).
        hint = "" if first.path[-2:-1] in _MAPS else " (a list of item schemas is prefixItems)"
    return first.describe("keyword", "schema") + hint
