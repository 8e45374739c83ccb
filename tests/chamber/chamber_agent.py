"""Shared test helpers: entry arguments, outputSchema validators and the `Agent` driver.

`Agent` calls the toolset's handlers the way the MCP layer does and validates every
structured result (and every refusal body) against the tool's outputSchema from the
contract, if/then/else included.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.errors import ToolError
from agora.toolsets.base import Principal, ToolCall
from agora.toolsets.chamber.contract import ChamberContract, default_contract

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

PUBLIC_URL = "http://127.0.0.1:8765"
START = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
ENTRY = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}


def validators(contract: ChamberContract) -> dict[str, jsonschema.Draft202012Validator]:
    """One outputSchema validator per tool name (aliases included)."""
    table = {}
    for name in (*contract.tool_names, *contract.aliases):
        schema = contract.output_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        table[name] = jsonschema.Draft202012Validator(schema)
    return table


VALIDATORS = validators(default_contract())


def check_refusal(name: str, body: dict[str, Any]) -> None:
    """A refusal must match the tool's outputSchema (its else branch) and say ok: false."""
    VALIDATORS[name].validate(body)
    assert body["ok"] is False
    assert body["code"] in default_contract().error_codes


@dataclass
class Agent:
    """Calls chamber tools as one principal, validating every result against the contract."""

    runtime: Runtime
    handlers: dict[str, Any]
    principal: Principal = field(default_factory=Principal)

    async def tool(self, name: str, **args: Any) -> dict[str, Any]:
        call = ToolCall(tool=name, args=args, principal=self.principal, runtime=self.runtime)
        try:
            result: dict[str, Any] = await self.handlers[name](call)
        except ToolError as exc:
            check_refusal(name, exc.body)
            raise
        VALIDATORS[name].validate(result)
        return result

    async def refused(self, name: str, **args: Any) -> dict[str, Any]:
        """Call a tool that must fail; return its (schema-checked) error body."""
        with pytest.raises(ToolError) as info:
            await self.tool(name, **args)
        return info.value.body

    async def enter(self, **extra: Any) -> dict[str, Any]:
        return await self.tool("enter_open_challenge", **{**ENTRY, **extra})
