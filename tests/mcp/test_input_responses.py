"""At 2026-07-28 the client's answers come back in ``inputResponses``, and are checked before a
handler reads them (the spec's SHOULD: a JSON-RPC error for what is not a valid InputResponses
object): an answer that is not the asked method's result, or an ``inputResponses`` that is no
object, is refused with -32602 naming what is wrong, and the call changes nothing.

Shown with the conformance fixtures (sampling, elicitation) and the router's ``roots/list``,
whose bad answers once read as "no answer" or failed inside it (a TypeError).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp.asks import answer_problem
from agora.mcp.session import META_CAPABILITIES, META_VERSION
from agora.server.embed import open_server

FIXTURES = Config(port=0, db=":memory:", conformance=True, toolsets=["conformance"])
CAPS = {"sampling": {}, "elicitation": {}, "roots": {}}
META = {META_VERSION: "2026-07-28", META_CAPABILITIES: CAPS}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}
SAMPLE = ("test_sampling", {"prompt": "question?"})
ELICIT = ("test_elicitation", {"message": "who?"})


async def _call(config: Config, name: str, args: dict[str, Any], answers: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": args, "_meta": META, "inputResponses": answers}
    async with open_server(config, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            return await client.request("tools/call", params)


@pytest.mark.parametrize(
    ("tool", "answers", "wrong"),
    [
        pytest.param(SAMPLE, {"sampling/createMessage": "garbage"}, "object", id="sample-str"),
        pytest.param(
            SAMPLE, {"sampling/createMessage": SAMPLED | {"role": "x"}}, ".role", id="bad-role"
        ),
        pytest.param(
            SAMPLE, {"sampling/createMessage": SAMPLED | {"content": 3}}, ".content", id="content"
        ),
        pytest.param(
            SAMPLE, {"sampling/createMessage": SAMPLED | {"model": None}}, ".model", id="model"
        ),
        pytest.param(
            ELICIT,
            {"elicitation/create": {"action": "bogus", "content": {"x": [1]}}},
            ".action",
            id="bogus-action",
        ),
        pytest.param(
            ELICIT,
            {"elicitation/create": {"action": "accept", "content": {"x": [1]}}},
            ".content['x']",
            id="content-value",
        ),
        pytest.param(
            ELICIT,
            {"elicitation/create": {"action": "accept", "content": []}},
            ".content",
            id="content-list",
        ),
        pytest.param(SAMPLE, [1, 2], "inputResponses must be an object", id="not-an-object"),
        pytest.param(SAMPLE, "x", "inputResponses must be an object", id="a-string"),
    ],
)
async def test_an_answer_that_is_not_the_result_is_invalid_params(
    tool: tuple[str, dict[str, Any]], answers: Any, wrong: str
) -> None:
    reply = await _call(FIXTURES, *tool, answers)
    assert "error" in reply, reply
    assert reply["error"]["code"] == -32602
    assert wrong in reply["error"]["message"]


@pytest.mark.parametrize(
    ("tool", "answers", "text"),
    [
        pytest.param(SAMPLE, {"sampling/createMessage": SAMPLED}, "LLM response: 42", id="sample"),
        pytest.param(
            SAMPLE,
            {"sampling/createMessage": SAMPLED | {"content": [SAMPLED["content"]]}},
            "LLM response: 42",
            id="sample-blocks",
        ),
        pytest.param(
            ELICIT, {"elicitation/create": {"action": "decline"}}, "action=decline", id="decline"
        ),
        pytest.param(
            ELICIT,
            {"elicitation/create": {"action": "accept", "content": {"n": 1, "ok": True}}},
            "action=accept",
            id="accept",
        ),
        # What the server did not ask is ignored, as the spec says.
        pytest.param(
            SAMPLE,
            {"sampling/createMessage": SAMPLED, "zzz": "anything"},
            "LLM response: 42",
            id="unasked-ignored",
        ),
    ],
)
async def test_a_valid_answer_is_read(
    tool: tuple[str, dict[str, Any]], answers: Any, text: str
) -> None:
    reply = await _call(FIXTURES, *tool, answers)
    assert text in reply["result"]["content"][0]["text"], reply


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"roots": [{"uri": "file:///a", "name": "a"}]}, None),
        ({"roots": []}, None),
        ({"roots": 5}, ".roots must be a list of {uri, name?} objects"),
        ("x", " must be a ListRootsResult object ({roots: [{uri, name?}]})"),
        ({"roots": [{"name": "a"}]}, ".roots[0] must be an object with a string uri"),
        ({"roots": [{"uri": "file:///a", "name": 1}]}, ".roots[0].name must be a string"),
    ],
)
def test_roots_answers(answer: Any, problem: str | None) -> None:
    assert answer_problem("roots/list", answer) == problem


def _plan_args(root: str, idem: str) -> dict[str, Any]:
    return {
        "context": {"session_id": "s1", "actor": "agent", "runtime_policy_snapshot_id": "p1"},
        "expected_state_version": 0,
        "idempotency_key": idem,
        "correlation_id": "corr-roots",
        "objective": "Fix it",
        "goal_binding_id": None,
        "requested_work_mode": None,
        "explicit_skill_ids": [],
        "explicit_semantics": None,
        "routing_context": {"workspace_root": root, "domains": [], "tags": [],
                            "current_phase_id": None},
    }  # fmt: skip


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param({"roots/list": {"roots": 5}}, id="roots-not-a-list"),
        pytest.param({"roots/list": "x"}, id="not-an-object"),
    ],
)
async def test_the_router_refuses_a_bad_roots_answer_and_plans_nothing(tmp_path, answers):
    config = Config(port=0, db=str(tmp_path / "r.db"), toolsets=["router"])
    args = _plan_args(str(tmp_path), "plan-1")
    async with open_server(config, listen=False) as server, server.client("/mcp") as client:
        with trio.fail_after(30):
            params = {"name": "plan_work", "arguments": args, "_meta": META}
            refused = await client.request("tools/call", params | {"inputResponses": answers})
            # Another plan, expecting state version 0 still: a conflict had the first written.
            params["arguments"] = _plan_args(str(tmp_path), "plan-2")
            good = {"roots/list": {"roots": [{"uri": f"file://{tmp_path}"}]}}
            planned = await client.request("tools/call", params | {"inputResponses": good})
    assert refused["error"]["code"] == -32602, refused
    assert "inputResponses['roots/list']" in refused["error"]["message"]
    assert planned["result"].get("isError") is not True, planned
    assert planned["result"]["structuredContent"]["status"] == "planned"
