"""Writing HTTP/1.1 responses on a connection's descriptor: whole ones, SSE streams, errors.

`Responder` is the writing half of a front-end connection (`agora.transports.http`): a
whole response is one ``os.write`` when the kernel takes it (head and body together), a
write the peer leaves unread for ``send_timeout`` ends the connection, an error is sent only
if no response has begun (`refusal_response`: HTML for a browser's page request, else
JSON). An SSE reply is streamed as chunks (or until close); one that begins while the
request's own task is still running its call (`stream_early`) is written by a second task of
the connection, in `nursery`. Nothing here reads requests.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING

import trio

from agora.logsafe import peer_name
from agora.transports import http1
from agora.transports.sse import format_event
from agora.web.http import EventStream, Request, Response, error_response
from agora.web.prefix import prefixed_html

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

CLOSE = ("connection", "close")


def refusal_response(request: Request, status: int, message: str) -> Response:
    """``{"error": message}``, or a small HTML page for a browser's page request: an MCP
    endpoint's (``/mcp...``) refusals stay JSON whatever the client accepts, for MCP clients
    read them."""
    if request.path == "/mcp" or request.path.startswith("/mcp/"):
        return Response.error(status, message)
    return error_response(request, status, message)


class Closed(Exception):
    """End the connection without another word."""


class Responder:
    """What a connection writes, and whether it has begun to answer the current request.

    Args:
        stream: The connection (its descriptor is written directly).
        send_timeout: Seconds a write may wait for the peer to read.
    """

    def __init__(self, stream: trio.SocketStream, send_timeout: float) -> None:
        self.stream = stream
        self.fd = stream.socket.fileno()
        self.send_timeout = send_timeout
        #: A response to the current request has begun: no other may be sent.
        self.responding = False
        #: The last response refused the request: close lingering, so the peer reads it.
        self.refused = False
        #: Runs an SSE response that starts while its request's task still runs the call.
        self.nursery: trio.Nursery | None = None
        #: Whether the current request may be answered in chunked encoding and kept alive.
        self.chunked = False
        #: The SSE response started early for the current request, once there is one.
        self.early: EventStream | None = None
        self.early_done = trio.Event()
        self.early_keep = False
        #: The current request is a HEAD: its response has a head and no body (RFC 9110,
        #: 9.3.2), with the Content-Length the body would have had.
        self.head_only = False
        #: The path prefix of ``public_url`` its pages link under (`agora.web.prefix`).
        self.base = ""
        #: Ends the watch for the client's hang-up (`watch_hangup`), if one runs.
        self.watching: trio.CancelScope | None = None
        #: The callback of that watch in the front end's `HangupWatch`, if it is there.
        self.hung_up: Callable[[], None] | None = None
        #: The client closed the connection and the socket is closed: nothing more is
        #: written, not even to its descriptor's number, which the kernel may give another.
        self.gone = False

    async def _write(self, data: bytes) -> None:
        """Send bytes; a peer that leaves them unread for ``send_timeout`` is dropped."""
        if self.gone:
            raise Closed
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                pass
            except OSError as exc:
                raise trio.BrokenResourceError(f"write failed: {exc}") from exc
            if view:  # the kernel's buffer is full: wait, but not for ever
                with trio.move_on_after(self.send_timeout) as slow:
                    await trio.lowlevel.wait_writable(self.fd)
                if slow.cancelled_caught:
                    log.info(
                        "http peer %s stopped reading for %g s (send_timeout); closing",
                        self.remote,
                        self.send_timeout,
                    )
                    raise Closed

    @property
    def remote(self) -> str:
        """The peer's address, for the log."""
        return peer_name(self.stream.socket)

    async def _send(self, resp: Response, keep: bool = False) -> None:
        """Send a whole response; with ``keep`` (the request was read whole) stay open."""
        if self.base and resp.content_type.startswith("text/html"):
            resp.body = prefixed_html(resp.body, self.base)
        body = b"" if self.head_only else resp.body
        if keep and not resp.headers:  # the usual answer: its head from a template
            self.responding = True
            await self._write(
                http1.plain_head(resp.status, resp.content_type, len(resp.body)) + body
            )
            return
        headers = [
            ("content-type", resp.content_type),
            ("content-length", str(len(resp.body))),
            *resp.headers,
        ]
        if not keep:
            headers.append(CLOSE)
            self.refused = resp.status >= 400
        self.responding = True
        await self._write(http1.response_head(resp.status, headers) + body)

    async def _send_error(
        self,
        status: int,
        message: str | dict[str, object] | Response,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        """Answer ``status`` (and close) if no response has started; never raises.

        ``message`` is an error text (sent as ``{"error": ...}``), a JSON body, or the whole
        response (whose status is then its own)."""
        if self.responding:
            return
        if isinstance(message, Response):
            resp = message
        elif isinstance(message, str):
            resp = Response.error(status, message)
        else:
            resp = Response.json(message, status)
        resp.headers.extend(extra or [])
        with contextlib.suppress(Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            await self._send(resp)

    def stream_early(self, reply: EventStream) -> None:
        """Start sending ``reply`` from another task: this one is still running the call."""
        assert self.nursery is not None
        self.responding = True
        self.early = reply
        self.early_done = trio.Event()
        self.nursery.start_soon(self._send_early, reply, self.chunked)

    async def _send_early(self, reply: EventStream, chunked: bool) -> None:
        self.early_keep = False
        try:
            self.early_keep = await self._stream(reply, chunked)
        except (Closed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.early_done.set()

    def watch_hangup(self, hung_up: Callable[[], None]) -> None:
        """Call ``hung_up`` if the client closes the connection before the current request's
        response is over; a connection that can tell overrides this (here: never)."""

    async def _stream(self, reply: EventStream, chunked: bool) -> bool:
        """Send an SSE response; whether the connection can carry another request."""
        # The stream's own Cache-Control, if it gives one (a page's no-store), replaces the
        # default: two that disagree leave a cache to pick one.
        own = {name.lower() for name, _ in reply.headers}
        headers = [("content-type", "text/event-stream")]
        if "cache-control" not in own:
            headers.append(("cache-control", "no-cache"))
        headers.append(("transfer-encoding", "chunked") if chunked else CLOSE)
        headers += reply.headers
        self.responding = True
        frame = http1.chunk if chunked else bytes
        await self._write(http1.response_head(200, headers))
        try:
            if self.head_only:  # the head a GET would get, and no stream
                return chunked
            with trio.CancelScope() as gone:
                # A page's stream would learn that its reader closed the connection only when
                # a write failed: the second keep-alive after the hang-up (the first still
                # fits the socket's buffer). An MCP call's stream is watched by its session.
                if self.watching is None:
                    self.watch_hangup(gone.cancel)
                async for item in reply.events:
                    data = item if isinstance(item, bytes) else format_event(item[1], event=item[0])
                    await self._write(frame(data))
            if gone.cancelled_caught:
                return False  # nobody is left to read the last chunk
        finally:
            # Finish the source now (a stalled or vanished reader), not when it is collected.
            aclose = getattr(reply.events, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await aclose()
        if chunked:
            await self._write(http1.LAST_CHUNK)
        return chunked
