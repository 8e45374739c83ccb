"""The JSON Schema draft-07 metaschema: what a schema's keywords must look like.

`agora.mcp.validation.compile_validator` checks the draft-07 form of every schema
(`agora.mcp.dialects.normalise_schema`) against it before compiling, so that a malformed
keyword (``"additionalProperties": "no"``, ``"properties": ["x"]``, ``"required": "x"``) is
refused, named, where fastjsonschema would ignore it or fail with an error of its own.

The official draft-07 metaschema (json-schema.org), without its annotations (titles,
defaults) and ``format``s, which are not checked; plus ``$defs``, the 2019-09 and later name
of ``definitions``, which the draft-07 form keeps. `DRAFT_04` takes draft-04's boolean
``exclusiveMaximum`` and ``exclusiveMinimum``. Pure data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DRAFT_04", "DRAFT_07"]

_SCHEMA: dict[str, Any] = {"$ref": "#"}
_MAP: dict[str, Any] = {"type": "object", "additionalProperties": _SCHEMA}
_COUNT: dict[str, Any] = {"$ref": "#/definitions/nonNegativeInteger"}

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
