"""Drivers for the chamber end-to-end tests: a chamber server, two agents and the solver.

- `ChamberServer` is ``agora serve --toolsets chamber`` on a free loopback port and a temp
  SQLite file (`e2e_process.AgoraProcess`), optionally with a signing key configured; it can be
  stopped with SIGTERM (a clean exit is required) and started again on the same database.
- `SdkPlayer` (the official ``mcp`` SDK over Streamable HTTP) and `WsPlayer` (`agora.client`
  over WebSocket) call tools and validate every structured result, refusals included, against
  the outputSchema that tools/list published (Draft 2020-12, so if/then/else is checked).
- `Play` drives the reference solver of tests/chamber with real tool calls: the solver is
  synchronous, so it runs in a worker thread and each ``act`` is a tool call made back on the
  Trio thread. It can pause once some locks are open, and a later `Play` can resume with the
  solver's notes (a restart test needs both).
- `agora_cli` runs ``agora cards ...`` as a subprocess.

Nothing here sleeps; every wait is bounded by the caller's ``trio.fail_after`` or a timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import jsonschema
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from e2e_process import AGORA, PROCESS_TIMEOUT, AgoraProcess, clean_env

if TYPE_CHECKING:
    from agora.client import WsClient
    from mcp import Client

# The reference solver lives with the chamber's unit tests and imports its siblings by name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chamber"))
from solver import Solver

CHAMBER_TOOLS = [
    "call_for_help",
    "chamber_action",
    "enter_open_challenge",
    "observe_chamber",
    "seal_attempt",
]
SUITES = ["chambre-chrono-v0", "chambre-atelier-v0"]
ENTRY = {
    "product": "e2e-agent",
    "host": "pytest",
    "provider_claim": "agora-tests",
    "model_claim": "reference solver",
}
#: Seconds a CLI subprocess may take.
CLI_TIMEOUT = 30.0


class ChamberServer:
    """``agora serve --toolsets chamber`` on ``db``; restartable on the same file.

    Attributes:
        process: The current server process (a new one after each `start`).
    """

    def __init__(self, directory: Path, *, signing_key: Path | None = None) -> None:
        self.directory = directory
        self.db = directory / "agora.db"
        self.config = directory / "agora.toml"
        self.set_signing_key(signing_key)
        self.process: AgoraProcess | None = None

    def set_signing_key(self, key: Path | None) -> None:
        """Write the config the next `start` uses: with ``key`` as the card signing key, or none."""
        text = "[options.chamber]\nroom_pool_size = 4\n"  # a few pooled rooms, cheap to build
        if key:
            text += f'signing_key = "{key}"\n'
        self.config.write_text(text)

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT``)."""
        assert self.process is not None, "not started"
        return self.process.url

    @property
    def port(self) -> int:
        """The port it listens on."""
        assert self.process is not None, "not started"
        return self.process.port

    @property
    def mcp_url(self) -> str:
        """The chamber's own MCP endpoint (Streamable HTTP; the WebSocket on the same path)."""
        return f"{self.url}/mcp/chamber"

    def start(self) -> str:
        """Start a server on the database; returns its base URL."""
        self.process = AgoraProcess(
            "--db", str(self.db), "--toolsets", "chamber", "--config", str(self.config),
            env=clean_env(AGORA_SYNCHRONOUS="FULL"),
        )  # fmt: skip
        return self.process.start()

    async def stop(self) -> None:
        """SIGTERM, then require a clean exit (status 0, shutdown logged, no traceback)."""
        assert self.process is not None, "not started"
        self.process.signal()
        with trio.fail_after(PROCESS_TIMEOUT):
            status = await self.process.wait_exit()
        self.process.assert_clean_exit(status)

    def ensure_stopped(self) -> None:
        """Stop a server left running by a failed test (SIGTERM, then kill if it hangs)."""
        if self.process is not None and self.process.proc.poll() is None:
            self.process.stop()


def write_key(path: Path, *, hex_seed: bool = False) -> tuple[Path, str]:
    """A fresh Ed25519 key file (PEM PKCS#8, or 64 hex digits); returns it and its public hex."""
    key = Ed25519PrivateKey.generate()
    if hex_seed:
        raw = key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        path.write_text(raw.hex() + "\n")
    else:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return path, public.hex()


async def agora_cli(*args: str) -> tuple[int, str]:
    """Run ``agora ARGS`` (bounded); returns its exit status and stdout + stderr."""
    with trio.fail_after(CLI_TIMEOUT):
        done = await trio.run_process(
            [AGORA, *args],
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=clean_env(),
        )
    return done.returncode, (done.stdout + done.stderr).decode()


# -- agents ------------------------------------------------------------------------------------


