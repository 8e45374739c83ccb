"""The metaschema check agrees with the jsonschema reference on which schemas are well formed.

`agora.mcp.metaschema` is written from the specification, not copied: this checks its verdict
(`malformed_keyword`) against ``jsonschema``'s ``check_schema`` (a test dependency only) over
every keyword 2020-12 knows, and some it does not, each given every value of a pool of JSON
values, at the root, under ``properties`` and under ``items``, in 2020-12 (the MCP default)
and 2019-09; plus a list of schemas where 2020-12 and draft-07 differ. A schema the reference
refuses must also never compile (`compile_validator` refuses it as a `SchemaError`, whatever
the rewrite to draft-07 would have made of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.mcp.validation import SchemaError, compile_validator, malformed_keyword

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Values of every JSON shape a keyword might be given by mistake (no invalid regex: the
#: reference checks ``pattern`` as a format, and agora leaves that to the compiler).
POOL: list[Any] = [
    None,
    True,
    0,
    -1,
    2.0,
    1.5,
    "",
    "a",
    [],
    ["a"],
    ["a", "a"],
    [1],
    [{}],
    ["string", "null"],
    {},
    {"a": {}},
    {"a": "b"},
    {"a": ["b"]},
    {"a": ["b", "b"]},
    {"a": 1},
    {"type": "string"},
    {"type": 1},
]
#: Every keyword of the 2020-12 vocabularies (core, applicator, unevaluated, validation,
#: meta-data, format annotation, content) and of its metaschema's deprecated part, but $schema.
KEYWORDS = [
    *("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$ref", "$vocabulary", "$comment"),
    *("$defs", "prefixItems", "items", "contains", "additionalProperties", "properties"),
    *("patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else"),
    *("allOf", "anyOf", "oneOf", "not", "unevaluatedItems", "unevaluatedProperties", "type"),
    *("const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum"),
    *("exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"),
    *("uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"),
    *("required", "dependentRequired", "title", "description", "default", "deprecated"),
    *("readOnly", "writeOnly", "examples", "format", "contentEncoding", "contentMediaType"),
    *("contentSchema", "definitions", "dependencies", "$recursiveAnchor", "$recursiveRef"),
]
#: Keywords no 2020-12 vocabulary has (``additionalItems`` left with draft 2019-09).
UNKNOWN = ["additionalItems", "x-agora", "nullable"]
DIALECTS = {
    "2020-12": (None, jsonschema.Draft202012Validator),
    "2019-09": ("https://json-schema.org/draft/2019-09/schema", jsonschema.Draft201909Validator),
}


def _schemas(uri: str | None) -> Iterator[dict[str, Any]]:
    head = {} if uri is None else {"$schema": uri}
    for keyword in KEYWORDS + UNKNOWN:
        for value in POOL:
            node = {keyword: value}
            yield {**head, **node}
            yield {**head, "type": "object", "properties": {"x": node}}
            yield {**head, "type": "array", "items": node}


def _reference_verdict(validator: type[Any], schema: dict[str, Any]) -> bool:
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


def _compiles(schema: dict[str, Any]) -> bool:
    try:
        compile_validator(schema)
    except SchemaError:
        return False
    return True


@pytest.mark.parametrize(("uri", "validator"), DIALECTS.values(), ids=DIALECTS.keys())
def test_the_metaschema_check_agrees_with_the_reference(uri: str | None, validator: Any) -> None:
    disagreements, compiled, checked = [], [], 0
    for schema in _schemas(uri):
        checked += 1
        well_formed = _reference_verdict(validator, schema)
        if (malformed_keyword(schema) is None) != well_formed:
            disagreements.append(schema)
        elif not well_formed and _compiles(schema):
            compiled.append(schema)
    assert checked > 3000
    assert disagreements == []
    assert compiled == []


#: Hand-picked schemas, good and bad, where a dialect differs from draft-07.
LISTED: list[tuple[dict[str, Any], bool]] = [
    ({"type": "array", "items": [{}]}, False),
    ({"type": "array", "prefixItems": [{}], "items": False}, True),
    ({"type": "array", "prefixItems": [{}], "additionalItems": 3}, True),
    ({"$id": "https://example.com/s.json#"}, True),
    ({"$id": "https://example.com/s.json#frag"}, False),
    ({"$anchor": "_private.1"}, True),
    ({"$anchor": "a:b"}, False),
    ({"$recursiveAnchor": True}, False),
    ({"$ref": "#/$defs/a", "$defs": {"a": {}}, "minProperties": 1}, True),
    ({"const": None}, True),
    ({"const": {"a": [1, {"b": None}]}}, True),
    ({"enum": []}, True),
    ({"enum": [1, 1]}, True),
    ({"enum": "a"}, False),
    ({"type": []}, False),
    ({"type": ["string", "string"]}, False),
    ({"required": ["a", "a"]}, False),
    ({"minContains": 2.0}, True),
    ({"minContains": True}, False),
    ({"multipleOf": 0}, False),
    ({"dependencies": {"a": ["b"], "c": {}}}, True),
    ({"dependencies": {"a": "b"}}, False),
    ({"definitions": {"a": 1}}, False),
    ({"$vocabulary": {"https://json-schema.org/draft/2020-12/vocab/core": True}}, True),
]


@pytest.mark.parametrize(
    ("schema", "well_formed"),
    [pytest.param(s, ok, id=f"{'good' if ok else 'bad'}-{i}") for i, (s, ok) in enumerate(LISTED)],
)
def test_listed_2020_12_schemas_get_the_reference_verdict(
    schema: dict[str, Any], well_formed: bool
) -> None:
    assert _reference_verdict(jsonschema.Draft202012Validator, schema) is well_formed
    assert (malformed_keyword(schema) is None) is well_formed
