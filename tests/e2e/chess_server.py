"""Shared drivers for the chess end-to-end tests: a real ``agora serve`` and its two players.

- `agora_serve` runs ``agora serve --port 0 --toolsets chess`` as a subprocess on a temp DB,
  waits (bounded) for the lines it prints on stderr, and stops it with SIGTERM.
- `http_json` and `open_events` speak plain HTTP/1.1 (h11 over a Trio TCP stream) to the
  page's JSON API and its Server-Sent Events stream, as the human's page does.
- `SdkAgent` is the official ``mcp`` SDK client playing as the agent: it follows each reply's
  ``nextAction`` and validates every structured result, refusals included, against the
  outputSchema that tools/list published (and every refusal against the rejection schema).
- `ScriptedHuman` plays the human through the page API, woken by the SSE stream, never by
  polling.

Nothing here sleeps: every wait is bounded by ``trio.fail_after`` or a socket deadline.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import chess
import h11
import jsonschema
import trio

from agora.toolsets.chess.position import ungroup_moves
from agora.toolsets.chess.schemas import REJECTION_SCHEMA

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mcp import Client

START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
HTTP_TIMEOUT = 10.0

#: Fool's mate: White (f3, g4) is mated by Black's queen on h4.
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
#: Scholar's mate: White's queen takes f7 with mate on move 4.
SCHOLARS_MATE = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]

REJECTION = jsonschema.Draft202012Validator(REJECTION_SCHEMA)
_HUMAN_URL = re.compile(r"chess: human player: (http://\S+/play/(\S+)\?token=(\S+))")
_AGENT_URL = re.compile(r"chess: agent endpoint: http://\S+/mcp/chess/\S+\?token=(\S+) ")
_SERVING = re.compile(r"agora \S+ serving .* on (http://127\.0\.0\.1:\d+)")


def agora_command() -> list[str]:
    """The command that runs this checkout's ``agora``."""
    script = shutil.which("agora", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "agora.cli"]


@dataclass
class AgoraProcess:
    """A running ``agora serve``: its base URL and the default table's human link."""

    process: trio.Process
    url: str = ""
    human_url: str = ""
    table: str = ""
    token: str = ""
    agent_token: str = ""
    log: list[str] = field(default_factory=list)
    terminated: bool = False

    def terminate(self) -> None:
        """Send SIGTERM once (a second one would cut the graceful shutdown short)."""
        if not self.terminated and self.process.returncode is None:
            self.terminated = True
            self.process.send_signal(signal.SIGTERM)

    def mcp_url(self, table: str = "default", *, seated: bool = True) -> str:
        """The Streamable HTTP endpoint of the default table, with its agent token if seated."""
        assert table == "default", "other tables' tokens come from POST /play/tables"
        query = f"?token={self.agent_token}" if seated else ""
        return f"{self.url}/mcp/chess/{table}{query}"

    def play_url(self, table: str, action: str) -> str:
        """A page API URL such as ``/play/<table>/move``."""
        return f"{self.url}/play/{table}/{action}"


