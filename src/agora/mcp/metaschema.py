"""The JSON Schema metaschemas: what a schema's keywords must look like, per dialect.

`agora.mcp.validation.compile_validator` checks every schema, as written, against the
metaschema of its dialect (`agora.mcp.dialects.dialect_of`: its ``$schema``, or 2020-12, the
MCP default) before rewriting and compiling it, so that a malformed keyword
(``"additionalProperties": "no"``, ``"properties": ["x"]``, ``"prefixItems": {}``) is refused,
named by its path as written, where fastjsonschema would ignore it or fail with an error of its
own.

Each is the shape rules of the dialect's specification, written as a draft-07 schema (the
dialect fastjsonschema compiles), without annotations (titles, defaults) and ``format``s,
which are not checked; unknown keywords are let by, as every dialect does. `DRAFT_07` (also
for draft-06) has ``$defs`` besides ``definitions``, since the draft-07 form keeps it;
`DRAFT_04` takes draft-04's boolean ``exclusiveMaximum`` and ``exclusiveMinimum``.
`DRAFT_2020_12` adds the keywords of 2019-09 and 2020-12 (``prefixItems``, ``$anchor``,
``dependentRequired``, ``unevaluatedProperties``, ``minContains``, ``contentSchema``, ...),
takes ``items`` as one schema (a list moved to ``prefixItems``) and drops ``additionalItems``;
`DRAFT_2019_09` keeps draft-07's ``items`` and ``additionalItems``. Pure data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BY_DIALECT", "DRAFT_04", "DRAFT_07", "DRAFT_2019_09", "DRAFT_2020_12"]

_SCHEMA: dict[str, Any] = {"$ref": "#"}
_MAP: dict[str, Any] = {"type": "object", "additionalProperties": _SCHEMA}
_COUNT: dict[str, Any] = {"$ref": "#/definitions/nonNegativeInteger"}
_STRING: dict[str, Any] = {"type": "string"}
_STRINGS: dict[str, Any] = {"$ref": "#/definitions/stringArray"}
_SCHEMAS: dict[str, Any] = {"$ref": "#/definitions/schemaArray"}
_ANCHOR: dict[str, Any] = {"type": "string", "pattern": "^[A-Za-z_][-A-Za-z0-9._]*$"}

DRAFT_07: dict[str, Any] = {
    "definitions": {
        "schemaArray": {"type": "array", "minItems": 1, "items": _SCHEMA},
        "nonNegativeInteger": {"type": "integer", "minimum": 0},
        "simpleTypes": {
            "enum": ["array", "boolean", "integer", "null", "number", "object", "string"]
        },
        "stringArray": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "type": ["object", "boolean"],
    "properties": {
        "$id": {"type": "string"},
        "$schema": {"type": "string"},
        "$ref": {"type": "string"},
        "$comment": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "readOnly": {"type": "boolean"},
        "writeOnly": {"type": "boolean"},
        "examples": {"type": "array"},
        "multipleOf": {"type": "number", "exclusiveMinimum": 0},
        "maximum": {"type": "number"},
        "exclusiveMaximum": {"type": "number"},
        "minimum": {"type": "number"},
        "exclusiveMinimum": {"type": "number"},
        "maxLength": _COUNT,
        "minLength": _COUNT,
        "pattern": {"type": "string"},
        "additionalItems": _SCHEMA,
        "items": {"anyOf": [_SCHEMA, {"$ref": "#/definitions/schemaArray"}]},
        "maxItems": _COUNT,
        "minItems": _COUNT,
        "uniqueItems": {"type": "boolean"},
        "contains": _SCHEMA,
        "maxProperties": _COUNT,
        "minProperties": _COUNT,
        "required": {"$ref": "#/definitions/stringArray"},
        "additionalProperties": _SCHEMA,
        "definitions": _MAP,
        "$defs": _MAP,
        "properties": _MAP,
        "patternProperties": _MAP,
        "dependencies": {
            "type": "object",
            "additionalProperties": {"anyOf": [_SCHEMA, {"$ref": "#/definitions/stringArray"}]},
        },
        "propertyNames": _SCHEMA,
        "enum": {"type": "array"},
        "type": {
            "anyOf": [
                {"$ref": "#/definitions/simpleTypes"},
                {
                    "type": "array",
                    "items": {"$ref": "#/definitions/simpleTypes"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ]
        },
        "format": {"type": "string"},
        "contentMediaType": {"type": "string"},
        "contentEncoding": {"type": "string"},
        "if": _SCHEMA,
        "then": _SCHEMA,
        "else": _SCHEMA,
        "allOf": {"$ref": "#/definitions/schemaArray"},
        "anyOf": {"$ref": "#/definitions/schemaArray"},
        "oneOf": {"$ref": "#/definitions/schemaArray"},
        "not": _SCHEMA,
    },
}

DRAFT_04: dict[str, Any] = {
    **DRAFT_07,
    "properties": {
        **DRAFT_07["properties"],
        "id": {"type": "string"},
        "exclusiveMaximum": {"type": "boolean"},
        "exclusiveMinimum": {"type": "boolean"},
    },
}

#: Keywords of 2019-09 and 2020-12 alike (the applicator, unevaluated, validation, meta-data
#: and content vocabularies; ``$id`` without a fragment, which ``$anchor`` replaced).
_LATE: dict[str, Any] = {
    "$id": {"type": "string", "pattern": "^[^#]*#?$"},
    "$vocabulary": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "$recursiveRef": _STRING,
    "dependentSchemas": _MAP,
    "dependentRequired": {"type": "object", "additionalProperties": _STRINGS},
    "unevaluatedItems": _SCHEMA,
    "unevaluatedProperties": _SCHEMA,
    "minContains": _COUNT,
    "maxContains": _COUNT,
    "contentSchema": _SCHEMA,
    "deprecated": {"type": "boolean"},
}

DRAFT_2020_12: dict[str, Any] = {
    **DRAFT_07,
    "properties": {
        **{key: rule for key, rule in DRAFT_07["properties"].items() if key != "additionalItems"},
        **_LATE,
        "$anchor": _ANCHOR,
        "$dynamicAnchor": _ANCHOR,
        "$dynamicRef": _STRING,
        "$recursiveAnchor": _ANCHOR,  # 2019-09's boolean, deprecated: an anchor name now
        "prefixItems": _SCHEMAS,
        "items": _SCHEMA,
    },
}

DRAFT_2019_09: dict[str, Any] = {
    **DRAFT_07,
    "properties": {
        **DRAFT_07["properties"],
        **_LATE,
        # 2020-12 took ":" out of anchor names and let them start with "_".
        "$anchor": {"type": "string", "pattern": "^[A-Za-z][-A-Za-z0-9.:_]*$"},
        "$recursiveAnchor": {"type": "boolean"},
    },
}

#: The metaschema of each dialect `agora.mcp.dialects.dialect_of` names.
BY_DIALECT: dict[str, dict[str, Any]] = {
    "draft-04": DRAFT_04,
    "draft-06": DRAFT_07,
    "draft-07": DRAFT_07,
    "2019-09": DRAFT_2019_09,
    "2020-12": DRAFT_2020_12,
}
