"""A keyword that draft 2020-12 forbids is refused when the schema is compiled, by name.

MCP's tool schemas default to JSON Schema 2020-12. Every schema was checked against the draft-07
metaschema only, after its rewrite to draft-07: ``"prefixItems": {}`` or
``"dependentSchemas": [{}]`` passed (or crashed the rewrite with a bare ``TypeError``), an
``items`` list (a 2020-12 schema's item schemas go in ``prefixItems``) was compiled as a
draft-07 tuple, and a refusal named the rewritten keyword (``dependencies.a`` for
``dependentRequired.a``). Now the schema is checked as written against the metaschema of its
dialect (its ``$schema``, or 2020-12), and a ``$schema`` naming no known dialect is refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from agora.mcp.validation import SchemaError, compile_validator

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2019_09 = "https://json-schema.org/draft/2019-09/schema"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _at_x(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}}


#: A schema with a mistake draft 2020-12 forbids, and the keyword (its path) the refusal names.
MALFORMED = {
    "prefixItems-object": (
        _at_x({"type": "array", "prefixItems": {"type": "string"}}),
        "keyword 'properties.x.prefixItems': must be an array, got object",
    ),
    "prefixItems-empty": (
        _at_x({"type": "array", "prefixItems": []}),
        r"keyword 'properties.x.prefixItems': must have at least 1 item\b",
    ),
    "prefixItems-member-string": (
        _at_x({"type": "array", "prefixItems": ["string"]}),
        r"keyword 'properties.x.prefixItems\[0\]': must be an object or a boolean, got string",
    ),
    "items-list": (
        _at_x({"type": "array", "items": [{"type": "string"}]}),
        "keyword 'properties.x.items': must be an object or a boolean, got array"
        r" \(a list of item schemas is prefixItems\)",
    ),
    "items-list-explicit-2020-12": (
        {"$schema": DRAFT_2020_12, **_at_x({"items": [{}]})},
        "keyword 'properties.x.items': must be an object or a boolean, got array",
    ),
    "defs-list": (
        {"type": "object", "$defs": [{"type": "string"}]},
        r"keyword '\$defs': must be an object, got array",
    ),
    "dependentRequired-string": (
        {"type": "object", "dependentRequired": {"a": "b"}},
        "keyword 'dependentRequired.a': must be an array, got string",
    ),
    "dependentRequired-list": (
        {"type": "object", "dependentRequired": ["a"]},
        "keyword 'dependentRequired': must be an object, got array",
    ),
    "dependentRequired-integer": (
        {"type": "object", "dependentRequired": {"a": [1]}},
        r"keyword 'dependentRequired.a\[0\]': must be a string, got integer",
    ),
    "dependentSchemas-list": (
        {"type": "object", "dependentSchemas": [{}]},
        "keyword 'dependentSchemas': must be an object, got array",
    ),
    "dependentSchemas-member-string": (
        {"type": "object", "dependentSchemas": {"a": "b"}},
        "keyword 'dependentSchemas.a': must be an object or a boolean, got string",
    ),
    "unevaluatedProperties-string": (
        {"type": "object", "unevaluatedProperties": "no"},
        "keyword 'unevaluatedProperties': must be an object or a boolean, got string",
    ),
    "unevaluatedItems-integer": (
        _at_x({"type": "array", "unevaluatedItems": 3}),
        "keyword 'properties.x.unevaluatedItems': must be an object or a boolean, got integer",
    ),
    "minContains-negative": (
        _at_x({"contains": {}, "minContains": -1}),
        "keyword 'properties.x.minContains': must be >= 0",
    ),
    "maxContains-string": (
        _at_x({"contains": {}, "maxContains": "2"}),
        "keyword 'properties.x.maxContains': must be an integer, got string",
    ),
    "anchor-integer": (
        {"type": "object", "$anchor": 3},
        r"keyword '\$anchor': must be a string, got integer",
    ),
    "anchor-not-a-name": (
        {"type": "object", "$anchor": "1st"},
        r"keyword '\$anchor': must match pattern",
    ),
    "dynamicRef-integer": (
        {"type": "object", "$dynamicRef": 3},
        r"keyword '\$dynamicRef': must be a string, got integer",
    ),
    "dynamicAnchor-list": (
        {"type": "object", "$dynamicAnchor": ["a"]},
        r"keyword '\$dynamicAnchor': must be a string, got array",
    ),
    "id-with-fragment": (
        {"type": "object", "$defs": {"a": {"$id": "a.json#part"}}},
        r"keyword '\$defs.a.\$id': must match pattern",
    ),
    "contentSchema-string": (
        _at_x({"type": "string", "contentSchema": "object"}),
        "keyword 'properties.x.contentSchema': must be an object or a boolean, got string",
    ),
    "contentEncoding-integer": (
        _at_x({"type": "string", "contentEncoding": 64}),
        "keyword 'properties.x.contentEncoding': must be a string, got integer",
    ),
    "deprecated-string": (
        _at_x({"deprecated": "yes"}),
        "keyword 'properties.x.deprecated': must be a boolean, got string",
    ),
    "vocabulary-not-booleans": (
        {"type": "object", "$vocabulary": {DRAFT_2020_12: "yes"}},
        r"keyword '\$vocabulary\.",
    ),
    "ref-integer-with-siblings": (
        {"type": "object", "$ref": 3},
        r"keyword '\$ref': must be a string, got integer",
    ),
    "schema-unknown-dialect": (
        {"$schema": "https://example.com/my-dialect", "type": "object"},
        r"keyword '\$schema': 'https://example.com/my-dialect' names no dialect agora compiles",
    ),
    "schema-misspelt-draft": (
        {"$schema": "http://json-schema.org/draft-7/schema#", "type": "object"},
        r"keyword '\$schema': .* names no dialect agora compiles",
    ),
    "schema-not-a-string": (
        {"$schema": 7, "type": "object"},
        r"keyword '\$schema': must be a string",
    ),
    "2019-09-anchor-underscore": (
        {"$schema": DRAFT_2019_09, "type": "object", "$anchor": "_a"},
        r"keyword '\$anchor': must match pattern",
    ),
}


#: Schemas each dialect allows, some of which another forbids: they must still compile.
WELL_FORMED = {
    "draft-07-items-list": {"$schema": DRAFT_07, **_at_x({"items": [{"type": "string"}]})},
    "draft-07-without-fragment": {"$schema": DRAFT_07.removesuffix("#"), "type": "object"},
    "draft-07-https": {"$schema": DRAFT_07.replace("http:", "https:"), "type": "object"},
    "draft-07-fragment-id": {"$schema": DRAFT_07, "type": "object", "$id": "#here"},
    "2019-09-items-list": {
        "$schema": DRAFT_2019_09,
        **_at_x({"items": [{"type": "string"}], "additionalItems": False}),
    },
    "2020-12-explicit-with-fragment": {"$schema": DRAFT_2020_12 + "#", "type": "object"},
    "2020-12-every-shape": {
        "type": "object",
        "$id": "https://example.com/tool.json",
        "$anchor": "top",
        "$comment": "all of them",
        "$defs": {"pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}},
        "properties": {
            "p": {"$ref": "#/$defs/pair", "description": "a sibling of $ref"},
            "a": {"deprecated": True, "const": {"any": ["json"]}},
            "b": {"enum": [], "contentEncoding": "base64", "contentMediaType": "image/png"},
            "c": {"type": "string", "contentSchema": {"type": "object"}},
        },
        "dependentRequired": {"a": ["b"], "c": []},
        "dependentSchemas": {"b": {"required": ["c"]}},
    },
}


@pytest.mark.parametrize("schema", WELL_FORMED.values(), ids=WELL_FORMED.keys())
def test_a_schema_its_dialect_allows_still_compiles(schema: Any) -> None:
    compile_validator(schema)


def test_a_2020_12_items_list_is_not_compiled_as_a_draft_07_tuple() -> None:
    # It was: the list's schemas checked the first items and left the others free.
    with pytest.raises(SchemaError, match="prefixItems"):
        compile_validator({"type": "array", "items": [{"type": "string"}]})
    tuple_ = compile_validator({"type": "array", "prefixItems": [{"type": "string"}]})
    assert tuple_.is_valid(["a", 1])
    assert not tuple_.is_valid([1])
