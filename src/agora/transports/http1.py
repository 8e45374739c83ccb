"""HTTP/1.1 on the wire, sans-io: a strict request-head parser, body framing, response bytes.

The front end reads bytes into a buffer and asks `parse_head` for the next request head,
then `BodyReader` for its body; it writes what `response_head`, `chunk` and `LAST_CHUNK`
return. Strict where laxness lets a request mean two things (RFC 9112): one framing only
(``Content-Length`` xor ``Transfer-Encoding: chunked``), a single well-formed length, no
obsolete line folding, no control characters, CRLF line ends, bounded sizes. It replaces
h11 on this path because a request cycle through h11 cost several times a whole tool call;
it does no I/O and knows nothing of routes or MCP.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from email.utils import formatdate

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
#: A method token, an origin-form (or asterisk/absolute) target without spaces or controls.
_REQUEST_LINE = re.compile(rf"({_TOKEN}) ([!-~]+) HTTP/(1\.[01])")
#: One header line: a token, a colon, a value of visible characters (and inner blanks).
_VALUE = r"(?:[!-~\x80-\xff]+(?:[ \t]+[!-~\x80-\xff]+)*)?"
_FIELD = re.compile(rf"({_TOKEN}):[ \t]*({_VALUE})[ \t]*\r\n")
_FIELDS = re.compile(rf"(?:{_TOKEN}:[ \t]*{_VALUE}[ \t]*\r\n)*")
#: What a request line can look like before its end has arrived.
_PARTIAL_LINE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?: [!-~]*(?: [!-~]*)?)?")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})(?:;[^\r\n]*)?")
#: Most bytes of a chunk-size line, its chunk extensions included.
MAX_CHUNK_LINE = 1024
#: Most bytes of a chunked body's trailer section (read and dropped: nothing uses them), as
#: of a request head: any one trailer line may take all of it.
MAX_TRAILERS = 16384
#: Headers whose repetition would make a request ambiguous.
_SINGLE = frozenset({"content-length", "transfer-encoding", "host", "origin"})
REASONS = {
    100: "Continue",
    101: "Switching Protocols",
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    408: "Request Timeout",
    409: "Conflict",
    412: "Precondition Failed",
    413: "Content Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    417: "Expectation Failed",
    426: "Upgrade Required",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


class HttpError(Exception):
    """The request cannot be served: answer ``status`` with ``message`` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Head:
    """One parsed request head.

    Attributes:
        raw: The head's bytes, up to and including the blank line.
        headers: Lower-cased names; a repeated header's values joined with ``", "``.
        length: The body's Content-Length (0 when neither framing is given).
        chunked: The body is in chunked transfer coding.
        keep_alive: The client lets the connection carry another request.
    """

    method: str
    target: str
    version: str
    headers: dict[str, str]
    raw: bytes
    length: int
    chunked: bool
    keep_alive: bool

    @property
    def expects_continue(self) -> bool:
        """The client waits for ``100 Continue`` before sending its body."""
        return self.headers.get("expect", "").lower() == "100-continue" and self.has_body

    @property
    def expects_other(self) -> bool:
        """The client asks for an expectation other than ``100-continue`` (417)."""
        expect = self.headers.get("expect")
        return expect is not None and expect.lower() != "100-continue"

    @property
    def has_body(self) -> bool:
        """A body follows the head."""
        return self.chunked or self.length > 0


def body_refusal(head: Head, limit: int) -> tuple[int, str] | None:
    """Why a request's body is refused before it is read (status, message), if it is: 413
    past ``limit`` bytes, 417 for an expectation other than ``100-continue`` (RFC 9110
    10.1.1: one the server cannot meet)."""
    if head.length > limit:
        return 413, f"request body larger than {limit} bytes"
    if head.expects_other:
        return 417, "Expect: only 100-continue is understood here"
    return None


