"""What a toolset's handler returns or raises, as the official SDK's client reads it.

A plain dict is the structured result whatever its keys: a document's ``content`` field was
taken for MCP's content blocks and the dict sent raw, which the SDK refused (a string) or read
with no structured content (a list of blocks). A `RawResult` is how a handler shapes the whole
result itself, with ``structuredContent`` when its tool declares an outputSchema (MCP's
rule; the SDK refused what the in-process client took). A `ToolError` given a sentence rather
than a body is a refusal saying it (it was answered as an internal error).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.errors import ToolError
from agora.mcp import jsonrpc as rpc
from agora.mcp.results import RawResult
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")
from mcp.shared.exceptions import MCPError  # noqa: E402

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
DOC = {"id": 1, "content": "hello world"}
BLOCKS = {"id": 2, "content": [{"type": "text", "text": "x"}], "title": "t"}
OUT = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "content": {"type": "string"}},
    "required": ["id", "content"],
}


async def get_doc(call: ToolCall) -> dict[str, Any]:
    return DOC


async def get_blocks(call: ToolCall) -> dict[str, Any]:
    return BLOCKS


async def get_raw(call: ToolCall) -> dict[str, Any]:
    return RawResult({"content": [{"type": "text", "text": "only this"}]})


async def get_raw_error(call: ToolCall) -> dict[str, Any]:
    return RawResult({"content": [{"type": "text", "text": "refused"}], "isError": True})


async def get_raw_structured(call: ToolCall) -> dict[str, Any]:
    return RawResult({"content": [{"type": "text", "text": "doc"}], "structuredContent": DOC})


def _tool(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}, **more}


TOOLSET = Toolset(
    "docs",
    {
        "get_doc": get_doc,
        "get_blocks": get_blocks,
        "get_raw": get_raw,
        "get_raw_declared": get_raw,
        "get_raw_error": get_raw_error,
        "get_raw_structured": get_raw_structured,
    },
    contract=None,
    tools=[
        _tool("get_doc", outputSchema=OUT),
        _tool("get_blocks"),
        _tool("get_raw"),
        _tool("get_raw_declared", outputSchema=OUT),
        _tool("get_raw_error", outputSchema=OUT),
        _tool("get_raw_structured", outputSchema=OUT),
    ],
)


async def _call(name: str, toolset: Toolset = TOOLSET) -> Any:
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(Config(port=0, db=":memory:"), toolsets=[toolset]) as server,
            mcp.Client(f"{server.url}/mcp/{toolset.name}") as client,
        ):
            return await client.call_tool(name, {})


@pytest.mark.parametrize(
    ("tool", "value"),
    [
        pytest.param("get_doc", DOC, id="content-string"),
        pytest.param("get_blocks", BLOCKS, id="content-blocks"),
    ],
)
async def test_a_result_with_a_content_field_is_structured(tool: str, value: Any) -> None:
    result = await _call(tool)
    assert not result.is_error
    assert result.structured_content == value


async def test_a_raw_result_is_sent_as_the_handler_shaped_it() -> None:
    result = await _call("get_raw")
    assert result.structured_content is None
    assert [block.text for block in result.content] == ["only this"]


async def test_a_raw_result_without_structured_content_breaks_a_declared_schema(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The in-process client took what the SDK refused ("has an output schema but did not
    return structured content"): the server answers it as a handler's bug, to both alike."""
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(Config(port=0, db=":memory:"), toolsets=[TOOLSET]) as server,
            server.client("/mcp/docs") as inproc,
            mcp.Client(f"{server.url}/mcp/docs") as client,
        ):
            await inproc.initialize()
            reply = await inproc.request(
                "tools/call", {"name": "get_raw_declared", "arguments": {}}
            )
            with pytest.raises(MCPError) as refused:
                await client.call_tool("get_raw_declared", {})
    assert reply["error"]["code"] == rpc.INTERNAL_ERROR
    assert refused.value.error.code == rpc.INTERNAL_ERROR
    logged = [r for r in caplog.records if r.name == "agora.server.connection"]
    assert len(logged) == 2
    assert all(r.getMessage().startswith("tool get_raw_declared failed") for r in logged)
    assert "declares an outputSchema" in str(logged[0].exc_info[1])


@pytest.mark.parametrize(
    ("tool", "structured"),
    [
        pytest.param("get_raw_error", None, id="isError"),
        pytest.param("get_raw_structured", DOC, id="structuredContent"),
    ],
)
async def test_a_raw_result_from_a_declared_tool_passes_with_either(
    tool: str, structured: Any
) -> None:
    result = await _call(tool)
    assert result.structured_content == structured


async def refuse_in_words(call: ToolCall) -> dict[str, Any]:
    raise ToolError("the note is locked")


async def test_a_tool_error_given_a_sentence_is_a_refusal_saying_it() -> None:
    """``ToolError("...")`` was answered as an internal error (the body was read as a dict)."""
    toolset = Toolset("words", {"refuse": refuse_in_words}, contract=None, tools=[_tool("refuse")])
    result = await _call("refuse", toolset)
    assert result.is_error
    assert [block.text for block in result.content] == ["the note is locked"]
    assert result.structured_content == {"error": "the note is locked"}


def test_a_tool_error_of_another_type_is_refused_where_it_is_built() -> None:
    with pytest.raises(TypeError, match=r"ToolError takes .* a dict \(or a sentence, as a str\)"):
        ToolError(["locked"])  # type: ignore[arg-type]


async def refuse_from_a_nursery(call: ToolCall) -> dict[str, Any]:
    async def check(i: int) -> None:
        if i == 1:
            raise ToolError({"error": "not_found", "message": f"item {i} does not exist"})
        await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:  # strict: its ToolError comes out grouped
        for i in range(3):
            nursery.start_soon(check, i)
    return {"ok": True}


async def fail_from_a_nursery(call: ToolCall) -> dict[str, Any]:
    async def check(i: int) -> None:
        if i == 0:
            raise ToolError("refused")
        raise KeyError(i)  # a bug beside the refusal: the group is a bug, not a refusal

    async with trio.open_nursery() as nursery:
        nursery.start_soon(check, 0)
        nursery.start_soon(check, 1)
    return {"ok": True}


async def test_a_tool_error_raised_in_a_handlers_nursery_is_the_refusal_it_is() -> None:
    """A handler that fans out in a nursery and refuses from one task raised its ToolError in
    an ExceptionGroup, answered as an opaque -32603 (embedder's finding); a group that also
    holds another exception stays a bug."""
    handlers = {"refuse": refuse_from_a_nursery, "fail": fail_from_a_nursery}
    toolset = Toolset(
        "fan", handlers, contract=None, tools=[_tool("refuse"), _tool("fail")]
    )  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(Config(port=0, db=":memory:"), toolsets=[toolset]) as server,
            mcp.Client(f"{server.url}/mcp/fan") as client,
        ):
            result = await client.call_tool("refuse", {})
            with pytest.raises(MCPError) as bug:
                await client.call_tool("fail", {})
    assert result.is_error
    assert result.structured_content == {"error": "not_found", "message": "item 1 does not exist"}
    assert bug.value.error.code == rpc.INTERNAL_ERROR
