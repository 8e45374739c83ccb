"""A driver for the router's tool handlers with contract checks on both sides.

`Router.call` validates the arguments against the tool's inputSchema, runs the handler with a
real `ToolCall`, and validates the result against the outputSchema; `Router.refused` expects
an ``isError`` answer and returns its body. Helpers build the common argument sets.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.errors import ToolError
from agora.mcp.contracts import load_contract
from agora.mcp.validation import compile_validator
from agora.toolsets.base import Principal, ToolCall
from agora.toolsets.router import serving
from agora.toolsets.router import toolset as router_toolset
from agora.toolsets.router.progress import evidence_digest
from agora.toolsets.router.tools import HANDLERS

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

CONTRACT = load_contract("router")
INPUTS = {n: compile_validator(dict(t.input_schema)) for n, t in CONTRACT.tools.items()}
OUTPUTS = {
    n: jsonschema.Draft7Validator(dict(t.output_schema or {})) for n, t in CONTRACT.tools.items()
}
#: The outputSchema each tool declares (the contract's result, or a refusal): a refusal's body
#: must match it, as a client that checks every structuredContent (isError too) requires.
DECLARED = {
    t["name"]: jsonschema.Draft7Validator(t["outputSchema"])
    for t in router_toolset().tools
    if "outputSchema" in t
}
FINGERPRINT = "sha256:" + "ab" * 32
_keys = itertools.count(1)


def ctx(session: str = "s1") -> dict[str, str]:
    return {"session_id": session, "actor": "user:alice", "runtime_policy_snapshot_id": "pol-1"}


def key(prefix: str = "k") -> str:
    return f"{prefix}-{next(_keys)}"


def plan_args(objective: str, *, session: str = "s1", idem: str | None = None,
              version: int = 0, **extra: Any) -> dict[str, Any]:  # fmt: skip
    args = {
        "context": ctx(session),
        "expected_state_version": version,
        "idempotency_key": idem or key("plan"),
        "correlation_id": "corr-test",
        "objective": objective,
        "goal_binding_id": None,
        "requested_work_mode": None,
        "explicit_skill_ids": [],
        "explicit_semantics": None,
    }
    args.update(extra)
    return args


@dataclass
class Router:
    """Calls router tools as one MCP client would."""

    runtime: Runtime
    client: Any = None
    seen: list[str] = field(default_factory=list)
    #: Who calls: anonymous unless a test names a principal (its session ids get scoped).
    principal: Principal = field(default_factory=Principal)
    #: Whether the client stands for one that started the server (stdio, in-process).
    local_client: bool = True

    def _call(self, tool: str, args: dict[str, Any]) -> ToolCall:
        problems = INPUTS[tool].problems(args)
        assert not problems, problems
        self.seen.append(tool)
        return ToolCall(tool=tool, args=args, principal=self.principal, runtime=self.runtime,
                        client=self.client, local_client=self.local_client)  # fmt: skip

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await serving(HANDLERS[tool])(self._call(tool, args))
        OUTPUTS[tool].validate(result)
        return result

    async def refused(self, tool: str, **args: Any) -> dict[str, Any]:
        with pytest.raises(ToolError) as refused:
            await serving(HANDLERS[tool])(self._call(tool, args))
        body: dict[str, Any] = refused.value.body
        assert body["ok"] is False
        DECLARED[tool].validate(body)
        return body

    async def plan(self, objective: str, **kw: Any) -> dict[str, Any]:
        return await self.call("plan_work", **plan_args(objective, **kw))

    async def next(self, run: str, session: str = "s1") -> dict[str, Any]:
        return await self.call("get_next_work", context=ctx(session), workflow_run_id=run)

    async def event(self, run: str, phase: str, observation: dict[str, Any], version: int,
                    **kw: Any) -> dict[str, Any]:  # fmt: skip
        args = event_args(run, phase, observation, version, **kw)
        return await self.call("record_work_event", **args)

    async def gate(self, run: str, phase: str, refs: list[str], version: int,
                   **kw: Any) -> dict[str, Any]:  # fmt: skip
        return await self.call("evaluate_gate", **gate_args(run, phase, refs, version, **kw))


def event_args(run: str, phase: str, observation: dict[str, Any], version: int, *,
               session: str = "s1", idem: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "context": ctx(session), "workflow_run_id": run, "phase_id": phase,
        "observation": observation, "activation_receipt_ref": None,
        "expected_state_version": version, "idempotency_key": idem or key("event"),
        "correlation_id": "corr-test",
    }  # fmt: skip


def gate_args(run: str, phase: str, refs: list[str], version: int, *, session: str = "s1",
              idem: str | None = None, digest: str | None = None,
              plan_revision: int = 1) -> dict[str, Any]:  # fmt: skip
    return {
        "context": ctx(session), "workflow_run_id": run, "phase_id": phase,
        "evidence_refs": refs, "expected_evidence_digest": digest or evidence_digest(refs),
        "expected_plan_revision": plan_revision, "expected_state_version": version,
        "idempotency_key": idem or key("gate"), "correlation_id": "corr-test",
    }  # fmt: skip
