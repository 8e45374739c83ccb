"""What the router endpoint lists and how it refuses bad arguments, through a real session."""

from __future__ import annotations

import copy
import logging
import re

import jsonschema
import pytest
from router_driver import CONTRACT, ctx, event_args, plan_args
from router_names import MEMORY_TOOLS, SERVED

from agora.config import Config
from agora.errors import Failure
from agora.server.embed import open_server
from agora.store.neutral import POSTGRESQL, SQLITE
from agora.toolsets.router.declared import REFUSAL
from agora.toolsets.router.described import ADDED, ARGUMENTS, MEMORY, PLANNING_CONTEXT


async def test_only_the_served_tools_are_listed_with_the_contract_schemas():
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        listed = (await client.request("tools/list", {}))["result"]["tools"]
        assert [t["name"] for t in listed] == [n for n in CONTRACT.tools if n in SERVED]
        for tool in listed:
            spec = CONTRACT.tools[tool["name"]]
            # The contract's, but for the descriptions `described` adds.
            assert _undescribed(tool["name"], tool["inputSchema"]) == spec.input_schema
            # The contract's result, or a refusal (`agora.toolsets.router.declared`).
            schema = dict(spec.output_schema or {})
            top = {"$schema": schema.pop("$schema")} if "$schema" in schema else {}
            assert tool["outputSchema"] == top | {"type": "object", "anyOf": [schema, REFUSAL]}
        reply = await client.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert "error" in reply or reply["result"].get("isError")
        bad = await client.call_tool("get_next_work", {"workflow_run_id": ""})
    assert not set(MEMORY_TOOLS) & {t["name"] for t in listed}
    assert len(listed) == len(SERVED) == 20
    assert bad["isError"] is True
    body = bad["structuredContent"]
    assert body["code"] == "invalid-arguments"
    assert body["state_changed"] is False
    assert body["issues"][0]["field"] == "context"
    assert body["issues"][0]["rule"] == "required"
    by_name = {t["name"]: t for t in listed}
    jsonschema.validate(body, by_name["get_next_work"]["outputSchema"])


def _undescribed(name, schema):
    """``schema`` (a listed inputSchema of tool ``name``) without the descriptions that
    `agora.toolsets.router.described` adds."""
    schema = copy.deepcopy(schema)
    properties = schema["properties"]
    for field in ARGUMENTS.get(name, {}):
        del properties[field]["description"]
    if name in MEMORY:
        for field in properties["context"]["properties"].values():
            del field["description"]
        return schema
    for path, text in (PLANNING_CONTEXT | ADDED.get(name, {})).items():
        field = schema
        for part in path.split("."):
            field = field["properties"][part]
        # The contract's words are kept, followed by the added ones.
        assert field["description"].endswith(f" {text}"), (name, path)
        field["description"] = field["description"].removesuffix(f" {text}")
    return schema


async def test_every_argument_is_described():
    # Tester finding: the Memory tools' arguments (risk_class, scope, action and 22 more)
    # had no description, only their values, where every planning tool's argument has one.
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        listed = (await client.request("tools/list", {}))["result"]["tools"]
    bare = [
        f"{tool['name']}.{name}"
        for tool in listed
        for name, schema in tool["inputSchema"]["properties"].items()
        if not schema.get("description")
    ]
    bare += [
        f"{tool['name']}.context.{name}"
        for tool in listed
        for name, schema in tool["inputSchema"]["properties"]["context"]["properties"].items()
        if not schema.get("description")
    ]
    assert bare == []
    for tool, arguments in ARGUMENTS.items():  # each fills a bare one, none replaces the contract's
        for name in arguments:
            assert "description" not in CONTRACT.tools[tool].input_schema["properties"][name]


async def test_every_tool_is_closed_world_and_only_the_purge_is_destructive():
    # The contract leaves both hints out but on the purge, and MCP's defaults for a missing
    # hint are destructive and open-world: every write looked like a deletion to a client.
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        listed = (await client.request("tools/list", {}))["result"]["tools"]
    for tool in listed:
        hints = tool["annotations"]
        assert hints["openWorldHint"] is False, tool["name"]
        assert hints["destructiveHint"] is (tool["name"] == "purge_workflow_memory")
        own = CONTRACT.tools[tool["name"]].annotations
        assert {k: hints[k] for k in own} == dict(own)  # the contract's hints are kept


