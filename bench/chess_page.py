"""The human's side of a chess table, as the page speaks it, for the chess bench.

A keep-alive HTTP/1.1 client (h11) and an SSE reader for the page's live stream, and the
table operations the scripted humans use: create tables, act with the table's token, pick
a random legal move. Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import random
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import h11
import msgspec
import trio
from serve import HOST

from agora.toolsets.chess.position import ungroup_moves

HTTP_TIMEOUT = 30.0
_decode = msgspec.json.Decoder().decode


@dataclass
class Table:
    """A table the bench made, with the human's and the agent's tokens and its random moves."""

    name: str
    token: str
    agent_token: str
    rng: random.Random

    def mcp_path(self) -> str:
        """The table's MCP endpoint path, seated with its agent token."""
        return f"/mcp/chess/{self.name}?token={self.agent_token}"


class Http:
    """One keep-alive HTTP/1.1 connection (h11), reopened when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stream: trio.SocketStream | None = None
        self.conn = h11.Connection(h11.CLIENT)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None

    async def request(self, method: str, target: str, body: Any = None) -> tuple[int, Any]:
        """Send one request; return the status and the decoded JSON body."""
        for attempt in (1, 2):
            if self.stream is None:
                self.stream = await trio.open_tcp_stream(HOST, self.port)
                self.conn = h11.Connection(h11.CLIENT)
            try:
                with trio.fail_after(HTTP_TIMEOUT):
                    return await self._exchange(method, target, body)
            except (trio.BrokenResourceError, h11.RemoteProtocolError, EOFError):
                await self.aclose()  # the server closed an idle keep-alive connection
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _exchange(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        assert self.stream is not None
        conn = self.conn
        raw = msgspec.json.encode(body) if body is not None else b""
        headers = [
            ("Host", f"{HOST}:{self.port}"),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(raw))),
        ]
        out = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
        out += (conn.send(h11.Data(data=raw)) or b"") if raw else b""
        await self.stream.send_all(out + (conn.send(h11.EndOfMessage()) or b""))
        status, chunks = 0, []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise EOFError
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        else:
            await self.aclose()
        return status, _decode(b"".join(chunks)) if chunks else None


@asynccontextmanager
async def open_sse(port: int, target: str):
    """Yield an async iterator over the ``state`` events of one SSE stream."""
    stream = await trio.open_tcp_stream(HOST, port)
    conn = h11.Connection(h11.CLIENT)
    request = h11.Request(method="GET", target=target, headers=[("Host", f"{HOST}:{port}")])
    await stream.send_all((conn.send(request) or b"") + (conn.send(h11.EndOfMessage()) or b""))

    async def states():
        buffer = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                buffer += bytes(event.data)
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    if block.startswith(b"event: state\n"):
                        yield _decode(block.split(b"data: ", 1)[1])
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    async with stream:
        yield states()


# -- tables and players ----------------------------------------------------------------------


async def in_parallel(port: int, items: list[Any], job: Any, width: int = 64) -> None:
    """Run ``job(http, item)`` for every item over ``width`` keep-alive connections."""

    async def worker(chunk: list[Any]) -> None:
        http = Http(port)
        try:
            for item in chunk:
                await job(http, item)
        finally:
            await http.aclose()

    async with trio.open_nursery() as nursery:
        for i in range(width):
            nursery.start_soon(worker, items[i::width])


async def create_tables(port: int, count: int, prefix: str) -> list[Table]:
    tables: list[Table] = []

    async def create(http: Http, i: int) -> None:
        status, body = await http.request("POST", "/play/tables", {"name": f"{prefix}{i}"})
        assert status == 201, body
        tables.append(Table(body["table"], body["token"], body["agentToken"], random.Random(i)))

    await in_parallel(port, list(range(count)), create)
    return sorted(tables, key=lambda t: t.name)


async def human_action(http: Http, table: Table, action: str, body: dict[str, Any]) -> Any:
    path = f"/play/{table.name}/{action}"
    status, reply = await http.request("POST", path, {"token": table.token, **body})
    assert status == 200, (action, reply)
    return reply


def pick(rng: random.Random, legal: list[dict[str, Any]] | dict[str, str]) -> dict[str, Any]:
    """Arguments for one random legal move: from the page's move objects or the agent's map."""
    move = rng.choice(ungroup_moves(legal) if isinstance(legal, dict) else legal)
    if isinstance(move, str):
        args = {"from": move[:2], "to": move[2:4]}
        if move[4:]:
            args["promotion"] = move[4:]
        return args
    args = {"from": move["from"], "to": move["to"]}
    if move["promotion"]:
        args["promotion"] = move["promotion"]
    return args
