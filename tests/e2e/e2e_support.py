"""Helpers for the end-to-end tests: an `agora` subprocess, raw HTTP and raw WebSocket peers.

`AgoraProcess` runs the real console script and reads its stderr on a thread, so tests can
wait for a log line without sleeping; `run_agora` runs one command to its end, and
`sdk_stdio` runs one as the stdio server of the official MCP SDK's client; `sdk_websocket`
is that client's transport over MCP on WebSocket. `http` speaks
HTTP/1.1 with h11 on a fresh connection per request, so a test controls every byte (bad
bodies, foreign Host headers). `RawWebSocket` frames by hand, for what a polite client
cannot do: invalid UTF-8 text frames, ignoring pings, never reading.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h11
import jsonschema
import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

AGORA = str(Path(sys.executable).with_name("agora"))
READY = re.compile(r"serving .* on (http://[\d.:]+)")
#: Seconds a subprocess may take to start or stop (generous: CI machines are slow).
PROCESS_TIMEOUT = 30.0

#: The bearer token of the "ops" principal in every test config.
TOKEN = "e2e-operator-token"
CHESS_TOOLS = {"join_game", "get_board", "move_piece", "wait_for_turn"}

OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without AGORA_* settings, plus ``extra``.

    The suite's own AGORA_TEST_* switches stay: a server started on the PostgreSQL pass
    keeps its stores there (see tests/conftest.py).
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if (not k.startswith("AGORA_") or k.startswith("AGORA_TEST_")) and k != "PYTHONTRACEMALLOC"
    }
    env.update(extra)
    return env


class AgoraProcess:
    """``agora serve`` in a subprocess; its stderr is collected line by line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.args = [AGORA, "serve", "--port", "0", *args]
        self.env = env or clean_env()
        self.lines: list[str] = []
        self.url = ""
        self._changed = threading.Condition()
        self._proc: subprocess.Popen[str] | None = None

    @property
    def proc(self) -> subprocess.Popen[str]:
        assert self._proc is not None, "not started"
        return self._proc

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> str:
        with self._changed:
            return "".join(self.lines)

    def start(self) -> str:
        """Start the server and return its base URL once it says it is serving."""
        self._proc = subprocess.Popen(
            self.args, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=self.env
        )
        threading.Thread(target=self._read, daemon=True).start()
        line = self.wait_for_line(READY.pattern, PROCESS_TIMEOUT)
        if line is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"agora did not start:\n{self.log}")
        found = READY.search(line)
        assert found is not None
        self.url = found.group(1)
        return self.url

    def _read(self) -> None:
        assert self._proc is not None
        assert self._proc.stderr is not None
        with self._proc.stderr:
            for line in self._proc.stderr:
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # end of output
            self._changed.notify_all()

    def wait_for_line(self, pattern: str, timeout: float) -> str | None:
        """Block until a stderr line matches ``pattern``; None on timeout or exit."""
        regex = re.compile(pattern)
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if line == "":
                        return None
                    if regex.search(line):
                        return line
                seen = len(self.lines)
                if not self._changed.wait(timeout):
                    return None

    async def wait_for_log(self, pattern: str) -> str:
        """Wait (off the Trio thread) until stderr shows ``pattern``; run inside fail_after."""
        line = await trio.to_thread.run_sync(
            self.wait_for_line, pattern, PROCESS_TIMEOUT, abandon_on_cancel=True
        )
        assert line is not None, f"{pattern!r} never appeared in:\n{self.log}"
        return line

    def __enter__(self) -> AgoraProcess:
        """Start the server (``with AgoraProcess(...) as server``); leaving kills it if it runs."""
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        ended = self.proc.poll()
        self.kill()
        if kind is not None:  # the test failed: say how the server was, with its log
            state = "running" if ended is None else f"had exited with status {ended}"
            print(f"agora serve {state} when the test failed; its log:\n{self.log}")

    def kill(self) -> None:
        """SIGKILL (no shutdown: only what was committed survives) and reap, if still running."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def signal(self, signum: int = signal.SIGTERM) -> None:
        """Send ``signum`` to the server."""
        self.proc.send_signal(signum)

    def stop(self) -> int:
        """SIGTERM, then wait for the exit status (killing it if it hangs)."""
        if self.proc.poll() is None:
            self.signal()
        try:
            return self.proc.wait(PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"agora did not stop on SIGTERM:\n{self.log}") from None

    async def wait_exit(self) -> int:
        """The exit status, awaited off the Trio thread; run inside fail_after."""
        return await trio.to_thread.run_sync(self.proc.wait, abandon_on_cancel=True)

    def assert_clean_exit(self, status: int) -> None:
        """Exit status 0, a logged shutdown, and no traceback anywhere in the log."""
        log = self.log
        assert status == 0, f"exit status {status}:\n{log}"
        assert "shutting down" in log, log
        assert "Traceback" not in log, log

    def rss_kb(self) -> int:
        """The server's resident set size (VmRSS) in KiB."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert found is not None
        return int(found.group(1))


