"""Hostile WebSocket frames over a real socket to the live server.

Each case opens a connection to ``/mcp``, sends one to four generated frames (any opcode,
RSV bits, masked or not, lengths that lie or are not minimally encoded, fragments out of
order, oversize control frames, bad close codes, invalid UTF-8, JSON with lone surrogates,
a declared 2^63-byte payload), then a valid ping request, then half-closes. The server must
end the connection within the timeout (never hang on a half-closed hostile peer), every text
frame it sent must be JSON-RPC without an internal error, it must log nothing at WARNING, and
a fresh connection must still be answered.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import TYPE_CHECKING

from fuzz_settings import FUZZ, count_case
from hypothesis import given
from hypothesis import strategies as st

if TYPE_CHECKING:
    from fuzz_live import LiveServer

TIMEOUT = 10.0
PING = b'{"jsonrpc":"2.0","id":99,"method":"ping"}'
INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        },
    }
).encode()
PAYLOADS = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            PING,
            INIT,
            b"\xff\xfe\xfd",  # invalid UTF-8
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 200 + b"]" * 200 + b"}",
            b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
            b"[" + PING + b"]",
            b"\x00" * 10,
            struct.pack("!H", 999),  # an invalid close code
            struct.pack("!H", 1000) + b"\xff",  # a close reason that is not UTF-8
            b"x",  # a one-byte close payload
        ]
    ),
    st.integers(65_530, 65_540).map(lambda n: b" " * n),
)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    payload = draw(PAYLOADS)
    fin = draw(st.sampled_from([0x80, 0x80, 0x80, 0]))
    rsv = draw(st.sampled_from([0, 0, 0, 0x40, 0x20, 0x10]))
    opcode = draw(st.sampled_from([0x0, 0x1, 0x1, 0x2, 0x8, 0x9, 0xA, 0x3, 0xB, 0xF]))
    masked = draw(st.sampled_from([True, True, True, False]))
    declared = draw(
        st.one_of(
            st.just(len(payload)),
            st.just(len(payload)),
            st.integers(0, 70_000),
            st.just(2**63 - 1),
        )
    )
    form = draw(st.sampled_from(["min", "min", "16", "64"]))
    if form == "min" and declared < 126:
        head = struct.pack("!BB", fin | rsv | opcode, (0x80 if masked else 0) | declared)
    elif form != "64" and declared < 1 << 16:
        head = struct.pack("!BBH", fin | rsv | opcode, (0x80 if masked else 0) | 126, declared)
    else:
        head = struct.pack("!BBQ", fin | rsv | opcode, (0x80 if masked else 0) | 127, declared)
    if not masked:
        return head + payload
    key = draw(st.binary(min_size=4, max_size=4))
    body = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + body


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    else:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    return head + b"\0\0\0\0" + payload


def _open(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "closed during the handshake"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes (a timeout fails the case)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _messages(stream: bytes) -> list[tuple[int, bytes]]:
    """The server's (unmasked) frames in ``stream``, as far as they are complete."""
    out, i = [], 0
    while i + 2 <= len(stream):
        opcode, size, i = stream[i] & 0x0F, stream[i + 1] & 0x7F, i + 2
        if size == 126:
            size, i = struct.unpack_from("!H", stream, i)[0], i + 2
        elif size == 127:
            size, i = struct.unpack_from("!Q", stream, i)[0], i + 8
        out.append((opcode, stream[i : i + size]))
        i += size
    return out


def _answers_ping(port: int) -> bool:
    sock = _open(port)
    try:
        sock.sendall(_frame(INIT) + _frame(PING))
        data = b""
        while b'"id":99' not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            data += chunk
        return True
    finally:
        sock.close()


def test_hostile_frames_close_cleanly_and_leave_the_server_up(live: LiveServer) -> None:
    @FUZZ
    @given(st.lists(frames(), min_size=1, max_size=4), st.booleans())
    def run(sent: list[bytes], initialize: bool) -> None:
        count_case()
        sock = _open(live.port)
        try:
            prefix = _frame(INIT) if initialize else b""
            try:
                sock.sendall(prefix + b"".join(sent) + _frame(PING))
                sock.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server closed before reading it all: allowed
            try:
                received = _read_all(sock)
            except ConnectionResetError:
                received = b""
        finally:
            sock.close()
        for opcode, payload in _messages(received):
            if opcode == 0x1:
                message = json.loads(payload)
                assert message.get("error", {}).get("code") != -32603, message
        assert not live.log.records, live.log.records
        assert _answers_ping(live.port)

    run()
