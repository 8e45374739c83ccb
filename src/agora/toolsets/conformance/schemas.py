"""What the conformance fixtures advertise: tools/list entries and the elicitation forms.

Names, argument shapes and elicitation schemas are the ones the official MCP conformance
suite (``@modelcontextprotocol/conformance``) looks for; descriptions are agora's own. This
module is data only: no handlers, no I/O.
"""

from __future__ import annotations

from typing import Any, Final

JSON_SCHEMA_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"

#: A tool without arguments.
_NO_ARGS: Final[dict[str, Any]] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema or _NO_ARGS}


def _one_string(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


TOOLS: Final[list[dict[str, Any]]] = [
    _tool("test_simple_text", "Returns one text block."),
    _tool("test_image_content", "Returns one image block (a 1x1 red PNG)."),
    _tool("test_audio_content", "Returns one audio block (a short silent WAV)."),
    _tool("test_embedded_resource", "Returns one embedded text resource."),
    _tool("test_multiple_content_types", "Returns a text, an image and a resource block."),
    _tool("test_tool_with_logging", "Sends three info log messages while it runs."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 while it runs."),
    _tool("test_error_handling", "Always fails with an isError result."),
    _tool(
        "test_sampling",
        "Asks the client's model to answer a prompt (sampling/createMessage).",
        _one_string("prompt", "The prompt to send to the model"),
    ),
    _tool(
        "test_elicitation",
        "Asks the user for a username and an email (elicitation/create).",
        _one_string("message", "The message to show the user"),
    ),
    _tool(
        "test_elicitation_sep1034_defaults",
        "Asks the user for a form whose every field has a default value (SEP-1034).",
    ),
    _tool(
        "test_elicitation_sep1330_enums",
        "Asks the user for a form with every kind of enum field (SEP-1330).",
    ),
    _tool(
        "json_schema_2020_12_tool",
        "Echoes its arguments; its input schema uses JSON Schema 2020-12 keywords.",
        {
            "$schema": JSON_SCHEMA_2020_12,
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
    _tool(
        "test_reconnection",
        "Ends its HTTP response stream before answering; the client resumes with "
        "Last-Event-ID to get the result (SEP-1699).",
    ),
    _tool(
        "test_update_watched_resource",
        "Changes test://watched-resource; subscribed sessions get notifications/resources/updated.",
    ),
]

#: The form test_elicitation sends.
USER_FORM: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

#: A field of every primitive type, each with a default (SEP-1034).
DEFAULTS_FORM: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your name", "default": "John Doe"},
        "age": {"type": "integer", "description": "Your age", "default": 30},
        "score": {"type": "number", "description": "Your score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "Account status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verified?", "default": True},
    },
}


def _titled(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


#: One field of each enum flavour (SEP-1330).
ENUMS_FORM: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Pick one",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Pick one",
            "oneOf": _titled(
                [
                    ("value1", "First Option"),
                    ("value2", "Second Option"),
                    ("value3", "Third Option"),
                ]
            ),
        },
        "legacyEnum": {
            "type": "string",
            "description": "Pick one (legacy titles)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Pick any",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Pick any",
            "items": {
                "anyOf": _titled(
                    [
                        ("value1", "First Choice"),
                        ("value2", "Second Choice"),
                        ("value3", "Third Choice"),
                    ]
                )
            },
        },
    },
}
