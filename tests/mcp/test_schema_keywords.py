"""A malformed schema keyword is refused when the schema is compiled, by name.

Every schema is checked against the JSON Schema metaschema of its dialect (2020-12 without
``$schema``; the 2020-12 keywords in `test_schema_keywords_2020`) before it is compiled:
fastjsonschema accepted
``"additionalProperties": "no"`` in silence (a tool whose schema said no extra fields took
any), and crashed on ``"properties": ["x"]`` with a bare ``AttributeError`` that named no
toolset and no tool. Whatever else fastjsonschema raises on a schema is a `SchemaError` too,
so `open_server` refuses the toolset with its one `ValueError` naming the toolset and tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from test_schema_keywords_2020 import MALFORMED as MALFORMED_2020

from agora.config import Config
from agora.mcp.validation import SchemaError, compile_validator
from agora.server.embed import open_server
from agora.toolsets.base import Toolset

if TYPE_CHECKING:
    from pathlib import Path

#: A malformed schema and the keyword (its path in the schema) the refusal names.
MALFORMED = {
    "additionalProperties-string": (
        {"type": "object", "additionalProperties": "no"},
        "keyword 'additionalProperties': must be an object or a boolean",
    ),
    "properties-list": (
        {"type": "object", "properties": ["x"]},
        "keyword 'properties': must be an object, got array",
    ),
    "required-string": (
        {"type": "object", "required": "x"},
        "keyword 'required': must be an array, got string",
    ),
    "minLength-string": (
        {"type": "object", "properties": {"x": {"type": "string", "minLength": "3"}}},
        "keyword 'properties.x.minLength': must be an integer, got string",
    ),
    "items-string": (
        {"type": "object", "properties": {"x": {"type": "array", "items": "string"}}},
        "keyword 'properties.x.items'",
    ),
    "enum-object": (
        {"type": "object", "properties": {"x": {"enum": {"a": 1}}}},
        "keyword 'properties.x.enum': must be an array, got object",
    ),
    "type-misspelt": (
        {"type": "object", "properties": {"x": {"type": "strin"}}},
        "keyword 'properties.x.type': must name a JSON type \\(array, boolean,",
    ),
    "defs-member-string": (
        {"type": "object", "$defs": {"n": "integer"}, "properties": {"x": {"$ref": "#/$defs/n"}}},
        "keyword '\\$defs.n': must be an object or a boolean",
    ),
}


#: With the mistakes only draft 2020-12 forbids (`test_schema_keywords_2020`).
EVERY_MISTAKE = MALFORMED | MALFORMED_2020


@pytest.mark.parametrize(("schema", "named"), EVERY_MISTAKE.values(), ids=EVERY_MISTAKE.keys())
def test_a_malformed_keyword_is_a_schema_error_naming_it(schema: Any, named: str) -> None:
    with pytest.raises(SchemaError, match=f"^schema cannot be compiled: {named}"):
        compile_validator(schema)


@pytest.mark.parametrize("where", ["inputSchema", "outputSchema"])
@pytest.mark.parametrize(("schema", "named"), EVERY_MISTAKE.values(), ids=EVERY_MISTAKE.keys())
async def test_open_server_refuses_a_malformed_keyword_naming_toolset_tool_and_keyword(
    tmp_path: Path, where: str, schema: Any, named: str
) -> None:
    tool = {"name": "t", "description": "d", "inputSchema": {"type": "object"}, where: schema}
    toolset = Toolset("mine", {"t": _ok}, contract=None, tools=[tool])
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=f"^toolset mine: tool 't' has an {where} .*: {named}"):
        async with open_server(Config(db=str(db)), toolsets=[toolset], listen=False):
            pytest.fail("the server started with a malformed schema")
    assert not db.exists()


async def _ok(call: Any) -> dict[str, Any]:
    return {}


#: Schemas the metaschema lets by that fastjsonschema cannot turn into code.
UNCOMPILABLE = {
    "const-not-json": {"type": "object", "properties": {"x": {"const": object()}}},
    "property-name-not-a-string": {"type": "object", "properties": {1: {"type": "string"}}},
}


@pytest.mark.parametrize("schema", UNCOMPILABLE.values(), ids=UNCOMPILABLE.keys())
def test_whatever_fastjsonschema_raises_on_a_schema_is_a_schema_error(schema: Any) -> None:
    with pytest.raises(SchemaError, match=r"^schema cannot be compiled: fastjsonschema failed"):
        compile_validator(schema)


#: Well-formed schemas of each dialect the metaschema check must let through.
WELL_FORMED = {
    "draft-04-boolean-exclusive": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 3, "exclusiveMaximum": True}},
    },
    "draft-07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"n": {"type": "integer", "exclusiveMinimum": 0}},
        "properties": {"n": {"$ref": "#/definitions/n"}},
        "additionalProperties": False,
    },
    "2020-12": {
        "type": "object",
        "$defs": {"pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}},
        "properties": {"p": {"$ref": "#/$defs/pair"}, "a": {}, "b": {}},
        "dependentRequired": {"a": ["b"]},
    },
}


@pytest.mark.parametrize("schema", WELL_FORMED.values(), ids=WELL_FORMED.keys())
def test_a_well_formed_schema_of_each_dialect_still_compiles(schema: Any) -> None:
    compile_validator(schema)
