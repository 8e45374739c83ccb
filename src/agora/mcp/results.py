"""A tools/call's result: its structured content and the JSON text copy MCP asks for beside it.

`tool_result` builds one (a refusal too, with ``isError``); `tool_reply` is the whole response
to a call that returned a value, encoding the value once and, from `SPLICE_MIN` bytes on,
splicing those bytes into the message instead of encoding them a second time. A handler that
returns a `Guided` value adds a second text block, after the JSON copy: a note for the model
that the tool's closed outputSchema has no field for. A handler that returns a `RawResult`
shapes the whole result itself (the conformance fixtures' image and audio blocks); any other
dict is the structured result, whatever its keys (``content`` too). `check_raw` holds a
`RawResult` to MCP's rule for a tool that declares an outputSchema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.mcp import jsonrpc as rpc

if TYPE_CHECKING:
    from agora.mcp.session import Session


class Guided(dict[str, Any]):
    """A tool's structured result (the dict itself) with ``guidance`` for the model.

    The structured content and its JSON text copy are those of the plain dict; ``guidance``
    follows as a second text block (MCP allows several), for what the outputSchema has no
    field for. Equal to the plain dict, so callers that compare results see no difference.
    """

    __slots__ = ("guidance",)

    def __init__(self, value: dict[str, Any], guidance: str) -> None:
        super().__init__(value)
        self.guidance = guidance


class RawResult(dict[str, Any]):
    """A whole CallToolResult a handler shapes itself, sent as it is: ``content`` (a list of
    MCP content blocks: text, image, audio, resource) and, if the handler wants them,
    ``structuredContent`` and ``isError``. The MCP layer adds no JSON copy.

    Raises:
        TypeError: ``result`` has no ``content`` list (MCP requires one).
    """

    __slots__ = ()

    def __init__(self, result: dict[str, Any]) -> None:
        if not isinstance(result.get("content"), list):
            raise TypeError(
                "a RawResult is a whole CallToolResult: it needs a 'content' list of content"
                f" blocks, not {type(result.get('content')).__name__}"
            )
        super().__init__(result)


def check_raw(value: RawResult, tool: str, output_schema: object) -> None:
    """Hold ``value``, a `RawResult` from ``tool``, to MCP's rule: a tool that declares an
    outputSchema (``output_schema`` is not None) returns ``structuredContent`` with every
    result but a failure (``isError``). Every client that checks the rule (the official SDK
    does) refuses such a result, so the server refuses it first, and the in-process client
    sees what a network client would.

    Raises:
        TypeError: the rule is broken (a handler's mistake, answered as an internal error and
            logged with the tool's name, as a handler's non-dict value is).
    """
    if output_schema is None or value.get("isError") or "structuredContent" in value:
        return
    raise TypeError(
        f"tool {tool} declares an outputSchema, so a RawResult it returns needs"
        " 'structuredContent' (MCP requires it in every result but one with isError)"
    )


#: Replies whose structured content encodes to fewer bytes are encoded whole: splicing costs
#: about a microsecond of set-up, more than encoding a small value a second time saves.
SPLICE_MIN = 512


def tool_reply(
    session: Session, rid: rpc.RequestId, value: Any, modern: bool, splice_min: int = SPLICE_MIN
) -> dict[str, Any]:
    """The response to a tools/call that returned ``value``: ``tool_result`` stamped by
    ``session.finish``, ``value`` encoded once for its text copy and, from ``splice_min``
    bytes on, spliced as those same bytes into the message (see `rpc.spliced_result`).

    A `RawResult` is sent as it is (stamped).

    Raises:
        TypeError: ``value`` is not a dict (a handler's mistake, answered as an internal
            error and logged with the tool's name).
    """
    if not isinstance(value, dict):  # MCP's structuredContent is an object
        raise TypeError(
            f"a tool handler returns a dict (its structured result), not {type(value).__name__}"
        )
    if type(value) is RawResult:
        return rpc.result(rid, session.finish(dict(value), modern))
    data = rpc.encode_value(value)
    content = [{"type": "text", "text": data.decode()}]
    if type(value) is Guided:
        content.append({"type": "text", "text": value.guidance})
    out = {"content": content, "structuredContent": value}
    if modern:  # (every tool reply passes here: no call to stamp what needs no stamp)
        out = session.finish(out, modern)
    if len(data) < splice_min:
        return rpc.result(rid, out)
    return rpc.spliced_result(rid, out, "structuredContent", data)


def tool_result(
    value: dict[str, Any], *, error: bool = False, text: str | None = None
) -> dict[str, Any]:
    """A tools/call result: ``value`` as structuredContent plus its JSON as a text block."""
    mirror = text if text is not None else rpc.encode(value).decode()
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": mirror}],
        "structuredContent": value,
    }
    if error:
        out["isError"] = True
    return out