async def run_agora(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``agora args`` to its end (run inside ``trio.fail_after``), its output captured, with
    a clean environment plus ``env``."""
    return await trio.run_process(
        [AGORA, *args],
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        cwd=cwd,
        env=clean_env(**env),
    )


def jsonl(*messages: Mapping[str, Any]) -> bytes:
    """Messages as a stdio client writes them: one JSON text per line."""
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


@asynccontextmanager
async def stdio_process(args: Sequence[str]) -> AsyncIterator[trio.Process]:
    """``agora ARGS`` with its three pipes (a raw stdio client's view), its MCP session
    initialized; killed if it still runs at the end, its pipes closed either way."""
    process = await trio.lowlevel.open_process(
        [AGORA, *args], stdin=-1, stdout=-1, stderr=-1, env=clean_env()
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send_all(jsonl(INITIALIZE, INITIALIZED))
        assert b'"id":0' in await process.stdout.receive_some(65536)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()


async def read_to_end(stream: trio.abc.ReceiveStream | None) -> bytes:
    """Everything ``stream`` gives until it ends."""
    assert stream is not None
    out = b""
    while chunk := await stream.receive_some(65536):
        out += chunk
    return out


def one_line(stderr: bytes) -> str:
    """The only line of ``stderr``; no traceback."""
    text = stderr.decode()
    assert "Traceback" not in text, text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


def sdk_stdio(args: Sequence[str], log: Any, read_timeout: float = 30.0) -> Any:
    """The official MCP SDK's client (an async context manager) over ``agora args`` run as
    its stdio server, whose stderr goes to ``log`` (an open file)."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    import mcp

    params = StdioServerParameters(command=AGORA, args=list(args), env=clean_env())
    return mcp.Client(
        stdio_client(params, errlog=log), mode="legacy", read_timeout_seconds=read_timeout
    )


def principal_toml(
    name: str, token: str, *, scopes: str | None = None, projects: str | None = None
) -> str:
    """A ``[[principals]]`` table for ``name`` holding ``token``; ``scopes`` and ``projects``
    (TOML arrays) only when given."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    table = f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{digest}"\n'
    if scopes is not None:
        table += f"scopes = {scopes}\n"
    if projects is not None:
        table += f"projects = {projects}\n"
    return table


def roster_toml(agents: Mapping[str, tuple[str, str]], *, projects: str) -> str:
    """``[[principals]]`` tables for ``{name: (token, scopes)}``, each granted ``projects``."""
    return "\n".join(
        principal_toml(name, token, scopes=scopes, projects=projects)
        for name, (token, scopes) in agents.items()
    )


def write_config(directory: Path, extra: str = "") -> Path:
    """An agora.toml with one operator principal (``TOKEN``) and ``extra`` settings."""
    path = directory / "agora.toml"
    path.write_text(f"{extra}\n" + principal_toml("ops", TOKEN, scopes='["operator"]'))
    return path


def check_structured(tool: dict[str, Any], result: dict[str, Any]) -> None:
    """A successful result whose structuredContent validates against the tool's outputSchema
    and is mirrored as a JSON text block."""
    assert not result.get("isError"), result
    structured = result["structuredContent"]
    jsonschema.Draft202012Validator(tool["outputSchema"]).validate(structured)
    assert json.loads(result["content"][0]["text"]) == structured


# -- HTTP ------------------------------------------------------------------------------------


@dataclass
class HttpReply:
    """A complete HTTP response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; for an SSE body, the data of its last non-empty event."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            data = [
                line[5:].strip()
                for line in self.body.decode().splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            return json.loads(data[-1])
        return json.loads(self.body)


async def http(
    port: int,
    method: str,
    path: str,
    body: bytes | dict[str, Any] | list[Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> HttpReply:
    """One request on a fresh connection; ``body`` dicts and lists are sent as JSON.

    ``Host`` defaults to 127.0.0.1:port; pass ``headers={"host": ...}`` to override it.
    """
    raw = json.dumps(body).encode() if isinstance(body, dict | list) else body or b""
    head = {"host": f"127.0.0.1:{port}", "connection": "close"}
    if method == "POST":
        head |= {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
    head |= {k.lower(): v for k, v in (headers or {}).items()}
    head["content-length"] = str(len(raw))
    conn = h11.Connection(h11.CLIENT)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = h11.Request(method=method, target=path, headers=list(head.items()))
        await stream.send_all(conn.send(request) + conn.send(h11.Data(data=raw)))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        status, reply_headers, chunks = 0, {}, bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                reply_headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                chunks += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return HttpReply(status, reply_headers, bytes(chunks))


async def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection, then read until the server closes it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(data)
        received = bytearray()
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except trio.BrokenResourceError:  # reset: the server dropped us
                return bytes(received)
            if not chunk:
                return bytes(received)
            received += chunk


# -- WebSocket, by hand ------------------------------------------------------------------------


class RawWebSocket:
    """A client-side WebSocket framed by hand over a plain TCP stream."""

    def __init__(self, stream: trio.SocketStream, status: int, extra: bytes) -> None:
        self.stream = stream
        self.status = status
        self._buf = bytearray(extra)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        port: int,
        path: str = "/mcp",
        *,
        headers: dict[str, str] | None = None,
        receive_buffer: int | None = None,
    ) -> AsyncIterator[RawWebSocket]:
        """Connect and send the upgrade request; ``status`` is the server's answer.

        ``receive_buffer`` shrinks the socket's receive buffer before connecting, for a
        client that means to stop reading. The connection is dropped at the end.
        """
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        try:
            await sock.connect(("127.0.0.1", port))
            stream = trio.SocketStream(sock)
            key = base64.b64encode(secrets.token_bytes(16)).decode()
            head = {
                "Host": f"127.0.0.1:{port}",
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": key,
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Protocol": "mcp",
                **(headers or {}),
            }
            lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items()), "", ""]
            await stream.send_all("\r\n".join(lines).encode())
            buf = bytearray()
            while b"\r\n\r\n" not in buf:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                buf += chunk
            response, _, rest = bytes(buf).partition(b"\r\n\r\n")
            status = int(response.split(b" ", 2)[1]) if response else 0
            yield cls(stream, status, rest)
        finally:
            sock.close()

    async def send_frame(self, opcode: int, payload: bytes) -> None:
        """One final, masked frame."""
        mask = secrets.token_bytes(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        await self.stream.send_all(header + mask + masked)

    async def send_json(self, message: dict[str, Any]) -> None:
        """One JSON-RPC message in a text frame."""
        await self.send_frame(OP_TEXT, json.dumps(message).encode())

    async def _fill(self, size: int) -> bool:
        while len(self._buf) < size:
            try:
                chunk = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return False
            if not chunk:
                return False
            self._buf += chunk
        return True

    async def recv_frame(self) -> tuple[int, bytes] | None:
        """The next (opcode, payload) from the server; None once the TCP stream ends."""
        if not await self._fill(2):
            return None
        first, second = self._buf[0], self._buf[1]
        size, offset = second & 0x7F, 2
        if size == 126:
            if not await self._fill(4):
                return None
            size, offset = struct.unpack("!H", self._buf[2:4])[0], 4
        elif size == 127:
            if not await self._fill(10):
                return None
            size, offset = struct.unpack("!Q", self._buf[2:10])[0], 10
        if not await self._fill(offset + size):
            return None
        payload = bytes(self._buf[offset : offset + size])
        del self._buf[: offset + size]
        return first & 0x0F, payload

    async def recv_json(self, *, answer_pings: bool = True) -> dict[str, Any]:
        """The next text message (answering pings on the way)."""
        while True:
            frame = await self.recv_frame()
            assert frame is not None, "the server closed the connection"
            opcode, payload = frame
            if opcode == OP_PING and answer_pings:
                await self.send_frame(OP_PONG, payload)
            elif opcode == OP_TEXT:
                return json.loads(payload)  # type: ignore[no-any-return]
            elif opcode == OP_CLOSE:
                raise AssertionError(f"closed: {close_code(payload)}")

    async def close_code(self) -> int | None:
        """Read on (answering nothing) until the server's close frame; its code."""
        while True:
            frame = await self.recv_frame()
            if frame is None:
                return None
            if frame[0] == OP_CLOSE:
                return close_code(frame[1])

    async def aclose(self) -> None:
        """Drop the TCP connection now."""
        await self.stream.aclose()


def close_code(payload: bytes) -> int | None:
    """The status code of a close frame's payload."""
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None


def nested(levels: int) -> dict[str, Any]:
    """A ``params`` object that is ``levels`` containers deep (itself being level 1)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


# -- the official SDK's client over WebSocket ---------------------------------------------------


@asynccontextmanager
async def sdk_websocket(url: str) -> AsyncIterator[Any]:
    """A transport for the official MCP SDK's client (``mcp.Client(sdk_websocket(url))``) over
    MCP on WebSocket: the SDK has no WebSocket client of its own, so this only moves each
    JSON-RPC message between one text frame and the SDK's streams; the session, its requests
    and its checks are the SDK's. The server closing the connection ends the SDK's read stream,
    as a broken pipe ends its stdio client's."""
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage
    from trio_websocket import ConnectionClosed, open_websocket_url

    to_sdk, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_sdk = anyio.create_memory_object_stream[Any](0)

    async with open_websocket_url(url, subprotocols=["mcp"]) as ws, trio.open_nursery() as pumps:

        async def receive() -> None:
            async with to_sdk:
                try:
                    while True:
                        text = await ws.get_message()
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            text, by_name=False
                        )
                        await to_sdk.send(SessionMessage(message))
                except (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return

        async def send() -> None:
            async with from_sdk:
                try:
                    async for item in from_sdk:
                        await ws.send_message(
                            item.message.model_dump_json(by_alias=True, exclude_unset=True)
                        )
                except ConnectionClosed:
                    await to_sdk.aclose()

        pumps.start_soon(receive)
        pumps.start_soon(send)
        try:
            yield read_stream, write_stream
        finally:
            pumps.cancel_scope.cancel()
