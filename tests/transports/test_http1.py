"""The HTTP/1.1 codec, sans-io: heads, framing, chunked bodies, response bytes."""

from __future__ import annotations

import ast
import re
from http import HTTPStatus
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agora
from agora.transports.http1 import (
    MAX_TRAILERS,
    BodyReader,
    HttpError,
    chunk,
    http_date,
    parse_head,
    plain_head,
    response_head,
)

MAX = 16384


def head_of(raw: bytes):
    buf = bytearray(raw)
    return parse_head(buf, MAX), buf


def test_a_request_head_is_parsed_and_taken_off_the_buffer():
    raw = (
        b"\r\nPOST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:80\r\nContent-Length: 2\r\n"
        b"Accept: a\r\naccept: b \r\nX-Empty:\r\n\r\n{}next"
    )
    head, rest = head_of(raw)
    assert head is not None
    assert (head.method, head.target, head.version) == ("POST", "/mcp?x=1", "1.1")
    assert head.headers == {
        "host": "127.0.0.1:80",
        "content-length": "2",
        "accept": "a, b",
        "x-empty": "",
    }
    assert (head.length, head.chunked, head.keep_alive) == (2, False, True)
    assert bytes(rest) == b"{}next"


@pytest.mark.parametrize(
    "partial",
    [b"", b"GET", b"GET /mcp HT", b"GET / HTTP/1.1\r\nHost: a\r\n",
     # a read may end between a line's CR and its LF (tester finding: these were 400)
     b"GET / HTTP/1.1\r", b"\r", b"\r\n\r"],
)  # fmt: skip
def test_an_incomplete_head_waits_for_more(partial):
    head, rest = head_of(partial)
    assert head is None
    assert bytes(rest) == (partial[2:] if partial.startswith(b"\r\n") else partial)


def test_a_request_line_whose_lf_comes_in_the_next_read_is_served():
    buf = bytearray(b"\r")  # the optional blank line before a request, split too
    assert parse_head(buf, MAX) is None
    buf += b"\nGET /healthz HTTP/1.1\r"
    assert parse_head(buf, MAX) is None
    buf += b"\nHost: a\r\n\r\n"
    head = parse_head(buf, MAX)
    assert head is not None
    assert (head.method, head.target, head.headers) == ("GET", "/healthz", {"host": "a"})


