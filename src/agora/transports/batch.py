"""JSON-RPC batches on a Streamable HTTP session negotiated at MCP 2025-03-26.

A session at a later revision, and anything without a session, still gets 400 for a batch.
What a batch holds is `agora.mcp.batch.parse`'s to say (stdio and WebSocket serve the same,
`agora.server.batches`). A POST body that is an array is served as the revision's transport
says:

- no requests: each message is handled in order, then 202 with no body, or 200 with the
  errors of the elements that are not valid messages as a JSON array;
- with requests: each call runs in the session (not in the POST's task: one may wait on
  another, or on the client) and writes its answer into one stream shared by the batch, which
  starts with the errors of the invalid elements. If nothing but the answers comes before the
  last of them, the POST gets them as one JSON array (200); once a call sends anything else
  first (progress, a log, a request to the client), the POST gets the stream instead (SSE,
  resumable as any), which carries every answer.

A batch that `parse` refuses whole, or whose request id is already in flight, gets 400 and
one JSON-RPC error without an id, before any of it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.mcp import batch
from agora.mcp import jsonrpc as rpc
from agora.transports.hangup_policy import watch_batch
from agora.web.http import EventStream, Response

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.transports.http_session import HttpSession
    from agora.transports.sse import EventBuffer
    from agora.transports.streamable import Link

__all__ = ["exchange"]


async def exchange(
    session: HttpSession,
    body: bytes,
    stream: Callable[[HttpSession, EventBuffer, int], EventStream],
    link: Link | None = None,
) -> Response | EventStream:
    """Serve batch ``body`` in ``session``; ``stream`` makes the SSE answer of a buffer.

    With ``link`` (the POST's connection), a client that hangs up before the answer ends
    the batch's calls or its response (`agora.transports.hangup_policy.watch_batch`)."""
    parsed = batch.parse(body)
    if isinstance(parsed, dict):
        return Response.json(parsed, 400)
    requests = parsed.requests
    if any(rid in session.replies for rid in requests):
        refused = rpc.error(None, rpc.INVALID_REQUEST, "a request id of the batch is in flight")
        return Response.json(refused, 400)
    buf = session.open_batch(requests, parsed.errors) if requests else None
    if buf is not None and link is not None:
        watch_batch(link, session, buf, requests)
    hangups = buf.hangups if buf is not None else 0
    for msg in parsed.messages:
        await session.conn.feed(msg)
    if buf is None:
        return Response.json(parsed.errors) if parsed.errors else Response(202)
    answers = buf.answers
    assert answers is not None
    # JSON while nothing but answers came; the stream once anything else does.
    while not (buf.closed or buf.hangups != hangups or len(buf.events) > len(answers)):
        await buf.signal().wait()
    if buf.closed and answers and len(buf.events) == len(answers):
        session.streams.pop(buf.stream_id, None)
        return Response(200, ("[" + ",".join(answers) + "]").encode(), "application/json")
    return stream(session, buf, hangups)
