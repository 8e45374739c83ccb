"""JSON-RPC 2.0 framing for MCP: decode one message, encode replies, the standard error codes.

Decoding enforces the transport-independent limits (size, UTF-8, JSON depth of ``params``)
and refuses batches, which MCP removed in 2025-06-18. Nothing here does I/O or imports trio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from agora.errors import ProtocolError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
HEADER_MISMATCH = -32020
#: A request needs a client capability its ``_meta`` does not declare (2026-07-28).
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: Resource not found up to 2025-11-25; 2026-07-28 removed it for -32602 (`resource_not_found`).
RESOURCE_NOT_FOUND = -32002
#: A connection already runs ``max_in_flight`` calls: retry once one of them has finished.
TOO_MANY_IN_FLIGHT = -32010
#: The server is shutting down: the call was not run; call it again once reconnected.
SHUTTING_DOWN = -32011

#: Largest message accepted on any transport. The contracts' largest valid request (a debate
#: post: a 32,768-character body and as long a payload, each character up to 4 bytes of UTF-8,
#: or 12 as an escaped surrogate pair) fits with room to spare; a toolset whose contract sets
#: a smaller request size bounds its own arguments (`agora.toolsets.base.ArgumentLimits`, as
#: the chamber does with its max_request_bytes of 65,536).
MAX_MESSAGE_BYTES = 1_048_576
#: What a message over the size limit is told.
OVERSIZE_MESSAGE = f"message larger than {MAX_MESSAGE_BYTES} bytes"
#: Bytes of an oversize message read for its request id (`request_id_in`).
OVERSIZE_HEAD_BYTES = 4096
#: Deepest nesting accepted inside ``params`` (the params object itself is level 1): a hard
#: ceiling against deeply nested input, well above the deepest arguments any toolset may
#: accept (`agora.mcp.guard.MAX_DEPTH`, 32, at params' level 2), so that arguments
#: past a toolset's limit still reach it and its own limit refuses them in its own words.
#: (At 8 the chamber's contract depth could not be reached, at 33 one level past the router's
#: 32 got -32600 instead of its ``invalid-arguments``.) Deeper than 63 levels gets -32600.
MAX_PARAMS_DEPTH = 64
#: Why params given by position (an array, which JSON-RPC allows) are refused.
BY_NAME = ": MCP passes parameters by name, not in an array"
#: What JSON nested past what the decoder (or a walk of it) can follow is told.
TOO_DEEP = "JSON nested too deeply"
#: Most arrays and objects one message may hold, counted before it is decoded: far above any
#: arguments a toolset accepts (`agora.toolsets.base.ArgumentLimits.max_nodes`, at most
#: 10,000 values), and what bounds the event loop's work on one message. A megabyte of empty
#: arrays (340,000 of them) took the decoder and the depth walk 0.5 s, every other client
#: stalled meanwhile (a hostile client's finding); the scan that counts them takes 2-9 ms.
MAX_CONTAINERS = 20_000
#: An innermost pair of brackets: one substitution takes every innermost pair away at once and
#: no pair it exposes (two ``bytes.replace`` took ``{[]}`` away whole, two levels in one pass).
_INNERMOST = re.compile(rb"\[\]|\{\}")
#: Every byte but the four brackets (``bytes.translate`` deletes them).
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")

RequestId = str | int

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
encode_value = _encoder.encode  #: compact UTF-8 JSON of any value (the encoder's own method)


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Request:
    """A call that expects a response."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Notification:
    """A one-way message."""

    method: str
    params: dict[str, Any]


@dataclass(slots=True)  # one per message: frozen would cost ~0.1 us a field
class Response:
    """The peer's answer to a request we sent (``error`` set on failure)."""

    id: RequestId
    result: Any = None
    error: dict[str, Any] | None = None


Message = Request | Notification | Response


def depth(value: Any, limit: int) -> int:
    """Nesting depth of containers in ``value``, counting stops once past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def decode(data: bytes | str) -> Message:
    """Parse one JSON-RPC message.

    Raises:
        ProtocolError: -32700 for bytes that are not UTF-8 JSON; -32600 for JSON that is not
            a valid JSON-RPC 2.0 message (a batch, a wrong version, a bad id, oversize, too
            deep). ``data`` of the error carries the request id when one could be read.
    """
    if len(data) > MAX_MESSAGE_BYTES:
        head = data[:OVERSIZE_HEAD_BYTES]
        raise ProtocolError(
            INVALID_REQUEST,
            OVERSIZE_MESSAGE,
            {"id": request_id_in(head.encode() if isinstance(head, str) else head)},
        )
    check_shape(data)
    try:
        obj = _decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        problem = decode_problem(data, exc) if data.strip() else "the message is empty"
        raise ProtocolError(PARSE_ERROR, f"parse error: {problem}", _whole_id(data, exc)) from None
    except RecursionError:
        raise ProtocolError(INVALID_REQUEST, TOO_DEEP) from None
    return parse(obj, walk=False)  # (`check_shape` measured the nesting, before decoding)


def _outside_strings(raw: bytes) -> bytes:
    """``raw`` without its string literals (an unclosed one runs to the end), in passes of
    C with no per-character Python: the escaped backslashes and quotes are taken out first,
    after which every quote opens or closes a string. (A regular expression for a string
    literal tried again from every quote of an unclosed one, quadratic: a 64 KB message held
    the event loop 20 s, a reviewer's finding; even a linear one took 90 ms for a megabyte
    of escapes, against 8 ms here.)"""
    plain = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(plain.split(b'"')[::2])


def bracket_shape(data: bytes | str) -> bytes:
    """The brackets of the JSON text ``data`` outside its strings, in order, found in passes
    of C (for a measure of its nesting that decodes nothing: `nested_deeper`)."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return _outside_strings(raw).translate(None, _NOT_BRACKETS)


