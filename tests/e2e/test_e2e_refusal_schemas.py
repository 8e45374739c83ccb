"""Every refusal a client gets validates against the outputSchema the tool listed.

The TypeScript SDK's client (Claude Code's, Cursor's) checks each structuredContent against
the outputSchema it listed, an ``isError`` one too, and answers a mismatch with an error of its
own: the model then never reads the refusal. The router's refusals lay outside its closed
outputSchemas and reached such a host that way. Here the official SDK lists each toolset's
tools, calls every one of them with arguments it refuses (none at all, and a field it does
not take) and the router's tools with refusals of state (an unknown run, a stale version),
and each structured answer must validate against the schema that tool listed.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import trio
from e2e_config import write_config
from e2e_process import AgoraProcess

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 60
TOOLSETS = ("chamber", "chess", "router", "debate")
CONTEXT = {"session_id": "s1", "actor": "user:alice", "runtime_policy_snapshot_id": "pol-1"}
#: Router calls refused for the state they name, not their arguments' shape.
ROUTER_STATE_REFUSALS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_next_work", {"context": CONTEXT, "workflow_run_id": "run-none"}),
    ("get_router_status", {"context": CONTEXT, "workflow_run_id": "run-none"}),
    (
        "record_work_event",
        {
            "context": CONTEXT, "workflow_run_id": "run-none", "phase_id": "p1",
            "observation": {"check_id": "c1", "outcome": "passed"},
            "activation_receipt_ref": None, "expected_state_version": 3,
            "idempotency_key": "k1", "correlation_id": "corr-1",
        },
    ),
)  # fmt: skip


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory):
    directory = tmp_path_factory.mktemp("refusals")
    config = write_config(directory)
    server = AgoraProcess(
        "--db", str(directory / "agora.db"), "--toolsets", ",".join(TOOLSETS),
        "--config", str(config),
    )  # fmt: skip
    server.start()
    yield server
    server.assert_clean_exit(server.stop())


def _check(schema: dict[str, Any], result: Any, what: str) -> bool:
    """Whether ``result`` was refused; its structuredContent (if any) must fit ``schema``."""
    if result.structured_content is not None:
        validator = jsonschema.validators.validator_for(schema)(schema)
        problems = [e.message for e in validator.iter_errors(result.structured_content)]
        assert not problems, (what, problems[:3], result.structured_content)
    return bool(result.is_error)


@pytest.mark.parametrize("toolset", TOOLSETS)
async def test_every_refusal_fits_the_schema_its_tool_listed(everything, toolset):
    calls = []
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(
            f"{everything.url}/mcp/{toolset}", read_timeout_seconds=TIMEOUT
        ) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for name, tool in listed.items():
                if "wait" in name or tool.output_schema is None:
                    continue  # (a wait with no arguments would park until its timeout)
                calls += [(name, {}), (name, {"no_such_field": 1})]
            if toolset == "router":
                calls += list(ROUTER_STATE_REFUSALS)
            refused = 0
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                refused += _check(listed[name].output_schema, result, f"{name} {arguments}")
    assert refused >= len(calls) // 2  # the calls were refused, not served