def parse_head(buf: bytearray, max_head: int) -> Head | None:
    """Take one request head off the front of ``buf``; None if it is not all there yet.

    Raises:
        HttpError: 400 for a malformed or ambiguous head, 414 for a request line past
            ``max_head`` bytes, 431 for a head past them, 501 for a transfer coding other
            than chunked.
    """
    while buf.startswith(b"\r\n"):  # blank lines before a request are allowed (RFC 9112 2.2)
        del buf[:2]
    end = buf.find(b"\r\n\r\n", 0, max_head + 4)
    if end < 0:
        line_end = buf.find(b"\r\n")
        if line_end < 0 and buf:
            seen = min(len(buf), max_head)
            if seen == len(buf) and buf.endswith(b"\r"):  # its LF may come in the next read
                seen -= 1
            if seen and not _PARTIAL_LINE.fullmatch(buf, 0, seen):
                raise HttpError(400, "malformed request line")  # noise: say so without waiting
        if len(buf) >= max_head + 4:
            if line_end < 0 or line_end >= max_head:  # the request line alone is too long
                raise HttpError(414, f"request target longer than {max_head} bytes")
            raise HttpError(431, f"request head larger than {max_head} bytes")
        return None
    raw = bytes(buf[: end + 4])
    del buf[: end + 4]
    # Latin-1 maps bytes to characters one to one: the checks below see every byte.
    text = raw[: end + 2].decode("latin-1")
    line_end = text.index("\r\n")
    first = _REQUEST_LINE.fullmatch(text, 0, line_end)
    if first is None:
        raise HttpError(400, "malformed request line")
    if not _FIELDS.fullmatch(text, line_end + 2):
        raise HttpError(400, "malformed header line")
    fields = _FIELD.findall(text, line_end + 2)
    headers = {name.lower(): value for name, value in fields}
    if len(headers) != len(fields):
        headers = _merge(fields)
    version = first[3]
    length, chunked = _framing(headers, version)
    connection = headers.get("connection")
    if connection is None:
        keep_alive = version == "1.1"
    else:
        tokens = {t.strip().lower() for t in connection.split(",")}
        keep_alive = "close" not in tokens and (version == "1.1" or "keep-alive" in tokens)
    return Head(first[1], first[2], version, headers, raw, length, chunked, keep_alive)


def _merge(fields: list[tuple[str, str]]) -> dict[str, str]:
    """Headers with repeated names joined by ``", "``; a repeated framing or Host is refused."""
    headers: dict[str, str] = {}
    for name, value in fields:
        key = name.lower()
        if key in headers:
            if key in _SINGLE:
                raise HttpError(400, f"repeated {key} header")
            value = f"{headers[key]}, {value}"
        headers[key] = value
    return headers


def _framing(headers: dict[str, str], version: str) -> tuple[int, bool]:
    coding = headers.get("transfer-encoding")
    declared = headers.get("content-length")
    if coding is not None:
        if declared is not None:
            # Two framings: a proxy in front may pick the other one (request smuggling).
            raise HttpError(400, "Content-Length and Transfer-Encoding together")
        if coding.lower() != "chunked" or version != "1.1":
            raise HttpError(501, f"unsupported Transfer-Encoding: {coding}")
        return 0, True
    if declared is None:
        return 0, False
    if not declared.isdigit() or not declared.isascii() or len(declared) > 18:
        raise HttpError(400, "malformed Content-Length")
    return int(declared), False