def nested_deeper(shape: bytes, levels: int) -> bool:
    """Whether brackets ``shape`` (`bracket_shape`) nest deeper than ``levels``; False when
    they do not pair up (not JSON: its decoder says what is wrong). Each pass takes away
    the innermost level, so it takes at most ``levels`` + 1 passes."""
    for _ in range(levels):
        inner = _INNERMOST.sub(b"", shape)
        if len(inner) == len(shape):
            return False
        shape = inner
    return bool(shape) and _INNERMOST.sub(b"", shape) != shape


def check_shape(data: bytes | str, outer: int = 0) -> None:
    """Refuse a message that holds more than `MAX_CONTAINERS` arrays and objects, or nests
    deeper than params may (`MAX_PARAMS_DEPTH`, params being the message's level 2, or
    ``outer`` levels further down: a batch's messages are its level 2), before it is decoded:
    both are measured on its brackets outside strings, in C-speed passes.

    Every nesting level opens a bracket, so a message with few brackets (most of them) is
    let through at once. Brackets that do not pair up are left for the decoder to refuse.

    Raises:
        ProtocolError: -32600, with the request id when it can be read.
    """
    # Counted on ``data`` as it came: a WebSocket message is text, and encoding every one
    # would cost a copy on the primary transport's path for the rare message this refuses.
    if isinstance(data, str):
        brackets = data.count("{") + data.count("[")
    else:
        brackets = data.count(b"{") + data.count(b"[")
    if brackets <= MAX_PARAMS_DEPTH + outer:
        return
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data  # (ASCII marks)
    shape = bracket_shape(raw)
    if len(shape) > 2 * MAX_CONTAINERS:
        message = f"message holds more than {MAX_CONTAINERS} arrays and objects"
    elif nested_deeper(shape, MAX_PARAMS_DEPTH + 1 + outer):
        sent = [key for key in (b'"method"', b'"result"', b'"error"') if key in raw]
        member = ("params" if b'"method"' in sent else "result or error") if sent else "message"
        levels = MAX_PARAMS_DEPTH if sent else MAX_PARAMS_DEPTH + 1 + outer  # (arrays alone)
        message = f"{member} nested deeper than {levels} levels"
    else:
        return
    raise ProtocolError(INVALID_REQUEST, message, {"id": request_id_in(raw[:OVERSIZE_HEAD_BYTES])})


def decode_problem(data: bytes | str, exc: Exception) -> str:
    """What is wrong with ``data``, which did not decode: the decoder's words, but for an
    unpaired high surrogate escape, which it calls truncated input."""
    raw = data.encode(errors="surrogatepass") if isinstance(data, str) else data
    if isinstance(exc, msgspec.DecodeError) and (lone := _LONE_HIGH.search(raw)):
        escape = lone.group().decode()
        return (
            f"invalid \\u escape at byte {lone.start()}: {escape} (a high surrogate) must be "
            "followed by a low surrogate escape (\\udc00-\\udfff)"
        )
    return str(exc)


def _whole_id(data: bytes | str, exc: Exception) -> dict[str, RequestId | None] | None:
    """The request id of JSON whose only fault is an unpaired surrogate escape in a string
    (its structure is whole, so its ``id`` can be read), as a `ProtocolError`'s data: the
    client's call then fails at once, instead of waiting for an answer to a null id."""
    raw = data.encode(errors="surrogatepass") if isinstance(data, str) else data
    lone = _LONE_HIGH.search(raw) is not None or "surrogate" in str(exc)
    if not isinstance(exc, msgspec.DecodeError) or not lone:
        return None
    return {"id": request_id_in(raw)}


_LONE_HIGH = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})")