async def _read_log(proc: AgoraProcess, ready: trio.Event) -> None:
    assert proc.process.stderr is not None
    pending = b""
    while chunk := await proc.process.stderr.receive_some(65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            proc.log.append(line)
            if found := _HUMAN_URL.search(line):
                proc.human_url, proc.table, proc.token = found.groups()
            if found := _AGENT_URL.search(line):
                proc.agent_token = found.group(1)
            if found := _SERVING.search(line):
                proc.url = found.group(1)
                ready.set()
    ready.set()  # stderr closed: the process ended before (or after) it was ready


@asynccontextmanager
async def agora_serve(db: Path, *extra: str) -> AsyncIterator[AgoraProcess]:
    """Run ``agora serve`` on a free loopback port and the SQLite file ``db`` (``extra``:
    more flags, such as ``--shared``).

    Yields once the server printed its URLs; on exit sends SIGTERM and requires a clean exit.
    """
    command = [
        *agora_command(),
        "serve",
        "--port",
        "0",
        "--db",
        str(db),
        "--toolsets",
        "chess",
        *extra,
    ]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    proc = AgoraProcess(process)
    try:
        async with trio.open_nursery() as nursery:
            ready = trio.Event()
            nursery.start_soon(_read_log, proc, ready)
            with trio.fail_after(START_TIMEOUT):
                await ready.wait()
            if not proc.url or not proc.token or not proc.agent_token:
                raise RuntimeError("agora serve did not start:\n" + "\n".join(proc.log))
            yield proc
            proc.terminate()
            with trio.fail_after(STOP_TIMEOUT):
                await process.wait()
        # The log reader has now read stderr to its end.
        log = "\n".join(proc.log)
        assert process.returncode == 0, f"agora serve exited with {process.returncode}:\n{log}"
        assert "Traceback" not in log, log
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True), trio.move_on_after(STOP_TIMEOUT):
                await process.wait()


# -- plain HTTP, as the page speaks it -------------------------------------------------------