class BodyReader:
    """Takes one request body off a connection's buffer, bounded by ``limit`` bytes."""

    def __init__(self, head: Head, limit: int) -> None:
        self.limit = limit
        self.chunked = head.chunked
        self.remaining = head.length
        self.body = bytearray()
        self.done = not head.has_body
        self._trailers = False
        self._trailer_bytes = 0

    def feed(self, buf: bytearray) -> None:
        """Consume what ``buf`` holds of the body; ``done`` once it is whole.

        Raises:
            HttpError: 413 past the limit, 400 for malformed chunked coding.
        """
        if self.chunked:
            self._chunks(buf)
        else:
            take = buf[: self.remaining]
            del buf[: self.remaining]
            self.body += take
            self.remaining -= len(take)
            self.done = self.remaining == 0
        if len(self.body) > self.limit:
            raise HttpError(413, f"request body larger than {self.limit} bytes")

    def _chunks(self, buf: bytearray) -> None:
        while not self.done:
            # A trailer line is a header line: bounded as the head is, by what is left of
            # the trailer section's bytes; a chunk-size line by MAX_CHUNK_LINE.
            bound = MAX_TRAILERS - self._trailer_bytes if self._trailers else MAX_CHUNK_LINE
            end = buf.find(b"\r\n", 0, bound)
            bare = buf.find(b"\n", 0, bound if end < 0 else end)
            if bare >= 0:  # a line ended by LF alone: no CRLF is coming to end it
                raise HttpError(400, "malformed chunked body: its lines must end with CRLF")
            if end < 0:
                if len(buf) < bound:
                    return
                if self._trailers:  # skipped, but not without end
                    raise HttpError(431, f"trailer section larger than {MAX_TRAILERS} bytes")
                raise HttpError(400, f"chunk-size line longer than {MAX_CHUNK_LINE} bytes")
            if self._trailers:  # after the last chunk: trailer lines until a blank one
                self._trailer_bytes += end + 2
                del buf[: end + 2]
                self.done = end == 0
                continue
            size_line = _CHUNK_SIZE.fullmatch(buf, 0, end)
            if size_line is None:
                raise HttpError(400, "malformed chunk size")
            size = int(size_line[1], 16)
            if size == 0:
                del buf[: end + 2]
                self._trailers = True
                continue
            if len(self.body) + size > self.limit:
                raise HttpError(413, f"request body larger than {self.limit} bytes")
            if len(buf) < end + 2 + size + 2:
                return
            if buf[end + 2 + size : end + 4 + size] != b"\r\n":
                raise HttpError(400, "chunk not followed by CRLF")
            self.body += buf[end + 2 : end + 2 + size]
            del buf[: end + 4 + size]


_date: tuple[int, str] = (0, "")


def http_date() -> str:
    """Now as the ``Date`` header writes it (RFC 9110, 6.6.1), made once a second."""
    global _date  # a one-entry cache of the formatted second
    second = int(time.time())
    if _date[0] != second:
        _date = (second, formatdate(second, usegmt=True))
    return _date[1]


def response_head(status: int, headers: list[tuple[str, str]]) -> bytes:
    """A response's status line, ``Date`` and ``headers``, up to and including the blank line.

    Raises:
        ValueError: a header name or value would break the message (CR, LF).
    """
    fields = "".join(f"{name}: {value}\r\n" for name, value in headers)
    if fields.count("\n") != len(headers) or fields.count("\r") != len(headers):
        raise ValueError("a response header contains CR or LF")
    reason = REASONS.get(status, "Unknown")
    return f"HTTP/1.1 {status} {reason}\r\ndate: {http_date()}\r\n{fields}\r\n".encode("latin-1")


_PLAIN: dict[tuple[int, str], bytes] = {}


def plain_head(status: int, content_type: str, length: int) -> bytes:
    """`response_head` with just Content-Type and Content-Length, from a template made once
    per status and type.

    Raises:
        ValueError: the content type contains CR or LF.
    """
    try:
        template = _PLAIN[status, content_type]
    except KeyError:
        head = response_head(status, [("content-type", content_type), ("content-length", "")])
        head = head.replace(b"%", b"%%")
        template = re.sub(rb"^date: [^\r]*\r\n", b"date: %s\r\n", head, count=1, flags=re.M)
        template = template.replace(b"length: \r\n", b"length: %d\r\n")
        if len(_PLAIN) < 64:  # a handful in practice; bounded all the same
            _PLAIN[status, content_type] = template
    return template % (http_date().encode("ascii"), length)


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body (empty data would end the body: none)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""
