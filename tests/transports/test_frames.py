"""The WebSocket frame codec, checked against wsproto: what a real client sends, we read.

wsproto's client side makes the frames (masked, fragmented as asked) and its server side is
the reference reading of them; `MessageReader` must produce the same messages from the
same bytes, however the bytes are cut into reads. Frames we write must read back through
wsproto's client. Then every rule a client can break, with its close code.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, Pong, TextMessage

from agora.transports import frames
from agora.transports.frames import FrameError, MessageReader

LIMIT = 4096

# One message as the client sends it: kind, payload, and the sizes of its fragments.
texts = st.text(max_size=300).map(lambda t: ("text", t))
binaries = st.binary(max_size=300).map(lambda b: ("binary", b))
pings = st.binary(max_size=125).map(lambda b: ("ping", b))
pongs = st.binary(max_size=125).map(lambda b: ("pong", b))
messages = st.lists(
    st.tuples(st.one_of(texts, binaries, pings, pongs), st.integers(1, 4)), max_size=8
)


def client_bytes(items: list[tuple[tuple[str, object], int]]) -> bytes:
    """The bytes wsproto's client sends for ``items`` (data split into fragments)."""
    client = Connection(ConnectionType.CLIENT)
    out = bytearray()
    for (kind, payload), pieces in items:
        if kind in ("ping", "pong"):
            out += client.send((Ping if kind == "ping" else Pong)(payload=payload))  # type: ignore[arg-type]
            continue
        cls = TextMessage if kind == "text" else BytesMessage
        step = max(1, len(payload) // pieces)  # type: ignore[arg-type]
        chunks = [payload[i : i + step] for i in range(0, len(payload), step)] or [payload]  # type: ignore[index]
        for n, chunk in enumerate(chunks):
            out += client.send(cls(data=chunk, message_finished=n == len(chunks) - 1))
    return bytes(out)


def wsproto_reading(data: bytes) -> list[tuple[int, object]]:
    """What wsproto's server side makes of ``data``, as (opcode, payload) items."""
    server = Connection(ConnectionType.SERVER)
    server.receive_data(data)
    items: list[tuple[int, object]] = []
    text: list[str] = []
    binary: list[bytes] = []
    for event in server.events():
        if isinstance(event, TextMessage):
            text.append(event.data)
            if event.message_finished:
                items.append((frames.TEXT, "".join(text)))
                text.clear()
        elif isinstance(event, BytesMessage):
            binary.append(bytes(event.data))
            if event.message_finished:
                items.append((frames.BINARY, b"".join(binary)))
                binary.clear()
        elif isinstance(event, Ping):
            items.append((frames.PING, bytes(event.payload)))
        elif isinstance(event, Pong):
            items.append((frames.PONG, bytes(event.payload)))
        elif isinstance(event, CloseConnection):
            items.append((frames.CLOSE, (event.code, event.reason or "")))
    return items


def read_in_pieces(data: bytes, cuts: list[int]) -> list[tuple[int, object]]:
    reader = MessageReader(LIMIT)
    items: list[tuple[int, object]] = []
    start = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        items += reader.feed(data[start:cut])
        start = max(start, cut)
    return items


@settings(max_examples=200, deadline=None)
@given(items=messages, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_we_read_what_wsproto_reads_however_the_bytes_arrive(items, cuts):
    data = client_bytes(items)
    assert read_in_pieces(data, cuts) == wsproto_reading(data)


@settings(max_examples=100, deadline=None)
@given(
    code=st.sampled_from([1000, 1001, 1003, 1008, 1011, 3000, 4999]), reason=st.text(max_size=40)
)
def test_a_close_frame_reads_as_wsproto_reads_it(code, reason):
    data = bytes(Connection(ConnectionType.CLIENT).send(CloseConnection(code, reason)))
    reason_bytes = reason.encode()[:123]
    if reason_bytes.decode(errors="ignore").encode() != reason_bytes:
        return  # wsproto cuts the reason mid-character; such frames are refused (see below)
    assert MessageReader(LIMIT).feed(data) == wsproto_reading(data)


@settings(max_examples=100, deadline=None)
@given(payload=st.text(max_size=70_000))
def test_our_text_frames_read_back_through_wsproto(payload):
    client = Connection(ConnectionType.CLIENT)
    client.receive_data(frames.frame(payload.encode()))
    events = list(client.events())
    assert [(type(e), e.data, e.message_finished) for e in events] == [(TextMessage, payload, True)]


@pytest.mark.parametrize(
    ("code", "reason"), [(1000, ""), (1009, "message larger than 65536 bytes"), (1011, "é" * 80)]
)
def test_our_close_frames_read_back_through_wsproto(code, reason):
    client = Connection(ConnectionType.CLIENT)
    client.receive_data(frames.close_frame(code, reason))
    [event] = client.events()
    assert isinstance(event, CloseConnection)
    assert event.code == code
    assert reason.startswith(event.reason or "")
    assert len(frames.close_frame(code, reason)) <= 127  # a control frame: 125-byte payload


def test_pings_and_pongs_read_back_through_wsproto():
    client = Connection(ConnectionType.CLIENT)
    client.receive_data(frames.control_frame(frames.PING, b"agora"))
    client.receive_data(frames.control_frame(frames.PONG, b"x" * 200))
    ping, pong = client.events()
    assert isinstance(ping, Ping)
    assert ping.payload == b"agora"
    assert isinstance(pong, Pong)
    assert pong.payload == b"x" * 125


def masked(first: int, payload: bytes, *, length: int | None = None) -> bytes:
    """A client frame with an all-zero mask (the payload as is) and a chosen first byte."""
    n = len(payload) if length is None else length
    if n < 126:
        head = bytes((first, 0x80 | n))
    elif n < 1 << 16:
        head = bytes((first, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((first, 0x80 | 127)) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


BROKEN = [
    pytest.param(bytes((0x81, 0x02)) + b"hi", 1002, id="unmasked"),
    pytest.param(masked(0xC1, b"hi"), 1002, id="rsv1-set"),
    pytest.param(masked(0x83, b"hi"), 1002, id="reserved-data-opcode"),
    pytest.param(masked(0x8B, b""), 1002, id="reserved-control-opcode"),
    pytest.param(masked(0x09, b""), 1002, id="fragmented-ping"),
    pytest.param(masked(0x89, b"x" * 126), 1002, id="long-ping"),
    pytest.param(masked(0x80, b"hi"), 1002, id="continuation-first"),
    pytest.param(masked(0x01, b"a") + masked(0x81, b"b"), 1002, id="new-message-mid-message"),
    pytest.param(masked(0x81, b"\xff\xfe"), 1007, id="invalid-utf8"),
    pytest.param(masked(0x01, b"\xe2\x82") + masked(0x80, b"\x28"), 1007, id="split-invalid-utf8"),
    pytest.param(masked(0x88, b"\x03"), 1002, id="one-byte-close"),
    pytest.param(masked(0x88, (1005).to_bytes(2, "big")), 1002, id="close-1005-on-the-wire"),
    pytest.param(masked(0x88, (999).to_bytes(2, "big")), 1002, id="close-code-999"),
    pytest.param(masked(0x88, (1000).to_bytes(2, "big") + b"\xff"), 1007, id="bad-close-reason"),
    pytest.param(
        bytes((0x81, 0xFF)) + (1 << 63).to_bytes(8, "big") + bytes(4), 1002, id="length-msb"
    ),
    pytest.param(
        bytes((0x81, 0xFE)) + (5).to_bytes(2, "big") + bytes(4) + b"hello",
        1002,
        id="length-16-bit-for-5",
    ),
    pytest.param(
        bytes((0x81, 0xFF)) + (300).to_bytes(8, "big") + bytes(4) + b"x" * 300,
        1002,
        id="length-64-bit-for-300",
    ),
    # Refused from the header alone: no payload was sent, none is waited for.
    pytest.param(masked(0x81, b"", length=LIMIT + 1), 1009, id="oversize-declared"),
    pytest.param(
        masked(0x01, b"x" * 4000) + masked(0x80, b"", length=200), 1009, id="oversize-fragments"
    ),
]


@pytest.mark.parametrize(("data", "code"), BROKEN)
def test_a_broken_rule_is_refused_with_its_close_code(data, code):
    with pytest.raises(FrameError) as caught:
        MessageReader(LIMIT).feed(data)
    assert caught.value.code == code


def test_a_message_at_the_limit_is_read_and_a_partial_frame_waits():
    reader = MessageReader(LIMIT)
    frame = masked(0x81, b"x" * LIMIT)
    assert reader.feed(frame[:100]) == []
    assert reader.feed(frame[100:]) == [(frames.TEXT, "x" * LIMIT)]
    assert reader.feed(masked(0x88, b"")) == [(frames.CLOSE, (frames.NO_STATUS, ""))]
