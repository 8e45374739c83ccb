"""WebSocket frames after the upgrade, server side (RFC 6455 section 5), sans-io.

wsproto completes the opening handshake; this module then reads the client's frames and
writes the server's. It exists for speed: wsproto's general frame machinery (generators, an
incremental decoder per message, event objects) cost about 27 us per small frame here,
which was a tenth of a whole tool call, while the server side of the protocol without
extensions is small. `MessageReader` turns received bytes into whole messages and control
frames, enforcing the client's rules (frames masked, no RSV bits, control frames short and
unfragmented, fragments in order, text valid UTF-8, a size limit checked from the declared
length before the payload is buffered). Breaking a rule raises `FrameError` with the close
code to send. The ``*_frame`` functions build the server's unmasked frames.
"""

from __future__ import annotations

from typing import Any, Final

TEXT: Final = 0x1
BINARY: Final = 0x2
CLOSE: Final = 0x8
PING: Final = 0x9
PONG: Final = 0xA
_CONTINUATION: Final = 0x0

#: Close codes (RFC 6455 section 7.4.1).
NORMAL: Final = 1000
GOING_AWAY: Final = 1001
PROTOCOL_ERROR: Final = 1002
NO_STATUS: Final = 1005
INVALID_DATA: Final = 1007
TOO_BIG: Final = 1009
_MAX_CONTROL: Final = 125
_NOT_UTF8: Final = "text message is not valid UTF-8"
#: Codes a peer may put in a close frame: the defined ones that may be sent, and 3000-4999.
_SENDABLE: Final = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013})


