"""Lean MCP clients for the benches: one session, one call at a time, as little CPU as possible.

`LeanHttp` speaks Streamable HTTP as raw HTTP/1.1 on one kept-alive connection (Content-Length
and chunked bodies; an SSE reply is read up to its JSON-RPC response), `LeanWs` runs a session
on `wsload.LeanWebSocket`, `LeanStdio` writes and reads newline-delimited JSON on a server
process's pipes. Each calls ``TOOL`` with ``call(rid)``. Imported by the bench scripts as a
sibling module; never by agora.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
import trio
from wsload import INITIALIZE, LeanWebSocket

#: The trivial tool both servers serve.
TOOL = "test_simple_text"
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
INITIALIZE_BYTES = _encode(INITIALIZE)
INITIALIZED_BYTES = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call_bytes(rid: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{}}}'
        % (
            rid,
            TOOL.encode(),
        )
    )


# -- lean clients ------------------------------------------------------------------------------


class Session(Protocol):
    async def call(self, rid: int) -> bool: ...
    async def aclose(self) -> None: ...


class LeanHttp:
    """One Streamable HTTP session on one kept-alive connection (reopened if the server closes)."""

    def __init__(self, port: int, path: str) -> None:
        self.port = port
        self.path = path
        self.stream: trio.SocketStream | None = None
        self.buf = bytearray()
        self.session = b""

    async def post(self, body: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        if self.stream is None:
            self.stream = await trio.open_tcp_stream("127.0.0.1", self.port)
            self.buf.clear()
        head = (
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n"
            % (self.path.encode(), self.port, self.session, len(body))
        )
        await self.stream.send_all(head + body)
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            await self._more()
        lines = bytes(self.buf[:end]).split(b"\r\n")
        del self.buf[: end + 4]
        status = int(lines[0].split(b" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if b"content-length" in headers:
            size = int(headers[b"content-length"])
            while len(self.buf) < size:
                await self._more()
            payload = bytes(self.buf[:size])
            del self.buf[:size]
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            payload = await self._chunked()
        else:
            raise ConnectionError("response without a length")
        if headers.get(b"connection", b"").lower() == b"close":
            await self.stream.aclose()
            self.stream = None
        return status, headers, payload

    async def _more(self) -> None:
        assert self.stream is not None
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("closed by the server")
        self.buf += data

    async def _chunked(self) -> bytes:
        out = bytearray()
        while True:
            while (end := self.buf.find(b"\r\n")) < 0:
                await self._more()
            size = int(bytes(self.buf[:end]).split(b";")[0], 16)
            while len(self.buf) < end + 2 + size + 2:
                await self._more()
            out += self.buf[end + 2 : end + 2 + size]
            del self.buf[: end + 2 + size + 2]
            if size == 0:
                return bytes(out)

    @staticmethod
    def _message(headers: dict[bytes, bytes], payload: bytes) -> Any:
        if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            for line in reversed(payload.split(b"\n")):
                if line.startswith(b"data:") and b'"id"' in line:
                    return _decode(line[5:])
            return None
        return _decode(payload)

    async def open(self) -> LeanHttp:
        status, headers, payload = await self.post(INITIALIZE_BYTES)
        if status != 200:
            raise ConnectionError(f"initialize: {status} {payload[:200]!r}")
        sid = headers.get(b"mcp-session-id")
        if sid:
            self.session = b"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n" % sid
        await self.post(INITIALIZED_BYTES)
        return self

    async def call(self, rid: int) -> bool:
        status, headers, payload = await self.post(call_bytes(rid))
        reply = self._message(headers, payload)
        return status == 200 and reply is not None and reply.get("id") == rid and "result" in reply

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()


class LeanWs:
    """One MCP session over `LeanWebSocket`."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def open(self) -> LeanWs:
        self.ws = await LeanWebSocket.connect(self.url)
        await self.ws.send(INITIALIZE_BYTES)
        await self.ws.recv()
        await self.ws.send(INITIALIZED_BYTES)
        return self

    async def call(self, rid: int) -> bool:
        await self.ws.send(call_bytes(rid))
        reply = _decode(await self.ws.recv())
        return bool(reply.get("id") == rid and "result" in reply)

    async def aclose(self) -> None:
        await self.ws.aclose()


class LeanStdio:
    """One MCP session with a server subprocess over its stdin and stdout."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.buf = bytearray()

    async def _line(self) -> Any:
        while (end := self.buf.find(b"\n")) < 0:
            data = await self.stdout.receive_some(65536)
            if not data:
                raise ConnectionError("the server closed its stdout")
            self.buf += data
        line = bytes(self.buf[:end])
        del self.buf[: end + 1]
        return _decode(line)

    async def open(self) -> LeanStdio:
        await self.stdin.send_all(INITIALIZE_BYTES + b"\n")
        await self._line()
        await self.stdin.send_all(INITIALIZED_BYTES + b"\n")
        return self

    async def call(self, rid: int) -> bool:
        await self.stdin.send_all(call_bytes(rid) + b"\n")
        while True:
            reply = await self._line()
            if "method" not in reply:
                return bool(reply.get("id") == rid and "result" in reply)

    async def aclose(self) -> None:
        await self.stdin.aclose()