BAD = [
    # (raw, status)
    pytest.param(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                 400, id="cl-and-te"),
    pytest.param(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
                 400, id="te-and-cl"),
    pytest.param(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
                 400, id="two-lengths"),
    pytest.param(b"GET / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", 400, id="list-length"),
    pytest.param(b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, id="negative-length"),
    pytest.param(b"GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400, id="signed-length"),
    pytest.param(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
                 id="other-coding"),
    pytest.param(b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 501,
                 id="chunked-in-1.0"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, id="two-hosts"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: a\r\nOrigin: http://a\r\nOrigin: http://b\r\n\r\n",
                 400, id="two-origins"),
    pytest.param(b"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, id="obs-fold"),
    pytest.param(b"GET / HTTP/1.1\r\nX : a\r\n\r\n", 400, id="space-before-colon"),
    pytest.param(b"GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400, id="nul-in-value"),
    pytest.param(b"GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n", 400, id="bare-lf"),
    pytest.param(b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, id="bare-cr"),
    pytest.param(b"GET  / HTTP/1.1\r\n\r\n", 400, id="two-spaces"),
    pytest.param(b"GET / HTTP/2.0\r\n\r\n", 400, id="version-2"),
    pytest.param(b"GET /a b HTTP/1.1\r\n\r\n", 400, id="space-in-target"),
    pytest.param(bytes(range(256)), 400, id="binary-noise"),
    pytest.param(b"GET / HTTP/1.1\r\nX: " + b"a" * MAX + b"\r\n\r\n", 431, id="oversize"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "status"), BAD)
def test_a_malformed_or_ambiguous_head_is_refused(raw, status):
    with pytest.raises(HttpError) as refused:
        head_of(raw)
    assert refused.value.status == status


@pytest.mark.parametrize(
    ("version", "connection", "keep"),
    [
        pytest.param("1.1", None, True, id="1.1"),
        pytest.param("1.1", "close", False, id="1.1-close"),
        pytest.param("1.1", "Keep-Alive, Close", False, id="1.1-list-close"),
        pytest.param("1.0", None, False, id="1.0"),
        pytest.param("1.0", "keep-alive", True, id="1.0-keep-alive"),
    ],
)
def test_keep_alive_follows_the_version_and_connection_header(version, connection, keep):
    extra = f"Connection: {connection}\r\n" if connection else ""
    head, _ = head_of(f"GET / HTTP/{version}\r\n{extra}\r\n".encode())
    assert head is not None
    assert head.keep_alive is keep


def test_expect_continue_only_matters_with_a_body():
    head, _ = head_of(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert head is not None
    assert head.expects_continue
    head, _ = head_of(b"GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n")
    assert head is not None
    assert not head.expects_continue


def body_of(raw_head: bytes, pieces: list[bytes], limit: int = 100) -> tuple[bytes, bytes]:
    head, buf = head_of(raw_head)
    assert head is not None
    reader = BodyReader(head, limit)
    for piece in pieces:
        buf += piece
        reader.feed(buf)
    assert reader.done
    return bytes(reader.body), bytes(buf)


CHUNKED = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    "pieces",
    [
        pytest.param([b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\nNEXT"], id="whole"),
        pytest.param([b"3\r", b"\nab", b"c\r\n2\r\nde", b"\r\n0\r\n", b"\r\nNEXT"], id="pieces"),
        pytest.param([b"3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\nNEXT"], id="trailer"),
    ],
)
def test_a_chunked_body_is_read_whole_and_stops_at_its_end(pieces):
    assert body_of(CHUNKED, pieces) == (b"abcde", b"NEXT")


def test_a_sized_body_stops_at_its_length():
    raw = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"
    assert body_of(raw, [b"ab", b"cdeGET"]) == (b"abcde", b"GET")


@pytest.mark.parametrize(
    ("pieces", "status"),
    [
        pytest.param([b"zz\r\n"], 400, id="bad-size"),
        pytest.param([b"3\r\nabcX\r\n"], 400, id="no-crlf-after-data"),
        pytest.param([b"65\r\n"], 413, id="chunk-over-limit"),
        pytest.param([b"1" * 2000], 400, id="endless-size-line"),
        pytest.param([b"123456789\r\n"], 400, id="nine-digit-size"),
        # Lines ended by LF alone: refused as they come, not waited on (a hostile client's
        # body sat 30 s for a CRLF that never came, then got 408).
        pytest.param([b"3\nabc\n0\n\n"], 400, id="bare-lf-size-line"),
        pytest.param([b"3\r\nabc\r\n0\r\nX-T: 1\n\n"], 400, id="bare-lf-trailer"),
    ],
)
def test_a_bad_chunked_body_is_refused(pieces, status):
    with pytest.raises(HttpError) as refused:
        body_of(CHUNKED, pieces)
    assert refused.value.status == status


def test_a_sized_body_over_the_limit_is_refused_as_it_arrives():
    head, buf = head_of(b"POST / HTTP/1.1\r\nContent-Length: 500\r\n\r\n" + b"x" * 200)
    assert head is not None
    with pytest.raises(HttpError) as refused:
        BodyReader(head, 100).feed(buf)
    assert refused.value.status == 413


def test_a_request_line_past_the_head_limit_is_414_and_a_long_head_431():
    with pytest.raises(HttpError) as refused:
        parse_head(bytearray(b"GET /" + b"a" * MAX + b" HTTP/1.1\r\n"), MAX)
    assert refused.value.status == 414  # RFC 9112 3: the target, not the fields
    with pytest.raises(HttpError) as refused:
        parse_head(bytearray(b"GET /" + b"a" * (MAX + 8)), MAX)  # its end not even there
    assert refused.value.status == 414
    with pytest.raises(HttpError) as refused:
        parse_head(bytearray(b"GET / HTTP/1.1\r\nX: " + b"a" * MAX + b"\r\n"), MAX)
    assert refused.value.status == 431


def test_a_chunked_body_s_trailers_are_bounded():
    head, buf = head_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n")
    assert head is not None
    reader = BodyReader(head, 100)
    reader.feed(buf)
    line = b"X-T: " + b"t" * 1000 + b"\r\n"
    buf += line * (MAX_TRAILERS // len(line) + 1)  # trailer lines, and no blank line
    with pytest.raises(HttpError) as refused:
        reader.feed(buf)
    assert refused.value.status == 431
    # a trailer line past the chunk-size line's bound is a header line, bounded as one
    long = b"X-T: " + b"t" * MAX_TRAILERS + b"\r\n"
    for trailers, status in ((b"X-T: " + b"t" * 4000 + b"\r\n\r\n", None), (long, 431)):
        head, buf = head_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n")
        assert head is not None
        reader = BodyReader(head, 100)
        buf += trailers
        if status is None:
            reader.feed(buf)
            assert reader.done
            continue
        with pytest.raises(HttpError) as refused:
            reader.feed(buf)
        assert refused.value.status == status
    # a few trailers are read and dropped
    head, buf = head_of(
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n"
    )
    assert head is not None
    reader = BodyReader(head, 100)
    reader.feed(buf)
    assert reader.done
    assert reader.body == b"a"


def test_response_bytes():
    date = http_date().encode()
    assert response_head(201, [("a", "1"), ("b", "x y")]) in {
        b"HTTP/1.1 201 Created\r\ndate: %s\r\na: 1\r\nb: x y\r\n\r\n" % d
        for d in (date, http_date().encode())  # (the second may have turned meanwhile)
    }
    assert re.fullmatch(rb"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", date)
    plain = plain_head(404, "application/json", 12)
    assert plain.startswith(b"HTTP/1.1 404 Not Found\r\ndate: ")
    assert plain.endswith(b"\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n")
    assert chunk(b"hello") == b"5\r\nhello\r\n"
    assert chunk(b"") == b""


@pytest.mark.parametrize("value", ["a\r\nSet-Cookie: x", "a\nb", "a\rb"])
def test_a_response_header_cannot_smuggle_a_line(value):
    with pytest.raises(ValueError, match="CR or LF"):
        response_head(200, [("x", value)])
    with pytest.raises(ValueError, match="CR or LF"):
        plain_head(200, value, 3)


@given(
    st.sampled_from([200, 202, 404, 418]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.integers(0, 10**9),
)
def test_a_templated_head_is_the_head_response_head_makes(status, content_type, length):
    expected = response_head(
        status, [("content-type", content_type), ("content-length", str(length))]
    )
    assert plain_head(status, content_type, length) == expected
    assert plain_head(status, content_type, length) == expected  # from the template now


HEADS = st.lists(
    st.sampled_from(
        [b"GET / HTTP/1.1", b"Host: a", b"Content-Length: 3", b"Transfer-Encoding: chunked",
         b"X: \x80\xff", b" folded", b"Bad Name: x", b"", b"\x00", b"Connection: close"]
    ),
    max_size=6,
)  # fmt: skip


def refusal(action):
    """The status of the HttpError ``action()`` raises, or None (with its result)."""
    try:
        return None, action()
    except HttpError as refused:
        return refused.status, None


@given(lines=HEADS, tail=st.binary(max_size=40))
def test_any_bytes_either_parse_wait_or_are_refused_with_a_status(lines, tail):
    before = b"\r\n".join(lines) + tail
    buf = bytearray(before)
    status, head = refusal(lambda: parse_head(buf, 256))
    assert status in (None, 400, 431, 501)
    if head is not None:
        assert before.endswith(head.raw + bytes(buf))
        assert not (head.chunked and head.length)
    elif status is None:
        assert before.endswith(bytes(buf))  # only blank lines before a request were dropped


@given(st.binary(max_size=300))
def test_arbitrary_chunked_bodies_are_read_or_refused(data):
    head, buf = head_of(CHUNKED)
    assert head is not None
    reader = BodyReader(head, 100)
    buf += data
    status, _ = refusal(lambda: reader.feed(buf))
    assert status in (None, 400, 413)
    assert len(reader.body) <= 100


def test_a_head_seen_again_means_the_same_and_has_headers_of_its_own():
    raw = b"POST /mcp HTTP/1.1\r\nHost: a\r\nX-Twice: 1\r\nx-twice: 2\r\nContent-Length: 3\r\n\r\n"
    first = parse_head(bytearray(raw + b"abc"), 1024)
    assert first is not None
    first.headers["host"] = "changed by a handler"
    buf = bytearray(raw + b"abc")
    again = parse_head(buf, 1024)
    assert again is not None
    assert again.headers == {"host": "a", "x-twice": "1, 2", "content-length": "3"}
    assert (again.method, again.target, again.length, again.keep_alive) == ("POST", "/mcp", 3, True)
    assert again.raw == raw
    assert buf == b"abc"  # the head was taken off the buffer all the same


#: Where RFC 9110 renamed a status, its words, not those of older RFCs (Python's `HTTPStatus`).
RFC_9110 = {413: "Content Too Large", 414: "URI Too Long", 422: "Unprocessable Content"}


def _statuses_in_source() -> dict[int, str]:
    """The 2xx, 4xx and 5xx statuses the server's code answers with (an int literal given
    to a call, returned first in a tuple, or a value in a dict), each with where it is."""
    found: dict[int, str] = {}
    for path in Path(agora.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                literals = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                literals = node.value.elts[:1]
            elif isinstance(node, ast.Dict):
                literals = [v for v in node.values if v is not None]
            else:
                continue
            for literal in literals:
                value = literal.value if isinstance(literal, ast.Constant) else None
                if type(value) is int and value in _STATUSES and value // 100 in (2, 4, 5):
                    found.setdefault(value, f"{path.name}:{literal.lineno}")
    return found


_STATUSES = {s.value: s.phrase for s in HTTPStatus}


def test_every_status_the_server_sends_has_its_reason_phrase():
    """417 went out as ``HTTP/1.1 417 Unknown``: no status in the code may lack its phrase."""
    found = _statuses_in_source()
    assert {417, 404, 503} <= set(found)  # (the scan finds them)
    for status, where in sorted(found.items()):
        phrase = RFC_9110.get(status, _STATUSES[status])
        expected = f"HTTP/1.1 {status} {phrase}\r\n".encode()
        assert response_head(status, []).startswith(expected), where