def internal_error(answer: dict, log: str) -> dict:
    """The checked body of a sanitized internal error; its id names a server log line."""
    assert answer["isError"] is True
    body = answer["structuredContent"]
    assert set(body) == {"ok", "code", "message", "retryable", "correlation_id", "state_changed"}
    assert body["ok"] is False
    assert body["code"] == "internal-error"
    assert body["state_changed"] is False
    assert re.fullmatch(r"corr-[0-9a-f]{16}", body["correlation_id"])
    assert body["correlation_id"] in answer["content"][0]["text"]
    assert body["correlation_id"] in log
    assert "refused by the test" not in body["message"] + answer["content"][0]["text"]
    return body


#: A trigger that refuses every router event, in each engine's dialect.
REFUSE_EVENTS = {
    SQLITE: [
        "CREATE TRIGGER refuse_events BEFORE INSERT ON router_events"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    ],
    POSTGRESQL: [
        "CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
        "CREATE TRIGGER refuse_events BEFORE INSERT ON router_events"
        " FOR EACH ROW EXECUTE FUNCTION refuse_events()",
    ],
}


async def test_a_failed_commit_answers_the_sanitized_internal_error(tmp_path, caplog):
    # A trigger makes the store refuse the event's commit: the router's shape_failure hook
    # answers its internal-error refusal, with the id of the server's log line, not
    # retryable (the same call would be refused the same way).
    config = Config(port=0, db=str(tmp_path / "fail.db"), toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        plan = await client.call_tool("plan_work", plan_args("1. design\n2. build", idem="p"))
        run = plan["structuredContent"]["workflow_run_id"]
        await srv.runtime.write([(sql, ()) for sql in REFUSE_EVENTS[srv.runtime.store.dialect]])
        with caplog.at_level(logging.WARNING):
            late = await client.call_tool("record_work_event", event_args(run, "plan", {"n": 2}, 1))
        after = await client.call_tool("get_next_work", {"context": ctx(), "workflow_run_id": run})
    body = internal_error(late, caplog.text)
    assert body["retryable"] is False  # the trigger refuses every retry alike: a bug
    assert after["structuredContent"]["work_item"]["status"] == "ready"  # nothing was saved


async def test_a_run_that_cannot_be_loaded_answers_the_sanitized_internal_error(tmp_path, caplog):
    # The run's rows cannot be read at all (a table it reads is gone): the actor's load fails.
    db = tmp_path / "load.db"
    config = Config(port=0, db=str(db), toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        plan = await client.call_tool("plan_work", plan_args("1. design\n2. build", idem="p"))
        run = plan["structuredContent"]["workflow_run_id"]
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await srv.runtime.write([("DROP TABLE router_gates", ())])
        await client.initialize()
        with caplog.at_level(logging.WARNING):
            first = await client.call_tool(
                "get_next_work", {"context": ctx(), "workflow_run_id": run}
            )
            second = await client.call_tool("record_work_event", event_args(run, "plan", {}, 1))
    one, two = internal_error(first, caplog.text), internal_error(second, caplog.text)
    assert one["correlation_id"] != two["correlation_id"]
    assert one["message"] == two["message"]
    assert one["retryable"] is two["retryable"] is False  # the table stays gone


@pytest.mark.parametrize("kind", ["internal", "stopped", "store", "unexpected"])
def test_every_failure_kind_is_shaped_within_the_declared_schema(kind):
    from agora.toolsets.router import toolset

    served = toolset()
    assert served.shape_failure is not None
    assert served.failure_schema is not None
    retryable = kind != "unexpected"
    failure = Failure(kind, "internal error in router-run; detail", retryable,
                      "corr-0123456789abcdef", "get_next_work")  # fmt: skip
    body = served.shape_failure(failure)
    jsonschema.validate(body, served.failure_schema)
    assert body["retryable"] is retryable
    assert body["correlation_id"] == failure.correlation_id
    assert "router-run" not in body["message"]  # a fixed text, never the core's detail


async def test_a_memory_context_refusal_says_its_rule_in_words():
    # It gave only the regex, which also allows more characters (160) than maxLength (128).
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        context = {**ctx(), "session_id": "has space"}
        bad = await client.call_tool("get_memory_status",
                                     {"context": context, "workspace_root": None})  # fmt: skip
    body = bad["structuredContent"]
    rule = (
        "must be letters, digits and . _ : - only (no spaces), starting with a letter or digit,"
        " at most 128 characters, as the Memory tools' context is"
    )
    assert body["message"] == f"argument 'context.session_id': {rule}"
    assert body["issues"] == [{"field": "context.session_id", "rule": "pattern", "message": rule}]