class Player(Protocol):
    """Calls chamber tools and returns ``(is_error, structured body)``, validated."""

    validated: int

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool."""
        ...


@dataclass
class Checker:
    """The outputSchemas of one endpoint's tools/list, and how many results they checked."""

    validators: dict[str, jsonschema.Draft202012Validator] = field(default_factory=dict)
    validated: int = 0

    def learn(self, name: str, schema: dict[str, Any] | None) -> None:
        """Record a tool's outputSchema (every chamber tool must have one)."""
        assert schema is not None, f"{name} has no outputSchema"
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "if" in schema, f"{name}: the contract's if/then/else is missing"
        self.validators[name] = jsonschema.Draft202012Validator(schema)

    def check(
        self, name: str, is_error: bool, body: dict[str, Any] | None, texts: list[str]
    ) -> tuple[bool, dict[str, Any]]:
        """Validate one tool result; refusals must take the schema's ``else`` branch."""
        assert body is not None, f"{name}: no structuredContent"
        self.validators[name].validate(body)
        assert texts, f"{name}: no text block"
        assert json.loads(texts[0]) == body
        assert body["ok"] is not is_error, body
        if is_error:
            assert body["code"], body
            assert body["error"], body
        self.validated += 1
        return is_error, body


@dataclass
class SdkPlayer:
    """The official MCP SDK client (Streamable HTTP)."""

    client: Client
    checker: Checker = field(default_factory=Checker)

    @property
    def validated(self) -> int:
        """How many results were validated."""
        return self.checker.validated

    async def list_tools(self) -> list[str]:
        """tools/list: learn every outputSchema; the sorted tool names."""
        listed = await self.client.list_tools()
        for tool in listed.tools:
            self.checker.learn(tool.name, tool.output_schema)
        return sorted(t.name for t in listed.tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool; the validated ``(is_error, body)``."""
        result = await self.client.call_tool(name, arguments)
        texts = [block.text for block in result.content if block.type == "text"]
        return self.checker.check(name, bool(result.is_error), result.structured_content, texts)


@dataclass
class WsPlayer:
    """agora's WebSocket MCP client."""

    client: WsClient
    checker: Checker = field(default_factory=Checker)

    @property
    def validated(self) -> int:
        """How many results were validated."""
        return self.checker.validated

    async def list_tools(self) -> list[str]:
        """tools/list: learn every outputSchema; the sorted tool names."""
        tools = await self.client.list_tools()
        for tool in tools:
            self.checker.learn(tool["name"], tool.get("outputSchema"))
        return sorted(t["name"] for t in tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool; the validated ``(is_error, body)``."""
        result = await self.client.call_tool(name, arguments)
        texts = [b["text"] for b in result.get("content", []) if b.get("type") == "text"]
        return self.checker.check(
            name, bool(result.get("isError")), result.get("structuredContent"), texts
        )


async def ok(player: Player, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed."""
    is_error, body = await player.call(name, arguments)
    assert not is_error, body
    return body


async def refused(player: Player, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must be refused; its error body."""
    is_error, body = await player.call(name, arguments)
    assert is_error, body
    return body


async def enter(player: Player, suite: str, seed: str) -> dict[str, Any]:
    """``enter_open_challenge`` with the test identity; checks the entry envelope."""
    entered = await ok(player, "enter_open_challenge", {**ENTRY, "suite": suite, "seed": seed})
    assert entered["suite_id"] == suite
    assert entered["action_index"] == 0
    assert entered["seed_source"] == "participant"
    assert entered["objects"]
    return entered


class Paused(Exception):
    """Raised into the solver to stop it once enough locks are open."""


@dataclass
class Play:
    """The reference solver playing one attempt through ``player``.

    Attributes:
        index: The transcript length, from the replies (sent as ``expected_action_index``).
        opened: Locks open, from the replies.
        pause_after: Stop (raise `Paused`) at the first action after this many locks opened.
        solver: The solver; its notes (``facts``) can seed another `Play`.
    """

    player: Player
    handle: str
    index: int = 0
    opened: int = 0
    pause_after: int | None = None
    facts: dict[str, int] = field(default_factory=dict)
    solver: Solver = field(init=False)

    def __post_init__(self) -> None:
        self.solver = Solver(self.act, facts=self.facts)

    def act(self, op: str, object: str | None = None, value: Any = None) -> dict[str, Any]:
        """One ``chamber_action``, made on the Trio thread (called from the solver's thread)."""
        if self.pause_after is not None and self.opened >= self.pause_after:
            raise Paused
        args: dict[str, Any] = {
            "challenge_handle": self.handle,
            "op": op,
            "expected_action_index": self.index,
        }
        if object is not None:
            args["object"] = object
        if value is not None:
            args["value"] = value
        body = trio.from_thread.run(ok, self.player, "chamber_action", args)
        assert body["action_index"] == self.index + 1, body
        assert body["op"] == op
        self.index, self.opened = body["action_index"], body["locks_open"]
        return body

    async def run(self) -> dict[str, Any]:
        """Solve (or play until paused); the last reply.

        Raises:
            Paused: ``pause_after`` locks are open.
        """
        reply: dict[str, Any] = await trio.to_thread.run_sync(self.solver.run)
        return reply
