"""The conformance fixture resources, prompts and argument completion.

Static text and binary resources, a URI template, a resource clients can subscribe to, four
prompts (plain, with arguments, with an embedded resource, with an image) and completion of
prompt and template arguments. Each target takes a `ToolCall` whose ``tool`` is the URI or
prompt name and whose ``args`` are the template variables or prompt arguments. This module
must not know about transports or sessions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc
from agora.mcp.catalog import PromptEntry, ResourceEntry
from agora.toolsets.conformance import media

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall

WATCHED_URI: Final = "test://watched-resource"
TEMPLATE_URI: Final = "test://template/{id}/data"
#: Most completion values returned at once (the protocol's cap is 100).
MAX_COMPLETIONS: Final = 100


@dataclass
class Watched:
    """The subscribable resource: a revision number that `touch` moves on."""

    uri: str = WATCHED_URI
    revision: int = 0

    def touch(self) -> int:
        """Record a change; return the new revision."""
        self.revision += 1
        return self.revision


def _contents(uri: str, mime_type: str, **body: str) -> dict[str, Any]:
    return {"contents": [{"uri": uri, "mimeType": mime_type, **body}]}


async def static_text(call: ToolCall) -> dict[str, Any]:
    """test://static-text."""
    return _contents(
        call.tool, "text/plain", text="This is the content of the static text resource."
    )


async def static_binary(call: ToolCall) -> dict[str, Any]:
    """test://static-binary: the red pixel as a blob."""
    return _contents(call.tool, media.PNG_MIME, blob=media.red_pixel_png())


async def template_data(call: ToolCall) -> dict[str, Any]:
    """test://template/{id}/data with ``id`` substituted."""
    item = call.args["id"]
    body = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
    return _contents(call.tool, "application/json", text=body)


def resources(watched: Watched) -> list[ResourceEntry]:
    """Every fixture resource and template; ``watched`` backs the subscribable one."""

    async def read_watched(call: ToolCall) -> dict[str, Any]:
        return _contents(call.tool, "text/plain", text=f"revision {watched.revision}")

    return [
        ResourceEntry(
            "test://static-text",
            "static-text",
            "A fixed text resource.",
            "text/plain",
            target=static_text,
        ),
        ResourceEntry(
            "test://static-binary",
            "static-binary",
            "A fixed binary resource (a 1x1 red PNG).",
            media.PNG_MIME,
            target=static_binary,
        ),
        ResourceEntry(
            watched.uri,
            "watched-resource",
            "A resource that test_update_watched_resource changes; subscribe to hear of it.",
            "text/plain",
            target=read_watched,
        ),
        ResourceEntry(
            TEMPLATE_URI,
            "template-data",
            "JSON data for any id.",
            "application/json",
            template=True,
            target=template_data,
        ),
    ]


async def simple_prompt(call: ToolCall) -> dict[str, Any]:
    """A prompt without arguments."""
    return {"messages": [media.user(media.text("This is a simple prompt for testing."))]}


async def prompt_with_arguments(call: ToolCall) -> dict[str, Any]:
    """A prompt that quotes its two arguments."""
    text = f"Prompt with arguments: arg1='{call.args['arg1']}', arg2='{call.args['arg2']}'"
    return {"description": "A prompt with arguments", "messages": [media.user(media.text(text))]}


async def prompt_with_embedded_resource(call: ToolCall) -> dict[str, Any]:
    """A prompt embedding the resource its argument names."""
    uri = call.args["resourceUri"]
    body = "Embedded resource content for testing."
    return {
        "messages": [
            media.user(media.embedded(uri, "text/plain", body)),
            media.user(media.text("Please process the embedded resource above.")),
        ]
    }


async def prompt_with_image(call: ToolCall) -> dict[str, Any]:
    """A prompt showing the red pixel."""
    return {
        "messages": [
            media.user(media.image()),
            media.user(media.text("Please analyze the image above.")),
        ]
    }


def _argument(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "required": True}


PROMPTS: Final = [
    PromptEntry("test_simple_prompt", "A prompt without arguments.", target=simple_prompt),
    PromptEntry(
        "test_prompt_with_arguments",
        "A prompt that quotes its two arguments.",
        (_argument("arg1", "First test argument"), _argument("arg2", "Second test argument")),
        target=prompt_with_arguments,
    ),
    PromptEntry(
        "test_prompt_with_embedded_resource",
        "A prompt embedding a resource.",
        (_argument("resourceUri", "URI of the resource to embed"),),
        target=prompt_with_embedded_resource,
    ),
    PromptEntry("test_prompt_with_image", "A prompt with an image.", target=prompt_with_image),
]

#: Candidate values per (reference, argument name).
_CANDIDATES: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("test_prompt_with_arguments", "arg1"): ("paris", "park", "party", "test", "testValue1"),
    ("test_prompt_with_arguments", "arg2"): ("world", "wonder", "testValue2"),
    (TEMPLATE_URI, "id"): ("1", "2", "3", "123", "456"),
}


async def complete(call: ToolCall) -> dict[str, Any]:
    """completion/complete for the prompt arguments and the template's ``id``.

    Raises:
        ProtocolError: the reference or the argument is malformed or unknown.
    """
    ref, argument = call.args.get("ref"), call.args.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise ProtocolError(rpc.INVALID_PARAMS, "params.ref and params.argument must be objects")
    key = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
    if ref.get("type") not in ("ref/prompt", "ref/resource") or not isinstance(key, str):
        raise ProtocolError(rpc.INVALID_PARAMS, "params.ref must be a ref/prompt or ref/resource")
    if not any(k == key for k, _ in _CANDIDATES):
        raise ProtocolError(rpc.INVALID_PARAMS, f"nothing to complete for {key!r}")
    prefix = argument.get("value")
    prefix = prefix if isinstance(prefix, str) else ""
    found = [
        v for v in _CANDIDATES.get((key, str(argument.get("name"))), ()) if v.startswith(prefix)
    ]
    shown = found[:MAX_COMPLETIONS]
    return {
        "completion": {"values": shown, "total": len(found), "hasMore": len(found) > len(shown)}
    }
