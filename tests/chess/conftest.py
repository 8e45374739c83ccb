"""Fixtures for the chess tests: a real runtime on an in-memory store, and tool/human drivers.

Every structured result the tool driver sees, refusals included, is validated against the
tool's outputSchema (and refusals also against the rejection schema alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.errors import ToolError
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.base import Principal, ToolCall
from agora.toolsets.chess import ensure_table
from agora.toolsets.chess.commands import ChooseSide, HumanMove, Look, Tokens
from agora.toolsets.chess.schemas import OUTPUT_SCHEMAS, REJECTION_SCHEMA
from agora.toolsets.chess.sql import MIGRATIONS
from agora.toolsets.chess.table import KIND
from agora.toolsets.chess.tools import HANDLERS

if TYPE_CHECKING:
    from agora.toolsets.chess.snapshot import Snapshot

PUBLIC_URL = "http://127.0.0.1:8765"
VALIDATORS = {
    name: jsonschema.Draft202012Validator(schema) for name, schema in OUTPUT_SCHEMAS.items()
}
REJECTION_VALIDATOR = jsonschema.Draft202012Validator(REJECTION_SCHEMA)


@dataclass
class Table:
    """Drives one table as the agent (through the tool handlers) and as the human."""

    runtime: Runtime
    name: str
    token: str
    agent_token: str | None = None

    def endpoint(self, agent_token: str | None) -> dict[str, str]:
        """The endpoint parameters of a connection with ``agent_token`` (None: watching)."""
        found = {"table": self.name}
        if agent_token is not None:
            found["token"] = agent_token
        return found

    async def tool(
        self,
        name: str,
        *,
        as_token: str | bool | None = True,
        connection: object | None = None,
        **args: Any,
    ) -> dict[str, Any]:
        """Call a tool handler; the result, or the refusal, must match its outputSchema.

        ``as_token`` is the agent token in the endpoint URL: True for the table's (the
        seated agent), None for none (a watcher), or any string. ``connection`` is the MCP
        session the call came on (None: a handler called directly).
        """
        token = self.agent_token if as_token is True else as_token
        call = ToolCall(
            tool=name,
            args=args,
            principal=Principal(),
            runtime=self.runtime,
            endpoint=self.endpoint(token if isinstance(token, str) else None),
            connection=connection,
        )
        try:
            result = await HANDLERS[name](call)
        except ToolError as err:
            VALIDATORS[name].validate(err.body)
            raise
        VALIDATORS[name].validate(result)
        assert result["ok"] is True
        return result

    async def refused(
        self, name: str, *, connection: object | None = None, **args: Any
    ) -> dict[str, Any]:
        """Call a tool that must be refused; return the error body (schema-checked)."""
        with pytest.raises(ToolError) as info:
            await self.tool(name, connection=connection, **args)
        REJECTION_VALIDATOR.validate(info.value.body)
        assert info.value.body["ok"] is False
        return info.value.body

    async def human(self, command: Any) -> Snapshot:
        """Run a human command."""
        snap: Snapshot = await self.runtime.call(KIND, self.name, command)
        return snap

    async def human_move(self, uci: str, note: str | None = None) -> Snapshot:
        """The human plays a UCI move."""
        promotion = uci[4:] or None
        return await self.human(HumanMove(self.token, uci[:2], uci[2:4], promotion, note))

    async def choose(self, agent_color: str) -> Snapshot:
        """The human chooses sides."""
        return await self.human(ChooseSide(self.token, agent_color))  # type: ignore[arg-type]

    async def look(self) -> Snapshot:
        """Read the table."""
        snap: Snapshot = await self.runtime.call(KIND, self.name, Look())
        return snap

    async def play(self, moves: list[str]) -> dict[str, Any] | None:
        """Play UCI moves alternately: the agent's through move_piece, the human's directly."""
        last = None
        for uci in moves:
            snap = await self.look()
            if snap.phase == "agent_turn":
                args: dict[str, Any] = {"from": uci[:2], "to": uci[2:4]}
                if uci[4:]:
                    args["promotion"] = uci[4:]
                last = await self.tool("move_piece", **args)
            else:
                assert snap.phase == "human_turn", snap.phase
                await self.human_move(uci)
                last = None
        return last


for _schema in (*OUTPUT_SCHEMAS.values(), REJECTION_SCHEMA):
    jsonschema.Draft202012Validator.check_schema(_schema)


@pytest.fixture
async def runtime(nursery):
    async with open_store(":memory:", MIGRATIONS) as store:
        rt = Runtime(store, nursery, clock=Clock(FakeWall()), public_url=PUBLIC_URL)
        yield rt
        rt.begin_shutdown()


def _make_table(runtime: Runtime, name: str, tokens: Tokens | None) -> Table:
    if tokens is None:
        return Table(runtime, name, "", None)
    return Table(runtime, name, tokens.human, tokens.agent)


@pytest.fixture
def make_table():
    """Build a `Table` driver for any runtime, table name and `Tokens` (None: no tokens)."""
    return _make_table


@pytest.fixture
async def table(runtime):
    tokens = await ensure_table(runtime)
    return Table(runtime, "default", tokens.human, tokens.agent)
