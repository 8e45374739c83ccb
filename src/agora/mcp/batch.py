"""JSON-RPC batches as MCP 2025-03-26 has them: which sessions take one, and what it holds.

That revision says implementations "MUST support receiving JSON-RPC batches" (2025-06-18
removed them: a session at a later revision refuses a batch as one malformed message). Every
transport serves a batch from what `parse` makes of it: Streamable HTTP in
`agora.transports.batch`, stdio and WebSocket in `agora.server.batches`.

As JSON-RPC 2.0 says, an element that is not a valid message (or is an ``initialize``, which
"MUST NOT be part of a JSON-RPC batch") gets an error of its own, with its id or null, and the
others run. What no element can be answered for refuses the batch whole with one error
without an id: JSON that does not parse, an empty array, more than `MAX_BATCH` messages, a
request id repeated (two answers with one id could not be told apart). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc

__all__ = [
    "INITIALIZE_IN_BATCH",
    "MAX_BATCH",
    "NOT_A_MESSAGE",
    "VERSION",
    "Batch",
    "decode",
    "is_batch",
    "joined",
    "parse",
]

#: The one revision whose sessions take batches.
VERSION = "2025-03-26"
#: Most messages in one batch (a Streamable HTTP stream keeps at most
#: `agora.transports.sse.MAX_EVENTS` events for resumption).
MAX_BATCH = 256
#: Why an element of a batch that is itself an array is refused.
NOT_A_MESSAGE = "a batch element must be a JSON-RPC message object, not an array"
#: Why a batch that holds an ``initialize`` is refused when no session takes it.
INITIALIZE_IN_BATCH = "initialize cannot be sent in a batch (MCP 2025-03-26 forbids it)"
#: An ``initialize`` element's own error, in a session's batch.
_INITIALIZE = "initialize must not be part of a batch"


@dataclass
class Batch:
    """A batch's valid messages, in order, and the answers of its elements that are not."""

    messages: list[rpc.Message] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def requests(self) -> list[rpc.RequestId]:
        """The ids of the batch's requests, each owed an answer."""
        return [msg.id for msg in self.messages if isinstance(msg, rpc.Request)]


def is_batch(data: bytes | str) -> bool:
    """Whether a message is a JSON array (its first character other than white space)."""
    head = data[:64].lstrip()[:1]
    return head in (b"[", "[")


def decode(data: bytes | str) -> rpc.Message:
    """One message, as `rpc.decode` has it, where no session serves batches; but a batch
    that holds an ``initialize`` is refused as that (`INITIALIZE_IN_BATCH`): its sender
    opens a session at 2025-03-26, which takes batches but never an ``initialize`` in one.

    Raises:
        ProtocolError: as `rpc.decode`.
    """
    try:
        return rpc.decode(data)
    except ProtocolError:
        parsed = parse(data) if is_batch(data) else None
        if isinstance(parsed, Batch) and any(
            error["error"]["message"] == _INITIALIZE for error in parsed.errors
        ):
            raise ProtocolError(rpc.INVALID_REQUEST, INITIALIZE_IN_BATCH) from None
        raise


def parse(data: bytes | str) -> Batch | dict[str, Any]:
    """The messages of batch ``data``, or the one error that refuses it whole."""
    try:
        rpc.check_shape(data, outer=1)  # (the messages are the batch's level 2)
        items = msgspec.json.decode(data)
    except ProtocolError as exc:
        return rpc.error(None, exc.code, exc.message)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        return rpc.error(None, rpc.PARSE_ERROR, f"parse error: {exc}")
    if not isinstance(items, list) or not items:
        return rpc.error(None, rpc.INVALID_REQUEST, "a batch must be a non-empty JSON array")
    if len(items) > MAX_BATCH:
        return rpc.error(None, rpc.INVALID_REQUEST, f"a batch holds at most {MAX_BATCH} messages")
    batch = Batch()
    ids: set[rpc.RequestId] = set()
    for n, item in enumerate(items):
        try:
            if isinstance(item, list):  # (`rpc.parse` would call it a batch of a later revision)
                raise ProtocolError(rpc.INVALID_REQUEST, NOT_A_MESSAGE)
            msg = rpc.parse(item, walk=False)
        except ProtocolError as exc:
            rid = rpc.error_id(exc)
            batch.errors.append(rpc.error(rid, exc.code, f"batch element {n}: {exc.message}"))
        else:
            rid = msg.id if isinstance(msg, rpc.Request) else None
            if isinstance(msg, rpc.Request) and msg.method == "initialize":
                batch.errors.append(rpc.error(rid, rpc.INVALID_REQUEST, _INITIALIZE))
            else:
                batch.messages.append(msg)
        if rid is not None:
            if rid in ids:
                repeated = f"batch element {n}: request id {rid!r} is repeated"
                return rpc.error(None, rpc.INVALID_REQUEST, repeated)
            ids.add(rid)
    return batch


def joined(answers: list[bytes]) -> rpc.Encoded:
    """The answer to a batch: its encoded answers as one JSON array (`rpc.encode` gives
    the array; the message itself is empty, nothing reads it)."""
    message = rpc.Encoded()
    message.raw = b"[" + b",".join(answers) + b"]"
    return message
