"""Helpers for the debate tests: principals, and `Desk`, a tool driver on a real runtime.

`Desk.call` checks the arguments against the tool's inputSchema (as the server does), runs
the handler as a given principal and validates every structured result against the tool's
outputSchema; `Desk.refused` returns the error body of a call that must fail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.errors import ToolError
from agora.identity import Principal
from agora.mcp.contracts import load_contract
from agora.mcp.validation import compile_validator
from agora.toolsets.base import ToolCall
from agora.toolsets.debate.replies import argument_rejection
from agora.toolsets.debate.tools import HANDLERS

if TYPE_CHECKING:
    from agora.runtime.clock import FakeWall
    from agora.runtime.registry import Runtime

CONTRACT = load_contract("debate")
INPUT = {n: compile_validator(dict(t.input_schema)) for n, t in CONTRACT.tools.items()}
OUTPUT = {
    n: jsonschema.Draft202012Validator(dict(t.output_schema))
    for n, t in CONTRACT.tools.items()
    if t.output_schema is not None
}

ALICE = Principal("alice", projects=frozenset({"ops"}))
BOB = Principal("bob", projects=frozenset({"ops"}))
CAROL = Principal("carol", projects=frozenset({"ops"}))
MALLORY = Principal("mallory", projects=frozenset({"ops"}))
OUTSIDER = Principal("olga", projects=frozenset({"other"}))
CONDUCTOR = Principal("cora", scopes=frozenset({"conductor"}), projects=frozenset({"ops"}))
STAR = Principal("stella", scopes=frozenset({"star"}))
LANE = '{"priority_lane": "P2", "priority_reason": "test topic"}'


class Refused(Exception):
    """A call that was expected to succeed failed."""


@dataclass
class Desk:
    """Calls debate tools as any principal against one runtime."""

    runtime: Runtime
    wall: FakeWall
    calls: list[str] = field(default_factory=list)

    async def call(self, who: Principal, tool: str, **args: Any) -> dict[str, Any]:
        """Call ``tool``; its result must match the tool's outputSchema."""
        issues = INPUT[tool].errors(args)
        if issues:
            raise ToolError(argument_rejection(issues))
        self.calls.append(tool)
        call = ToolCall(tool=tool, args=args, principal=who, runtime=self.runtime)
        result = await HANDLERS[tool](call)
        OUTPUT[tool].validate(result)
        return result

    async def refused(self, who: Principal, tool: str, **args: Any) -> dict[str, Any]:
        """Call ``tool``, which must fail; return its structured error body."""
        with pytest.raises(ToolError) as info:
            await self.call(who, tool, **args)
        body = info.value.body
        assert body["ok"] is False, body
        assert isinstance(body["error"], str), body
        return body

    async def session(self, who: Principal) -> str:
        """A fresh session owned by ``who``."""
        return str((await self.call(who, "debate_session_open"))["session_id"])

    async def topic(
        self, who: Principal, roles: dict[str, Any], *, state: str = "ACTIVE", **args: Any
    ) -> str:
        """A topic created by ``who`` with ``roles``: role -> a session of ``who``,
        (principal, session) for a participant who binds the role after creation, or None
        for a role left unbound."""
        entries = [
            {"role": r, "session_id": s if isinstance(s, str) else None} for r, s in roles.items()
        ]
        first = next(iter(roles))
        args.setdefault("metadata_json", LANE)
        out = await self.call(
            who,
            "debate_init",
            title="a topic",
            created_by_role=first,
            roles_json=json.dumps(entries),
            **args,
        )
        topic_id = str(out["topic_id"])
        for role, held in roles.items():
            if isinstance(held, tuple):
                owner, session = held
                await self.call(
                    owner, "debate_bind_role", topic_id=topic_id, role=role, session_id=session
                )
        if state != "INIT":
            await self.call(who, "debate_state", topic_id=topic_id, role=first, new_state="ACTIVE")
        return topic_id
