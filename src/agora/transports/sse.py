"""Server-Sent Events: resumable per-stream event buffers and their wire format.

Every SSE stream the server opens (a POST's reply stream, or the GET stream) writes into an
`EventBuffer`. The HTTP response reads from it; if the client drops the connection it can
reconnect with ``Last-Event-ID`` and read on from where it was, until the buffer expires; the
resumption takes the stream over, ending the response that read it until then (MCP: a message
must not be broadcast across streams).
The 2026-07-28 revision has no resumption: its streams' events carry no ids.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from agora.web.http import media_quality

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

#: Most events kept per stream for resumption.
MAX_EVENTS = 1024
#: Seconds a stream may stay silent before a comment line is sent: a reader that went away
#: is then found out by the failed write (instead of holding its session for ever).
KEEPALIVE_SECONDS = 15.0
KEEPALIVE = b": keepalive\n\n"
#: Stream ids: unique in this process (a stream is found through its session, which the
#: client must hold anyway), so a counter after a random prefix; no system call per stream.
_ID_PREFIX = secrets.token_hex(4)
_ids = itertools.count(1)


def format_event(
    data: str, *, event_id: str | None = None, event: str | None = None, retry_ms: int | None = None
) -> bytes:
    """One SSE event in wire format."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event is not None:
        lines.append(f"event: {event}")
    if retry_ms is not None:
        lines.append(f"retry: {retry_ms}")
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


@dataclass(eq=False)
class EventBuffer:
    """Events of one stream, numbered from 1; ``closed`` once the last one is written."""

    stream_id: str = field(default_factory=lambda: f"{_ID_PREFIX}{next(_ids):x}")
    events: list[bytes] = field(default_factory=list)
    first: int = 1
    closed: bool = False
    #: Bumped to end the current HTTP response while keeping the stream resumable.
    hangups: int = 0
    #: Number of the last event written before the latest hangup: the cut-off point of
    #: the responses it ends, so nothing written after it reaches a response already told
    #: to end (the client must find it by resuming).
    cut: int = 0
    #: Bumped when a client resumes the stream: the HTTP responses reading it until then end
    #: at once (an event goes out on one response only, the newest reader's).
    takeovers: int = 0
    #: The final JSON-RPC response written to this stream, once there is one.
    final: str | None = None
    #: Its error code, when it is an error.
    code: int | None = None
    #: The answers written so far, on a batch's stream (`agora.transports.batch`); None on
    #: another. Such a stream ends with its ``expected``-th answer, not its first.
    answers: list[str] | None = None
    expected: int = 1
    #: Events carry ids, for ``Last-Event-ID`` (a 2026-07-28 stream is not resumed: none).
    resumable: bool = True
    #: Set by the next change; made only when someone waits (most streams are never read).
    _changed: trio.Event | None = None

    def event_id(self, n: int) -> str:
        """The wire id of event number ``n``."""
        return f"{self.stream_id}-{n}"

    def append(self, data: str) -> None:
        """Add one message (dropping the oldest beyond MAX_EVENTS)."""
        n = self.first + len(self.events)
        event_id = self.event_id(n) if self.resumable else None
        self.events.append(format_event(data, event_id=event_id))
        if len(self.events) > MAX_EVENTS:
            del self.events[0]
            self.first += 1
        self._wake()

    def close(self) -> None:
        """No more events will come."""
        self.closed = True
        self._wake()

    def hangup(self) -> None:
        """End the HTTP response reading this stream; the client may resume it."""
        self.hangups += 1
        self.cut = self.first + len(self.events) - 1
        self._wake()

    def take_over(self) -> None:
        """End the HTTP responses reading this stream now: a client resumed it."""
        self.takeovers += 1
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def signal(self) -> trio.Event:
        """An event set by the next append, close or hangup."""
        if self._changed is None:
            self._changed = trio.Event()
        return self._changed

    def since(self, n: int, upto: int | None = None) -> tuple[list[bytes], int]:
        """Events after number ``n`` (up to number ``upto``) and the number of the last one."""
        start = max(n + 1, self.first)
        last = self.first + len(self.events) - 1
        if upto is not None:
            last = min(last, upto)
        return self.events[start - self.first : max(last - self.first + 1, 0)], last


def accepts_event_stream(accept: str) -> bool:
    """Whether an ``Accept`` header takes ``text/event-stream`` at a quality above 0.

    MCP asks a GET's client to list it (a missing header takes nothing here); ``q=0``, the
    parameter's name case-insensitive, says "not acceptable" (RFC 9110 §12.4.2), and the
    most specific range that matches says it (``text/event-stream;q=0, */*`` refuses), as
    RFC 9110 §12.5.1 has it (`agora.web.http.media_quality`).
    """
    return media_quality(accept, "text/event-stream") > 0


def parse_event_id(value: str) -> tuple[str, int] | None:
    """``(stream_id, n)`` from a Last-Event-ID header, or None if malformed."""
    stream_id, _, n = value.rpartition("-")
    if not stream_id or not n.isdigit():
        return None
    return stream_id, int(n)


def read_stream(
    buffer: EventBuffer, after: int, *, prime_retry_ms: int | None, hangups: int | None = None
) -> AsyncGenerator[bytes]:
    """Wire events of ``buffer`` after number ``after``, until it closes or hangs up.

    A comment line (`KEEPALIVE`) is yielded after every KEEPALIVE_SECONDS of silence.

    With ``prime_retry_ms``, first yield a priming event (an id and empty data, SEP-1699) so
    the client can reconnect with Last-Event-ID even before the first real event. A hangup
    counts from this call on, not from the first iteration: a response created before the
    call it carries hangs up must still end; ``hangups`` (a count read earlier) moves that
    start back, for a response that is chosen only after the call began. A takeover
    (`EventBuffer.take_over`, a resumption) after this call ends it before its next event.
    """
    hangups = buffer.hangups if hangups is None else hangups
    return _read(buffer, after, prime_retry_ms, hangups, buffer.takeovers)


async def _read(
    buffer: EventBuffer, after: int, prime_retry_ms: int | None, hangups: int, owner: int
) -> AsyncGenerator[bytes]:
    if prime_retry_ms is not None:
        yield format_event("", event_id=buffer.event_id(after), retry_ms=prime_retry_ms)
    while True:
        signal = buffer.signal()
        hung_up = buffer.hangups != hangups
        done = buffer.closed or hung_up
        events, last = buffer.since(after, buffer.cut if hung_up else None)
        for event in events:
            if buffer.takeovers != owner:  # resumed elsewhere (maybe while this one wrote)
                return
            yield event
        after = max(after, last)
        if done or buffer.takeovers != owner:
            return
        with trio.move_on_after(KEEPALIVE_SECONDS) as quiet:
            await signal.wait()
        if quiet.cancelled_caught:
            yield KEEPALIVE
