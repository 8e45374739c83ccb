"""The conformance fixture tools: each one exercises one part of the protocol.

Content tools return fixed blocks (a `RawResult`: the blocks and nothing else); the others
drive the session while they run: log and progress notifications, sampling and elicitation
requests to the client, a mid-call end of the HTTP stream (SEP-1699) and a resource-updated
notification. Handlers only use what a `ToolCall` offers: they must not reach into
transports or sessions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.errors import ProtocolError, ToolError
from agora.mcp.results import RawResult
from agora.toolsets.conformance import media
from agora.toolsets.conformance.schemas import DEFAULTS_FORM, ENUMS_FORM, USER_FORM

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.toolsets.base import Handler, ToolCall
    from agora.toolsets.conformance.resources import Watched

#: Pause between the notifications of the logging and progress tools (the suite asks ~50 ms).
STEP_SECONDS: Final = 0.05
#: How long test_reconnection keeps running after it ended its stream.
RECONNECT_PAUSE_SECONDS: Final = 0.1
ERROR_TEXT: Final = "This tool intentionally returns an error for testing"


def _content(*blocks: dict[str, Any]) -> RawResult:
    """A result of these content blocks alone, as the suite expects (no structured copy)."""
    return RawResult({"content": list(blocks)})


async def simple_text(call: ToolCall) -> dict[str, Any]:
    """One text block."""
    return _content(media.text("This is a simple text response for testing."))


async def image_content(call: ToolCall) -> dict[str, Any]:
    """One image block."""
    return _content(media.image())


async def audio_content(call: ToolCall) -> dict[str, Any]:
    """One audio block."""
    return _content(media.audio())


async def embedded_resource(call: ToolCall) -> dict[str, Any]:
    """One embedded text resource."""
    return _content(
        media.embedded(
            "test://embedded-resource", "text/plain", "This is an embedded resource content."
        )
    )


async def multiple_content_types(call: ToolCall) -> dict[str, Any]:
    """A text, an image and an embedded JSON resource."""
    body = json.dumps({"test": "data", "value": 123})
    return _content(
        media.text("Multiple content types test:"),
        media.image(),
        media.embedded("test://mixed-content-resource", "application/json", body),
    )


async def with_logging(call: ToolCall) -> dict[str, Any]:
    """Three info log messages, STEP_SECONDS apart."""
    await call.log("info", "Tool execution started")
    await trio.sleep(STEP_SECONDS)
    await call.log("info", "Tool processing data")
    await trio.sleep(STEP_SECONDS)
    await call.log("info", "Tool execution completed")
    return _content(media.text("Tool with logging executed successfully"))


async def with_progress(call: ToolCall) -> dict[str, Any]:
    """Progress 0, 50 and 100 of 100, STEP_SECONDS apart (sent only with a progressToken)."""
    await call.progress(0, 100, "started")
    await trio.sleep(STEP_SECONDS)
    await call.progress(50, 100, "half way")
    await trio.sleep(STEP_SECONDS)
    await call.progress(100, 100, "done")
    return _content(media.text("Tool with progress executed successfully"))


async def error_handling(call: ToolCall) -> dict[str, Any]:
    """Always fails.

    Raises:
        ToolError: always.
    """
    raise ToolError({"error": ERROR_TEXT}, text=ERROR_TEXT)


async def _ask_client(call: ToolCall, method: str, params: dict[str, Any]) -> Any:
    """Send ``method`` to the client; return its result.

    At 2026-07-28 the channel itself refuses a request the client declared no capability for
    (-32021); after the handshake the tool says so as its error.
    """
    client = call.client
    if client is None:  # the handler was called directly
        raise ToolError({"error": "no MCP client to ask"}, text="This tool needs an MCP client.")
    missing = client.missing(method, params)
    if missing is not None and not client.modern:
        capability, modes = next(iter(missing.items()))
        needs = f"{next(iter(modes))}-mode {capability}" if modes else f"the {capability}"
        raise ToolError(
            {"error": f"the client did not declare the {capability} capability it needs"},
            text=f"This tool needs a client with {needs} capability.",
        )
    try:
        return await client.request(method, params)
    except ProtocolError as exc:
        raise ToolError(
            {"error": exc.message, "code": exc.code}, text=f"{method} failed: {exc.message}"
        ) from None


async def sampling(call: ToolCall) -> dict[str, Any]:
    """Ask the client's model to answer ``prompt``; return its answer.

    Raises:
        ToolError: the client cannot sample, or its sampling failed.
    """
    message = {"role": "user", "content": media.text(call.args["prompt"])}
    params = {"messages": [message], "maxTokens": 100}
    result = await _ask_client(call, "sampling/createMessage", params)
    content = result.get("content") if isinstance(result, dict) else None
    # 2025-11-25 allows a list of blocks where earlier revisions had one block.
    blocks = content if isinstance(content, list) else [content]
    answer = " ".join(b["text"] for b in blocks if isinstance(b, dict) and "text" in b)
    return _content(media.text(f"LLM response: {answer}"))


async def _elicit(call: ToolCall, message: str, schema: dict[str, Any]) -> dict[str, Any]:
    params = {"message": message, "requestedSchema": schema}  # form mode (no "mode")
    result = await _ask_client(call, "elicitation/create", params)
    result = result if isinstance(result, dict) else {}
    return {"action": result.get("action"), "content": result.get("content")}


async def elicitation(call: ToolCall) -> dict[str, Any]:
    """Ask the user for a username and an email; return what they answered.

    Raises:
        ToolError: the client cannot elicit, or the request failed.
    """
    answer = await _elicit(call, call.args["message"], USER_FORM)
    text = f"User response: action={answer['action']}, content={json.dumps(answer['content'])}"
    return _content(media.text(text))


async def _form(call: ToolCall, message: str, schema: dict[str, Any]) -> dict[str, Any]:
    answer = await _elicit(call, message, schema)
    text = (
        f"Elicitation completed: action={answer['action']}, content={json.dumps(answer['content'])}"
    )
    return _content(media.text(text))


async def elicitation_defaults(call: ToolCall) -> dict[str, Any]:
    """Elicit a form whose fields all have defaults (SEP-1034).

    Raises:
        ToolError: the client cannot elicit, or the request failed.
    """
    return await _form(call, "Please review your profile (defaults are filled in)", DEFAULTS_FORM)


async def elicitation_enums(call: ToolCall) -> dict[str, Any]:
    """Elicit a form with the five enum flavours (SEP-1330).

    Raises:
        ToolError: the client cannot elicit, or the request failed.
    """
    return await _form(call, "Please choose your options", ENUMS_FORM)


async def json_schema_echo(call: ToolCall) -> dict[str, Any]:
    """Echo the (2020-12-validated) arguments."""
    return _content(media.text(f"Received: {json.dumps(call.args, sort_keys=True)}"))


async def reconnection(call: ToolCall) -> dict[str, Any]:
    """End the call's stream, keep running a moment, then answer on the resumed stream."""
    call.close_stream()
    await trio.sleep(RECONNECT_PAUSE_SECONDS)
    return _content(media.text("Reconnection test completed"))


def handlers(watched: Watched) -> Mapping[str, Handler]:
    """Every fixture tool by name; ``watched`` is the resource the update tool changes."""

    async def update_watched(call: ToolCall) -> dict[str, Any]:
        revision = watched.touch()
        call.runtime.resources_updated(watched.uri)  # every session watching it hears of it
        return _content(media.text(f"{watched.uri} is now at revision {revision}"))

    return {
        "test_simple_text": simple_text,
        "test_image_content": image_content,
        "test_audio_content": audio_content,
        "test_embedded_resource": embedded_resource,
        "test_multiple_content_types": multiple_content_types,
        "test_tool_with_logging": with_logging,
        "test_tool_with_progress": with_progress,
        "test_error_handling": error_handling,
        "test_sampling": sampling,
        "test_elicitation": elicitation,
        "test_elicitation_sep1034_defaults": elicitation_defaults,
        "test_elicitation_sep1330_enums": elicitation_enums,
        "json_schema_2020_12_tool": json_schema_echo,
        "test_reconnection": reconnection,
        "test_update_watched_resource": update_watched,
    }
