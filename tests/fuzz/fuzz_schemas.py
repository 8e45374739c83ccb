"""Hypothesis strategies for tool arguments: from a served inputSchema, then mutated.

`arguments(schema, pool)` draws an object that mostly follows the schema (types, enums,
patterns, lengths, bounds, required and optional properties, ``anyOf``); string properties
with a pattern sometimes take a value harvested from earlier results (``pool``), so calls
reach real entities. `mutated(schema, pool)` then breaks it the way a hostile or confused
client would: wrong types, boundary and oversize lengths, unicode edge cases, lone
surrogates (only expressible in raw JSON), deep nesting, huge numbers, null bytes,
duplicate keys, unknown or missing properties, non-object arguments.

Values that plain JSON cannot carry are `Raw` fragments and `Dup` objects, written verbatim
by `dumps`. The strategies know nothing about agora: only JSON Schema.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

#: Strings a parser, a normaliser or a database may treat specially.
UNICODE_EDGES = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202e\u0041\u202c",  # right-to-left override
    "e\u0301",  # combining accent
    "\ufeff",  # byte-order mark
    "\uffff\ufffe",  # non-characters
    "\U0001f600" * 3,
    "\u0130\u0131\u00df",  # case-folding oddities
    "%s%n{0}${x}",
    "'; DROP TABLE x; --",
    "\\u0000",
    "\r\n\t\x0b\x0c",
    "\u2028\u2029",
    "\U000e0041",  # tag character
]
#: JSON fragments that Python's json module will not write.
RAW_EDGES = [
    '"\\ud800"',  # lone high surrogate
    '"a\\udfffb"',  # lone low surrogate
    '"\\udc00\\ud800"',  # reversed pair
    "1e400",
    "-1e400",
    "1e-400",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "18446744073709551616",
    "9007199254740993",
    "-0",
    "0.0000000000000000000000001",
    "NaN",
    "Infinity",
    '"\\u0000"',
]


class Raw(str):
    """A JSON fragment written as it is."""

    __slots__ = ()


class Dup(list):  # type: ignore[type-arg]
    """An object given as (key, value) pairs, so a key may repeat."""

    __slots__ = ()


def dumps(value: Any) -> str:
    """JSON text of ``value``, with `Raw` fragments and `Dup` objects written verbatim."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Dup):
        return "{" + ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return kind
    if isinstance(kind, str):
        return [kind]
    if "properties" in schema:
        return ["object"]
    return ["string", "integer", "boolean", "null"]


def _string(schema: dict[str, Any], pool: list[str]) -> st.SearchStrategy[Any]:
    low = schema.get("minLength", 0)
    high = min(schema.get("maxLength", 40), low + 200)
    pattern = schema.get("pattern")
    if pattern is None:
        return st.text(min_size=low, max_size=high)
    try:
        generated = st.from_regex(pattern, fullmatch=True)
    except Exception:  # a pattern hypothesis cannot read: draw plain text instead
        generated = st.text(max_size=high)
    fitting = generated.filter(lambda s: low <= len(s) <= max(high, low))
    known = st.integers(0, 10**6).map(lambda i: pool[i % len(pool)] if pool else "")
    return st.one_of(fitting, known)


def value_of(schema: Any, pool: list[str], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that mostly follow ``schema`` (a JSON Schema, draft-07 keywords)."""
    if not isinstance(schema, dict) or depth > 6:
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([value_of(s, pool, depth + 1) for s in schema[key]])
    options = [_typed(kind, schema, pool, depth) for kind in _types(schema)]
    return st.one_of(options) if options else st.none()


def _typed(kind: str, schema: dict[str, Any], pool: list[str], depth: int) -> Any:
    if kind == "string":
        return _string(schema, pool)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**6)))
        high = schema.get("maximum", 10**6)
        ints = st.integers(int(low), int(high))
        return ints if kind == "integer" else st.one_of(ints, st.floats(low, high))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", 4), low + 4)
        item = value_of(schema.get("items", {}), pool, depth + 1)
        return st.lists(item, min_size=low, max_size=high)
    if kind == "object":
        return _object(schema, pool, depth)
    return st.none()


def _object(schema: dict[str, Any], pool: list[str], depth: int) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = [k for k in schema.get("required", []) if k in props]
    optional = [k for k in props if k not in required]
    fixed = st.fixed_dictionaries(
        {k: value_of(props[k], pool, depth + 1) for k in required},
        optional={k: value_of(props[k], pool, depth + 1) for k in optional},
    )
    return fixed


def arguments(schema: dict[str, Any], pool: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """An arguments object drawn from a tool's inputSchema."""
    return _object(schema, pool, 0)


# -- mutations ---------------------------------------------------------------------------------

_ANY_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(), inner)),
    max_leaves=6,
)


def _nested(levels: int) -> Any:
    value: Any = "deep"
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


_HOSTILE_VALUE = st.one_of(
    _ANY_JSON,
    st.sampled_from(UNICODE_EDGES),
    st.sampled_from(RAW_EDGES).map(Raw),
    st.integers(2, 60).map(_nested),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -1, 0, 1.5, True, False]),
    st.integers(0, 70_000).map(lambda n: "x" * n),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=30),
)


def _boundary_strings(schema: dict[str, Any]) -> list[str]:
    out = []
    for key in ("minLength", "maxLength"):
        if key in schema:
            n = schema[key]
            out += ["a" * max(0, n - 1), "a" * n, "a" * (n + 1), "\U0001f600" * n]
    return out


def mutated(schema: dict[str, Any], pool: list[str]) -> st.SearchStrategy[Any]:
    """Arguments from ``schema`` with one to three hostile changes (or a non-object)."""
    return _mutate(arguments(schema, pool), schema.get("properties", {}))


_NON_OBJECT = st.one_of(_HOSTILE_VALUE, st.just(Raw("[1,2]")), st.just(Raw('"x"')))


@st.composite
def _mutate(draw: st.DrawFn, base: st.SearchStrategy[Any], props: dict[str, Any]) -> Any:
    args: dict[str, Any] = draw(base)
    if draw(st.integers(0, 19)) == 0:
        return draw(_NON_OBJECT)
    for _ in range(draw(st.integers(1, 3))):
        move = draw(st.integers(0, 6))
        names = sorted(set(props) | set(args))
        if move == 0 and names:  # a hostile value in a known property
            args[draw(st.sampled_from(names))] = draw(_HOSTILE_VALUE)
        elif move == 1 and props:  # a boundary length
            name = draw(st.sampled_from(sorted(props)))
            edges = _boundary_strings(props[name]) or UNICODE_EDGES
            args[name] = draw(st.sampled_from(edges))
        elif move == 2 and args:  # a required property missing
            del args[draw(st.sampled_from(sorted(args)))]
        elif move == 3:  # an unknown property, maybe with a NUL in its name
            args[draw(st.sampled_from(["extra", "a\x00b", "__proto__", "", "constructor"]))] = 1
        elif move == 4 and names:  # the same key twice, the second hostile
            name = draw(st.sampled_from(names))
            pairs = [*args.items(), (name, draw(_HOSTILE_VALUE))]
            return Dup(pairs)
        elif move == 5 and names:  # a lone surrogate or huge number as raw JSON
            args[draw(st.sampled_from(names))] = Raw(draw(st.sampled_from(RAW_EDGES)))
        elif move == 6 and names:  # wrong type for a valid value
            name = draw(st.sampled_from(names))
            args[name] = draw(st.sampled_from([[args.get(name)], {"v": args.get(name)}, None]))
    return args