async def _open(
    url: str, method: str, body: bytes | None
) -> tuple[trio.SocketStream, h11.Connection]:
    parts = urlsplit(url)
    stream = await trio.open_tcp_stream(parts.hostname or "127.0.0.1", parts.port or 80)
    conn = h11.Connection(h11.CLIENT)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    headers = [("Host", parts.netloc), ("Connection", "close"), ("Accept", "*/*")]
    if body is not None:
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    out = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
    if body:
        out += conn.send(h11.Data(data=body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(out)
    return stream, conn


async def _next_event(stream: trio.SocketStream, conn: h11.Connection) -> h11.Event:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event  # type: ignore[return-value]
        conn.receive_data(await stream.receive_some(65536))


async def http_json(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One request; returns the status and the decoded JSON body."""
    with trio.fail_after(HTTP_TIMEOUT):
        raw = None if body is None else json.dumps(body).encode()
        stream, conn = await _open(url, method, raw)
        async with stream:
            status, chunks = 0, []
            while True:
                event = await _next_event(stream, conn)
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    chunks.append(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
    return status, json.loads(b"".join(chunks))


class EventReader:
    """Reads one Server-Sent Events response, event by event."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection) -> None:
        self._stream = stream
        self._conn = conn
        self._buffer = ""

    async def next(self) -> tuple[str, str]:
        """The next ``(event, data)``; raises EOFError when the stream ends."""
        while "\n\n" not in self._buffer:
            event = await _next_event(self._stream, self._conn)
            if isinstance(event, h11.Data):
                self._buffer += bytes(event.data).decode()
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                raise EOFError
        block, self._buffer = self._buffer.split("\n\n", 1)
        name, data = "message", []
        for line in block.split("\n"):
            key, _, value = line.partition(": ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        return name, "\n".join(data)

    async def next_state(self) -> dict[str, Any]:
        """The next ``state`` event's page state (pings are skipped)."""
        while True:
            name, data = await self.next()
            if name == "state":
                state: dict[str, Any] = json.loads(data)
                return state


@asynccontextmanager
async def open_events(url: str) -> AsyncIterator[EventReader]:
    """Open the SSE stream at ``url`` (the page's ``/events``)."""
    with trio.fail_after(HTTP_TIMEOUT):
        stream, conn = await _open(url, "GET", None)
        response = await _next_event(stream, conn)
    async with stream:
        assert isinstance(response, h11.Response), response
        assert response.status_code == 200, response
        headers = {k.decode().lower(): v.decode() for k, v in response.headers}
        assert headers["content-type"].startswith("text/event-stream")
        yield EventReader(stream, conn)


# -- the two players ------------------------------------------------------------------------


@dataclass
class ScriptedHuman:
    """Plays the human's side of ``script`` through the page API, woken by its SSE stream.

    Attributes:
        agent_color: The side choice the human makes first.
        notes: The human's note for each of its plies (by ply number, from 1).
        states: Every page state received on the stream.
    """

    server: AgoraProcess
    table: str
    token: str
    script: list[str]
    agent_color: str
    notes: dict[int, str] = field(default_factory=dict)
    stop_at_ply: int | None = None
    states: list[dict[str, Any]] = field(default_factory=list)
    version: int = -1

    async def post(self, action: str, body: dict[str, Any]) -> tuple[int, Any]:
        """A human action with the table's token."""
        return await http_json(
            "POST", self.server.play_url(self.table, action), {"token": self.token, **body}
        )

    async def play(self) -> dict[str, Any]:
        """Play until the game is over or ``stop_at_ply`` plies are on the board.

        Returns:
            The last page state seen.
        """
        events = self.server.play_url(self.table, f"events?token={self.token}")
        async with open_events(events) as reader:
            while True:
                state = await reader.next_state()
                self.states.append(state)
                assert state["role"] == "human"
                if state["version"] < self.version:
                    continue  # sent before our own last action was answered, as on the page
                plies = len(state["history"])
                if state["phase"] == "over" or plies == self.stop_at_ply:
                    return state
                if state["phase"] == "side_choice":
                    status, body = await self.post("side", {"agentColor": self.agent_color})
                    assert status == 200, body
                    self.version = body["version"]
                elif state["phase"] == "human_turn":
                    await self._move(state, plies)

    async def _move(self, state: dict[str, Any], plies: int) -> None:
        uci = self.script[plies]
        legal = {m["uci"] for m in state["legalMoves"]}
        assert uci in legal, (uci, sorted(legal))
        body: dict[str, Any] = {"from": uci[:2], "to": uci[2:4]}
        if note := self.notes.get(plies + 1):
            body["note"] = note
        status, reply = await self.post("move", body)
        assert status == 200, reply
        self.version = reply["version"]
        assert reply["history"][-1]["uci"] == uci


@dataclass
class SdkAgent:
    """The official MCP SDK client, playing as the agent by following ``nextAction``.

    Every structured result, refusals included, is validated against the outputSchema
    from tools/list (refusals also against the rejection schema alone), and the text block
    of either must carry the same JSON.
    """

    client: Client
    validators: dict[str, jsonschema.Draft202012Validator] = field(default_factory=dict)
    replies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def list_tools(self) -> list[str]:
        """tools/list; builds a validator per outputSchema and returns the tool names."""
        listed = await self.client.list_tools()
        for tool in listed.tools:
            assert tool.output_schema is not None, tool.name
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            self.validators[tool.name] = jsonschema.Draft202012Validator(tool.output_schema)
        return sorted(self.validators)

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool; returns ``(is_error, structured body)`` with the body validated."""
        result = await self.client.call_tool(name, arguments)
        body = result.structured_content
        assert body is not None, result
        text = [block.text for block in result.content if block.type == "text"]
        assert text, result
        assert json.loads(text[0]) == body
        self.validators[name].validate(body)
        assert body["ok"] is not result.is_error
        if result.is_error:
            REJECTION.validate(body)
        self.replies.append((name, body))
        return bool(result.is_error), body

    async def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed."""
        is_error, body = await self.call(name, arguments or {})
        assert not is_error, body
        return body

    async def play(
        self,
        script: list[str],
        notes: dict[int, str],
        *,
        start: dict[str, Any] | None = None,
        stop_after_ply: int | None = None,
        wait_ms: int = 20000,
    ) -> dict[str, Any]:
        """Follow nextAction from ``start`` (default: join_game) until the game is over.

        The agent plays the entry of ``script`` for the current ply (read off the FEN),
        which must be one of its ``legalMoves``, with the note for that ply.

        Returns:
            The last reply (GAME_OVER, or the ``move_piece`` reply at ``stop_after_ply``).
        """
        reply = start if start is not None else await self.ok("join_game")
        while True:
            action = reply["nextAction"]
            if action["tool"] is None:
                assert reply["statusCode"] == "GAME_OVER", reply
                return reply
            if action["tool"] == "wait_for_turn":
                assert not reply["agentMayMove"]
                arguments = {**action["arguments"], "timeout_ms": wait_ms}
                reply = await self.ok("wait_for_turn", arguments)
                continue
            assert action["tool"] == "move_piece", action
            assert reply["statusCode"] == "AGENT_TURN", reply
            assert reply["agentMayMove"], reply
            reply = await self._move(reply, script, notes)
            if ply_of(reply) == stop_after_ply:
                return reply

    async def _move(
        self, reply: dict[str, Any], script: list[str], notes: dict[int, str]
    ) -> dict[str, Any]:
        ply = ply_of(reply)
        uci = script[ply]
        assert uci in ungroup_moves(reply["legalMoves"]), (uci, reply["legalMoves"])
        args = {"from": uci[:2], "to": uci[2:4]}
        if uci[4:]:
            args["promotion"] = uci[4:]
        if note := notes.get(ply + 1):
            args["note"] = note
        played = await self.ok("move_piece", args)
        assert played["lastMove"]["uci"] == uci
        assert played["lastMove"]["by"] == "agent"
        assert played["lastMove"]["note"] == notes.get(ply + 1)
        return played


def ply_of(reply: dict[str, Any]) -> int:
    """How many plies the game in ``reply`` has (games start from the initial position)."""
    return chess.Board(reply["fen"]).ply()


async def terminate_when_in_flight(server: AgoraProcess, count: int) -> None:
    """Send SIGTERM once the server reports ``count`` MCP calls in flight.

    There is no event to wait on from outside the process, so this asks ``/healthz`` again
    after each answer (the caller bounds it); every round trip awaits the server.
    """
    while True:
        status, health = await http_json("GET", f"{server.url}/healthz")
        assert status == 200, health
        if health["in_flight"] >= count:
            server.terminate()
            return


async def fools_mate_against_the_page(
    server: AgoraProcess, client: Any, notes: dict[int, str]
) -> tuple[SdkAgent, ScriptedHuman, dict[str, Any], dict[str, Any]]:
    """The agent behind ``client`` (an SDK client session, through whatever process) plays
    fool's mate as black against a human on ``server``'s page; the agent (with its replies),
    the human (with the states its page saw), the agent's final reply, and the page's state
    after the game."""
    agent = SdkAgent(client)
    assert set(await agent.list_tools()) == {
        "join_game",
        "get_board",
        "move_piece",
        "wait_for_turn",
    }
    joined = await agent.ok("join_game")
    # The human moves through the page; the agent's waits wake on those moves, and the
    # page on the agent's.
    human = ScriptedHuman(server, "default", server.token, FOOLS_MATE, "black")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(human.play)
        final = await agent.play(FOOLS_MATE, notes, start=joined)
    status, page = await http_json("GET", f"{server.url}/play/default/state?token={server.token}")
    assert status == 200
    return agent, human, final, page


def check_fools_mate(
    agent: SdkAgent, final: dict[str, Any], page: dict[str, Any], notes: dict[int, str]
) -> None:
    """The agent won fool's mate, woken once per human move (never a timeout), and the
    page shows every move with its side and the agent's last note."""
    assert final["result"]["reason"] == "checkmate"
    assert final["result"]["winnerRole"] == "agent"
    waits = [body for name, body in agent.replies if name == "wait_for_turn"]
    statuses = [w["statusCode"] for w in waits]
    assert statuses.count("AGENT_TURN") == 2, statuses  # one per human move
    assert "WAIT_TIMEOUT" not in statuses, statuses
    assert page["phase"] == "over"
    assert [m["uci"] for m in page["history"]] == FOOLS_MATE
    assert [m["by"] for m in page["history"]] == ["human", "agent"] * 2
    assert page["history"][3]["note"] == notes[4]
