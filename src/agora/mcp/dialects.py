"""JSON Schema dialects: the draft-04/06/07 form of a contract schema that fastjsonschema compiles.

`dialect_of` says which dialect a schema is written in: the one its ``$schema`` names (draft-04,
-06, -07, 2019-09 or 2020-12; any other is refused with `SchemaError`, as MCP asks of a dialect
a server does not support), or 2020-12, the MCP default, without one. A 2019-09 or 2020-12
schema is rewritten to draft-07 where the meaning is the same (``prefixItems``,
``dependentRequired``, ``dependentSchemas``, ``$ref`` with siblings), without the draft-07
keywords its dialect does not have (which its validators ignore), and refused with
`SchemaError` where it has no draft-07 form. A remote ``$ref`` is refused, never fetched.
Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.errors import AgoraError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_DIALECT",
    "DRAFT_07",
    "HANDLERS",
    "SchemaError",
    "dialect_of",
    "normalise_schema",
]

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
#: The dialect of a schema without ``$schema`` (MCP's default since its 2025-11-25 revision).
DEFAULT_DIALECT = "2020-12"
#: The dialects compiled, by their ``$schema`` URI without its scheme and empty fragment.
_DIALECTS = {
    "json-schema.org/draft-04/schema": "draft-04",
    "json-schema.org/draft-06/schema": "draft-06",
    "json-schema.org/draft-07/schema": "draft-07",
    "json-schema.org/draft/2019-09/schema": "2019-09",
    "json-schema.org/draft/2020-12/schema": "2020-12",
}
_LATE_DIALECTS = ("2019-09", "2020-12")
_UNSUPPORTED = frozenset(
    {"unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains", "$dynamicRef"}
    | {"$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"}
)
# Keywords whose value is a schema or a list of schemas, and those holding a map of schemas.
_SUBSCHEMAS = frozenset(
    {"additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if", "then"}
    | {"else", "items", "prefixItems", "allOf", "anyOf", "oneOf"}
)
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"}
)


class SchemaError(AgoraError, ValueError):
    """A schema cannot be compiled: a bad regex, a remote ``$ref``, or no draft-07 form."""


def _refuse_remote(uri: str) -> Any:
    raise SchemaError(f"remote $ref {uri!r} is not fetched: inline it in the contract")


#: Belt and braces: fastjsonschema would otherwise fetch unknown schemes with urllib.
HANDLERS = dict.fromkeys(("http", "https", "file", "ftp", "data", "urn"), _refuse_remote)


#: Words a late dialect does not know, which draft-07 would enforce: moved out of the way in its
#: rewrite (under `ASIDE`, where a ``$ref`` into them still finds them), as a validator of that
#: dialect ignores them (``dependencies`` was split into ``dependentRequired`` and
#: ``dependentSchemas`` in 2019-09; 2020-12 replaced the ``items`` list and ``additionalItems``
#: with ``prefixItems`` and ``items``, which 2019-09 lacks).
_NOT_KEYWORDS = {
    "2019-09": frozenset({"dependencies", "prefixItems"}),
    "2020-12": frozenset({"dependencies", "additionalItems"}),
}
#: Where a rewrite keeps the words its dialect lacks: no keyword of any dialect.
ASIDE = "x-agora-not-keywords"


def _pointer(path: str, key: str | int) -> str:
    """``path`` (a JSON pointer) one step further, by ``key`` (escaped: RFC 6901)."""
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _children(node: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """The subschemas of ``node`` (at ``path``), each with its pointer."""
    found: list[tuple[str, Any]] = []
    for key, value in node.items():
        here = _pointer(path, key)
        if key in _SUBSCHEMAS and isinstance(value, list):
            found += [(_pointer(here, i), item) for i, item in enumerate(value)]
        elif key in _SUBSCHEMAS:
            found.append((here, value))
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            found += [(_pointer(here, name), sub) for name, sub in value.items()]
    return found


def _set_aside(node: Any, ignored: frozenset[str], path: str = "") -> dict[str, str]:
    """The pointers of ``node``'s words in ``ignored``, wherever they are, each with the
    pointer it gets under `ASIDE`."""
    moved: dict[str, str] = {}
    todo = [(path, node)]
    while todo:
        here, schema = todo.pop()
        if not isinstance(schema, dict):
            continue
        for key in sorted(ignored.intersection(schema)):
            moved[_pointer(here, key)] = _pointer(f"/{ASIDE}", len(moved))
        todo += _children(schema, here)
    return moved


def _moved_ref(ref: str, moved: dict[str, str]) -> str:
    """``ref`` pointing where a word set aside went, if it pointed into one."""
    for old, new in moved.items():
        if ref == f"#{old}" or ref.startswith(f"#{old}/"):
            return f"#{new}{ref[len(old) + 1 :]}"
    return ref


def _prepare(
    node: Any, late: str | None, moved: dict[str, str], aside: dict[str, Any], path: str = ""
) -> Any:
    """Copy a schema node, refusing remote refs and (``late``: the 2019-09 or 2020-12
    dialect it is written in) rewriting its keywords to draft-07's: a word of ``moved`` (by
    pointer) goes to ``aside`` instead, and a ``$ref`` into one follows it."""
    if isinstance(node, list):
        return [
            _prepare(item, late, moved, aside, _pointer(path, i)) for i, item in enumerate(node)
        ]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        _refuse_remote(ref)
    if late and (found := _UNSUPPORTED.intersection(node)):
        raise SchemaError(f"keyword {min(found)!r} has no draft-07 form and is not supported")
    out: dict[str, Any] = {}
    for key, value in node.items():
        here = _pointer(path, key)
        if key in _SUBSCHEMAS:
            prepared = _prepare(value, late, moved, aside, here)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            prepared = {
                name: _prepare(sub, late, moved, aside, _pointer(here, name))
                for name, sub in value.items()
            }
        elif key == "$ref" and isinstance(value, str):
            prepared = _moved_ref(value, moved)
        else:
            prepared = value
        if here in moved:
            aside[moved[here].rpartition("/")[2]] = prepared
        else:
            out[key] = prepared
    return _to_draft07(out) if late else out


def _to_draft07(out: dict[str, Any]) -> dict[str, Any]:
    if "prefixItems" in out:
        if "items" in out:
            out["additionalItems"] = out.pop("items")
        out["items"] = out.pop("prefixItems")
    deps: dict[str, Any] = {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        for name, rule in out.pop(key, {}).items():
            # One name in two of these: draft-07 takes one rule per name, so both must hold.
            deps[name] = (
                {"allOf": [_as_schema(deps[name]), _as_schema(rule)]} if name in deps else rule
            )
    if deps:
        out["dependencies"] = deps
    if "$ref" in out and out.keys() - {"$ref", "$schema", "$id", "$comment", "$defs"}:
        # draft-07 ignores the siblings of $ref; 2019-09 and later apply both.
        out["allOf"] = [*out.get("allOf", []), {"$ref": out.pop("$ref")}]
    return out


def _as_schema(dependency: Any) -> Any:
    """A draft-07 ``dependencies`` value as a schema: a list of names is their ``required``."""
    return {"required": dependency} if isinstance(dependency, list) else dependency


def dialect_of(schema: Mapping[str, Any] | bool) -> str:
    """The dialect ``schema`` is written in, by its ``$schema`` (http or https, with or without
    the empty fragment ``#``), or `DEFAULT_DIALECT` without one.

    Returns:
        ``"draft-04"``, ``"draft-06"``, ``"draft-07"``, ``"2019-09"`` or ``"2020-12"``.

    Raises:
        SchemaError: ``$schema`` is not a string, or names a dialect not listed above.
    """
    if isinstance(schema, bool) or "$schema" not in schema:
        return DEFAULT_DIALECT
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise SchemaError("keyword '$schema': must be a string, the URI of a dialect")
    dialect = _DIALECTS.get(uri.removesuffix("#").removeprefix("https://").removeprefix("http://"))
    if dialect is None:
        raise SchemaError(
            f"keyword '$schema': {uri[:120]!r} names no dialect agora compiles (draft-04, draft-06,"
            " draft-07, 2019-09 or 2020-12, e.g. https://json-schema.org/draft/2020-12/schema;"
            " without $schema a schema is 2020-12)"
        )
    return dialect


def normalise_schema(schema: Mapping[str, Any] | bool) -> dict[str, Any] | bool:
    """Return the draft-04/06/07 schema that fastjsonschema compiles for ``schema``.

    Args:
        schema: A contract schema of any supported dialect.

    Returns:
        A copy of a draft-04/06/07 schema; a draft-07 rewrite of a 2019-09 or 2020-12 one (a
        schema without ``$schema`` counts as 2020-12).

    Raises:
        SchemaError: The schema uses a keyword with no draft-07 form, or a remote ``$ref``, or
            its ``$schema`` names no dialect (`dialect_of`).
    """
    if isinstance(schema, bool):
        return schema
    dialect = dialect_of(schema)
    late = dialect if dialect in _LATE_DIALECTS else None
    moved = _set_aside(schema, _NOT_KEYWORDS[late]) if late else {}
    aside: dict[str, Any] = {}
    out: dict[str, Any] = _prepare(dict(schema), late, moved, aside)
    if aside:
        out[ASIDE] = aside
    if late:
        out["$schema"] = DRAFT_07
    return out
