"""JSON-RPC batches on a Streamable HTTP session negotiated at MCP 2025-03-26.

That revision says implementations "MUST support receiving JSON-RPC batches" (2025-06-18
removed them; a session at a later revision, and anything without a session, still gets 400).
A POST body that is an array is served as the revision's transport says:

- only notifications and responses: each is handled in order, then 202 with no body;
- with requests: each call runs in the session (not in the POST's task: one may wait on
  another, or on the client) and writes its answer into one stream shared by the batch. If
  nothing but the answers comes before the last of them, the POST gets them as one JSON array
  (200); once a call sends anything else first (progress, a log, a request to the client),
  the POST gets the stream instead (SSE, resumable as any), which carries every answer.

A batch is checked whole before any of it runs: an empty or malformed batch, an element that
is not a valid message, an ``initialize`` (which "MUST NOT be part of a JSON-RPC batch"), or
a request id repeated or already in flight refuses it all (400, a JSON-RPC error without an
id), so that no half of a batch runs while the client is told it failed. At most `MAX_BATCH`
messages: one stream keeps `agora.transports.sse.MAX_EVENTS` events for resumption.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc
from agora.web.http import EventStream, Response

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.transports.http_session import HttpSession
    from agora.transports.sse import EventBuffer

__all__ = ["MAX_BATCH", "VERSION", "exchange", "is_batch"]

#: The one revision whose sessions take batches.
VERSION = "2025-03-26"
#: Most messages in one batch.
MAX_BATCH = 256


def is_batch(body: bytes) -> bool:
    """Whether a POST body is a JSON array (its first character other than white space)."""
    return body[:64].lstrip()[:1] == b"["


def parse(body: bytes) -> list[rpc.Message] | str:
    """The messages of a batch, or what is wrong with it (the whole batch is refused)."""
    try:
        rpc.check_shape(body, outer=1)  # (the messages are the batch's level 2)
        items = msgspec.json.decode(body)
    except ProtocolError as exc:
        return exc.message
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        return f"parse error: {exc}"
    if not isinstance(items, list) or not items:
        return "a batch must be a non-empty JSON array"
    if len(items) > MAX_BATCH:
        return f"a batch holds at most {MAX_BATCH} messages"
    messages: list[rpc.Message] = []
    ids: set[rpc.RequestId] = set()
    for n, item in enumerate(items):
        try:
            msg = rpc.parse(item, walk=False)
        except ProtocolError as exc:
            return f"batch element {n}: {exc.message}"
        if isinstance(msg, rpc.Request):
            if msg.method == "initialize":
                return "initialize must not be part of a batch"
            if msg.id in ids:
                return f"batch element {n}: request id {msg.id!r} is repeated"
            ids.add(msg.id)
        messages.append(msg)
    return messages


async def exchange(
    session: HttpSession,
    body: bytes,
    stream: Callable[[HttpSession, EventBuffer, int], EventStream],
) -> Response | EventStream:
    """Serve batch ``body`` in ``session``; ``stream`` makes the SSE answer of a buffer."""
    messages = parse(body)
    if isinstance(messages, str):
        return Response.json(rpc.error(None, rpc.INVALID_REQUEST, messages), 400)
    requests = [msg.id for msg in messages if isinstance(msg, rpc.Request)]
    if any(rid in session.replies for rid in requests):
        refused = rpc.error(None, rpc.INVALID_REQUEST, "a request id of the batch is in flight")
        return Response.json(refused, 400)
    buf = session.open_batch(requests) if requests else None
    hangups = buf.hangups if buf is not None else 0
    for msg in messages:
        await session.conn.feed(msg)
        if isinstance(msg, rpc.Notification) and msg.method == "notifications/cancelled":
            session.cancelled(msg.params.get("requestId"))
    if buf is None:
        return Response(202)
    answers = buf.answers
    assert answers is not None
    # JSON while nothing but answers came; the stream once anything else does.
    while not (buf.closed or buf.hangups != hangups or len(buf.events) > len(answers)):
        await buf.signal().wait()
    if buf.closed and len(buf.events) == len(answers):
        session.streams.pop(buf.stream_id, None)
        return Response(200, ("[" + ",".join(answers) + "]").encode(), "application/json")
    return stream(session, buf, hangups)