class FrameError(Exception):
    """The peer broke the protocol; close the connection with ``code``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


#: One received item: (TEXT, str), (BINARY, bytes), (PING or PONG, bytes) or
#: (CLOSE, (code, reason)).
Received = tuple[int, Any]


class MessageReader:
    """Reassembles the client's frames into messages.

    Args:
        max_message: Largest message accepted, in payload bytes (all fragments together).
    """

    def __init__(self, max_message: int) -> None:
        self._max = max_message
        self._buffer = bytearray()
        self._opcode: int | None = None  # of the fragmented message in progress
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> list[Received]:
        """Everything that ``data`` completes, in order (bytes of a partial frame are kept).

        Raises:
            FrameError: the bytes break the protocol; nothing after the fault is read.
        """
        if self._buffer:
            self._buffer += data
            buf: bytes | bytearray = self._buffer
        else:
            buf = data
        out: list[Received] = []
        pos = 0
        end = len(buf)
        while end - pos >= 2 and (header := _header(buf, pos, end)) is not None:
            fin, opcode, length, head = header
            # A whole text message in one frame (nearly every one) needs neither `_check`'s
            # judgement of fragments and control frames nor `_complete`'s assembly.
            whole = fin and opcode == TEXT and self._opcode is None
            if not whole or length > self._max:
                self._check(fin, opcode, length)
            if end - pos < head + length:
                break
            key = buf[pos + head - 4 : pos + head]
            payload = _unmask(buf[pos + head : pos + head + length], key)
            pos += head + length
            if whole:
                try:
                    out.append((TEXT, payload.decode()))
                except UnicodeDecodeError:
                    raise FrameError(INVALID_DATA, _NOT_UTF8) from None
            elif (item := self._complete(fin, opcode, payload)) is not None:
                out.append(item)
        if pos < end:
            if buf is self._buffer:
                del self._buffer[:pos]
            else:
                self._buffer += buf[pos:]
        else:
            self._buffer.clear()
        return out

    def _check(self, fin: int, opcode: int, length: int) -> None:
        # Everything that can be judged from a frame's header, before its payload arrives.
        if opcode >= CLOSE:
            if opcode not in (CLOSE, PING, PONG):
                raise FrameError(PROTOCOL_ERROR, f"unknown control opcode {opcode:#x}")
            if not fin:
                raise FrameError(PROTOCOL_ERROR, "control frames cannot be fragmented")
            if length > _MAX_CONTROL:
                raise FrameError(PROTOCOL_ERROR, "control frame payload over 125 bytes")
            return
        if opcode == _CONTINUATION:
            if self._opcode is None:
                raise FrameError(PROTOCOL_ERROR, "continuation frame without a message")
        elif opcode in (TEXT, BINARY):
            if self._opcode is not None:
                raise FrameError(PROTOCOL_ERROR, "new message before the last one finished")
        else:
            raise FrameError(PROTOCOL_ERROR, f"unknown data opcode {opcode:#x}")
        if self._size + length > self._max:
            raise FrameError(TOO_BIG, f"message larger than {self._max} bytes")

    def _complete(self, fin: int, opcode: int, payload: bytes) -> Received | None:
        if opcode >= CLOSE:
            if opcode == CLOSE:
                return CLOSE, _close_payload(payload)
            return opcode, payload
        if opcode != _CONTINUATION:
            self._opcode = opcode
        if not fin:
            self._parts.append(payload)
            self._size += len(payload)
            return None
        kind = self._opcode
        if self._parts:
            self._parts.append(payload)
            payload = b"".join(self._parts)
            self._parts.clear()
        self._opcode = None
        self._size = 0
        if kind == BINARY:
            return BINARY, payload
        try:
            return TEXT, payload.decode()
        except UnicodeDecodeError:
            raise FrameError(INVALID_DATA, _NOT_UTF8) from None


def _header(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int, int, int] | None:
    """(fin, opcode, payload length, header size) of the frame at ``pos``; None if cut short.

    Raises:
        FrameError: reserved bits set, an unmasked frame, or a length out of range or not
            in its shortest form (RFC 6455 section 5.2).
    """
    if end - pos < 2:
        return None
    first, second = buf[pos], buf[pos + 1]
    if first & 0x70:
        raise FrameError(PROTOCOL_ERROR, "reserved bits set (no extension was agreed)")
    if not second & 0x80:
        raise FrameError(PROTOCOL_ERROR, "client frames must be masked")
    length = second & 0x7F
    head = 6
    if length == 126:
        head = 8
        if end - pos < head:
            return None
        length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
        if length < 126:
            raise FrameError(PROTOCOL_ERROR, "frame length not minimally encoded")
    elif length == 127:
        head = 14
        if end - pos < head:
            return None
        length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
        if length >> 63:
            raise FrameError(PROTOCOL_ERROR, "frame length out of range")
        if length < 1 << 16:
            raise FrameError(PROTOCOL_ERROR, "frame length not minimally encoded")
    return first & 0x80, first & 0x0F, length, head


def _unmask(payload: bytes | bytearray, key: bytes | bytearray) -> bytes:
    n = len(payload)
    if not n:
        return b""
    mask = (bytes(key) * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(mask, "little")).to_bytes(
        n, "little"
    )


def _close_payload(payload: bytes) -> tuple[int, str]:
    if not payload:
        return NO_STATUS, ""
    if len(payload) == 1:
        raise FrameError(PROTOCOL_ERROR, "close frame with a one-byte payload")
    code = int.from_bytes(payload[:2], "big")
    if code not in _SENDABLE and not 3000 <= code <= 4999:
        raise FrameError(PROTOCOL_ERROR, f"close code {code} may not be sent")
    try:
        return code, payload[2:].decode()
    except UnicodeDecodeError:
        raise FrameError(INVALID_DATA, "close reason is not valid UTF-8") from None


def frame(payload: bytes, opcode: int = TEXT) -> bytes:
    """One unfragmented frame: a text frame (``payload`` UTF-8) unless ``opcode`` says else."""
    n = len(payload)
    if n < 126:
        return bytes((0x80 | opcode, n)) + payload
    if n < 1 << 16:
        return bytes((0x80 | opcode, 126)) + n.to_bytes(2, "big") + payload
    return bytes((0x80 | opcode, 127)) + n.to_bytes(8, "big") + payload


def control_frame(opcode: int, payload: bytes = b"") -> bytes:
    """A ping or pong frame (payload cut to 125 bytes)."""
    return frame(payload[:_MAX_CONTROL], opcode)


def close_frame(code: int, reason: str = "") -> bytes:
    """A close frame; 1005 (no status) is sent as an empty payload."""
    if code == NO_STATUS:
        return frame(b"", CLOSE)
    data = reason.encode()[: _MAX_CONTROL - 2]
    while True:  # never cut a character in half
        try:
            data.decode()
            break
        except UnicodeDecodeError:
            data = data[:-1]
    return frame(code.to_bytes(2, "big") + data, CLOSE)