def parse(obj: Any, *, walk: bool = True) -> Message:
    """Validate a decoded JSON value as a JSON-RPC 2.0 message.

    Args:
        obj: The decoded value.
        walk: Measure the depth of ``params`` (False only when it cannot be too deep).

    Raises:
        ProtocolError: -32600 for anything that is not a single valid message.
    """
    if isinstance(obj, list):
        raise ProtocolError(INVALID_REQUEST, "batches are not supported (MCP 2025-06-18+)")
    if not isinstance(obj, dict):
        raise ProtocolError(INVALID_REQUEST, "a JSON-RPC message must be an object")
    rid = obj.get("id")
    bad_id = (rid is None and "id" in obj) or not isinstance(rid, (str, int, type(None)))
    if isinstance(rid, bool) or bad_id:
        raise ProtocolError(INVALID_REQUEST, "id must be a string or an integer")
    if obj.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, 'jsonrpc must be "2.0"', {"id": rid})
    method = obj.get("method")
    if method is None:
        return _response(obj, rid)
    if not isinstance(method, str) or not method:
        raise ProtocolError(INVALID_REQUEST, "method must be a non-empty string", {"id": rid})
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):  # an array: JSON-RPC's params by position, well formed
        code, said = (INVALID_PARAMS, BY_NAME) if type(params) is list else (INVALID_REQUEST, "")
        raise ProtocolError(code, f"params must be an object{said}", {"id": rid})
    if walk and depth(params, MAX_PARAMS_DEPTH) > MAX_PARAMS_DEPTH:
        raise ProtocolError(
            INVALID_REQUEST, f"params nested deeper than {MAX_PARAMS_DEPTH} levels", {"id": rid}
        )
    if rid is None:
        return Notification(method, params)
    return Request(rid, method, params)


def _response(obj: dict[str, Any], rid: RequestId | None) -> Response:
    if rid is None or ("result" in obj) == ("error" in obj):
        raise ProtocolError(INVALID_REQUEST, "a response needs an id and one of result/error")
    error = obj.get("error")
    if error is not None and not isinstance(error, dict):
        raise ProtocolError(INVALID_REQUEST, "error must be an object")
    return Response(rid, obj.get("result"), error)


_OPENS = frozenset(b"{[")
_SYNTAX = re.compile(rb'["{}\[\]]')
#: A JSON string literal, escapes included (the loop unrolled: one C-speed run per stretch of
#: plain characters).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# A number must be followed by what ends it: at the cut, "12" may be the start of "123".
_ID_VALUE = re.compile(rb'\s*:\s*(-?(?:0|[1-9][0-9]*)(?=\s*[,}])|"(?:[^"\\]|\\.)*")')


def request_id_in(head: bytes) -> RequestId | None:
    """The ``id`` of the top-level object that ``head``, the start of a message too large to
    decode, begins; None when it is not there (the id may come after the cut).

    So the refusal of an oversize request carries its id and the client can fail that call
    rather than wait for an answer that never comes. Strings are skipped whole (a quote or
    bracket inside one counts for nothing), and a cut inside a string ends the search: an
    ``"id"`` further on might be text, not the key.
    """
    depth = 0
    at = 0
    while (found := _SYNTAX.search(head, at)) is not None:
        start = found.start()
        char = head[start]
        if char != 0x22:  # a bracket
            depth += 1 if char in _OPENS else -1
            at = start + 1
            continue
        string = _STRING.match(head, start)
        if string is None:
            return None  # cut inside a string
        at = string.end()
        if depth == 1 and string.group() == b'"id"':
            value = _ID_VALUE.match(head, at)
            if value is not None:  # a key (a value "id" has no colon after it)
                token = value.group(1)
                try:
                    rid = msgspec.json.decode(token)
                except msgspec.DecodeError:
                    return None
                return rid if isinstance(rid, (str, int)) else None
    return None


def error_id(exc: ProtocolError) -> RequestId | None:
    """The request id a decode error belongs to, if it could be read."""
    data = exc.data
    return data.get("id") if isinstance(data, dict) else None


def result(rid: RequestId, value: Any) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": rid, "result": value}


class Encoded(dict[str, Any]):
    """A message that carries its own JSON (`encode` returns ``raw``, no second pass).

    Every reader sees the plain message dict; it must not be changed once made (the bytes
    would no longer match it).
    """

    __slots__ = ("raw",)
    raw: bytes


def spliced_result(rid: RequestId, value: dict[str, Any], key: str, data: bytes) -> Encoded:
    """A success response whose ``value[key]`` is already encoded as ``data``.

    The bytes are those `encode` would give for ``result(rid, value)`` (same encoder, same
    key order); ``value[key]`` goes in as ``data`` instead of being encoded again.
    """
    wire = dict(value)
    wire[key] = msgspec.Raw(data)
    message = Encoded(jsonrpc="2.0", id=rid, result=value)
    message.raw = _encoder.encode({"jsonrpc": "2.0", "id": rid, "result": wire})
    return message


def error(rid: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """An error response (``id`` null when the request's id could not be read)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def resource_not_found(uri: str, modern: bool) -> ProtocolError:
    """The "Resource not found" of ``uri``: -32002 after the handshake, -32602 at 2026-07-28,
    which must not emit -32002 (`RESOURCE_NOT_FOUND`)."""
    code = INVALID_PARAMS if modern else RESOURCE_NOT_FOUND
    return ProtocolError(code, "Resource not found", {"uri": uri})


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A notification message."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def request(rid: RequestId, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request message (server to client)."""
    msg = notification(method, params)
    msg["id"] = rid
    return msg


def encode(message: dict[str, Any]) -> bytes:
    """Serialize a message to compact UTF-8 JSON."""
    if type(message) is Encoded:
        return message.raw
    return _encoder.encode(message)
