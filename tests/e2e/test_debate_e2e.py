"""The debate toolset end to end: five agents, each with its own bearer token, over WebSocket
against a real ``agora serve``, running one topic from INIT to ARCHIVED.

CONDUCTOR, two participants, HUMAN and an executor: a Q/A block that holds RESOLVED back,
an addressed message parked in ``debate_signal_wait``, the HUMAN's inbox resource
subscription, a DECISION to the executor, a rotation with copy mode, a compaction and a
reader resuming from it, then the close. Every structured result is checked against the
outputSchema that tools/list advertises.
"""

from __future__ import annotations

import json
from typing import Any

import trio
from e2e_config import roster_toml
from e2e_http import http
from e2e_mcp import check_structured

from agora.client import WsClient, connect

TIMEOUT = 60
AGENTS = {
    "cond": ("conductor-token", '["conductor"]'),
    "ana": ("ana-token", "[]"),
    "ben": ("ben-token", "[]"),
    "hugo": ("hugo-token", "[]"),
    "exe": ("exe-token", "[]"),
}


def principals() -> str:
    return roster_toml(AGENTS, projects='["ops"]')


class Agent:
    """One agent's connection, its tool schemas and its session."""

    def __init__(self, client: WsClient, tools: dict[str, Any]) -> None:
        self.client, self.tools, self.session = client, tools, ""

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        check_structured(self.tools[tool], result)
        out: dict[str, Any] = result["structuredContent"]
        return out

    async def refused(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert result.get("isError"), result
        body: dict[str, Any] = result["structuredContent"]
        return body

    async def _use(self, tool: str, refused: bool, **args: Any) -> dict[str, Any]:
        return await (self.refused if refused else self.call)(tool, **args)

    async def post(
        self,
        topic: str,
        role: str,
        body: str,
        *,
        to: str | None = None,
        priority: str = "M",
        kind: str = "STATUS",
        refused: bool = False,
        **args: Any,
    ) -> dict[str, Any]:
        """debate_post in ``role``; with ``to``, debate_post_with_recipients addressed to it."""
        tool = "debate_post"
        if to is not None:
            tool, args["addressed_to_csv"] = "debate_post_with_recipients", to
        return await self._use(
            tool,
            refused,
            topic_id=topic,
            role=role,
            priority=priority,
            kind=kind,
            body=body,
            **args,
        )

    async def check(self, topic: str, role: str, *, refused: bool = False) -> dict[str, Any]:
        """debate_signal_check of ``role`` through this agent's session."""
        return await self._use(
            "debate_signal_check", refused, topic_id=topic, role=role, session_id=self.session
        )

    async def advance(self, topic: str, role: str, msg_id: str) -> dict[str, Any]:
        """debate_signal_advance of ``role`` through this agent's session up to ``msg_id``."""
        return await self.call(
            "debate_signal_advance",
            topic_id=topic,
            role=role,
            session_id=self.session,
            last_processed_msg_id=msg_id,
        )


async def test_five_agents_run_a_topic_from_init_to_archived(start_agora):
    server = start_agora(principals(), "--toolsets", "debate")
    url = f"ws://127.0.0.1:{server.port}/mcp/debate"
    with trio.fail_after(TIMEOUT):
        async with (
            connect(url, token=AGENTS["cond"][0]) as c_cond,
            connect(url, token=AGENTS["ana"][0]) as c_ana,
            connect(url, token=AGENTS["ben"][0]) as c_ben,
            connect(url, token=AGENTS["hugo"][0]) as c_hugo,
            connect(url, token=AGENTS["exe"][0]) as c_exe,
        ):
            tools = {t["name"]: t for t in await c_cond.list_tools()}
            cond, ana, ben, hugo, exe = (
                Agent(c, tools) for c in (c_cond, c_ana, c_ben, c_hugo, c_exe)
            )
            await run_topic(server.port, cond, ana, ben, hugo, exe)


async def in_flight(port: int) -> None:
    """Until the server has a call in flight (the CRITIC's wait)."""
    while (await http(port, "GET", "/healthz")).json()["in_flight"] < 1:
        await trio.lowlevel.checkpoint()


async def run_topic(
    port: int, cond: Agent, ana: Agent, ben: Agent, hugo: Agent, exe: Agent
) -> None:
    for agent in (cond, ana, ben, hugo, exe):
        agent.session = (await agent.call("debate_session_open", runtime="e2e"))["session_id"]
    roles = [{"role": "CONDUCTOR", "session_id": cond.session}] + [
        {"role": r, "session_id": None} for r in ("ANALYST", "CRITIC", "HUMAN", "EXECUTOR_1")
    ]
    created = await cond.call(
        "debate_init",
        title="Musl-first packaging",
        created_by_role="CONDUCTOR",
        roles_json=json.dumps(roles),
        metadata_json='{"priority_lane": "P2", "priority_reason": "release blocker"}',
    )
    topic = created["topic_id"]
    assert created["state"] == "INIT"
    assert created["project"] == "ops"
    for agent, role in ((ana, "ANALYST"), (ben, "CRITIC"), (hugo, "HUMAN"), (exe, "EXECUTOR_1")):
        await agent.call("debate_bind_role", topic_id=topic, role=role, session_id=agent.session)
    # A role someone holds cannot be taken over, and the denial reveals nothing.
    taken = await ben.post(topic, "ANALYST", "as someone else", refused=True)
    unknown = await ben.post("00000000-0000-4000-8000-000000000000", "CRITIC", "x", refused=True)
    assert taken == unknown
    await cond.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")

    # HUMAN subscribes to its inbox; the CRITIC parks in signal_wait before the Q exists.
    inbox_uri = f"debate://inbox/{hugo.session}"
    await hugo.client.request("resources/subscribe", {"uri": inbox_uri})
    async with trio.open_nursery() as nursery:
        waited: dict[str, Any] = {}

        async def wait_for_question() -> None:
            waited.update(
                await ben.call(
                    "debate_signal_wait",
                    topic_id=topic,
                    role="CRITIC",
                    session_id=ben.session,
                    timeout_ms=30_000,
                )
            )

        nursery.start_soon(wait_for_question)
        await in_flight(port)  # the wait is running before the question exists
        question = await ana.post(
            topic,
            "ANALYST",
            "Is musl's DNS resolver good enough?",
            to="CRITIC",
            priority="H",
            kind="Q",
        )
    assert [m["msg_id"] for m in waited["pending"]] == [question["msg_id"]]

    blocked = await cond.refused(
        "debate_state", topic_id=topic, role="CONDUCTOR", new_state="RESOLVED"
    )
    assert blocked["error"] == "open_questions"
    assert [q["msg_id"] for q in blocked["blocking_questions"]] == [question["msg_id"]]
    answer = await ben.post(
        topic,
        "CRITIC",
        "Yes, with the TCP fallback.",
        to="ANALYST",
        priority="H",
        kind="A",
        reply_to=question["msg_id"],
    )
    await ben.advance(topic, "CRITIC", question["msg_id"])

    # An escalation reaches the HUMAN: pushed notification, then the inbox.
    await ana.call("debate_escalate", topic_id=topic, role="ANALYST", reason="needs sign-off")
    note = await hugo.client.next_notification("notifications/resources/updated")
    assert note["params"]["uri"] == inbox_uri
    human = await hugo.check(topic, "HUMAN")
    assert [m["body"] for m in human["pending"]] == ["[ESCALATE:needs sign-off] target=HUMAN"]

    # The executor gets a one-shot DECISION and answers it.
    decision = await cond.post(
        topic,
        "CONDUCTOR",
        "Build the musl image.",
        to="EXECUTOR_1",
        priority="H",
        kind="DECISION",
        standing=False,
        reply_to=question["msg_id"],
    )
    work = await exe.check(topic, "EXECUTOR_1")
    assert [m["msg_id"] for m in work["pending"]] == [decision["msg_id"]]
    await exe.post(topic, "EXECUTOR_1", "image built", reply_to=decision["msg_id"])
    await exe.advance(topic, "EXECUTOR_1", decision["msg_id"])

    # The ANALYST rotates to a fresh session, carrying its cursor (copy mode).
    await ana.advance(topic, "ANALYST", answer["msg_id"])
    later = await ben.post(topic, "CRITIC", "after the handoff", to="ANALYST")
    fresh = (await ana.call("debate_session_open"))["session_id"]
    rotated = await ana.call(
        "debate_rotate_session",
        topic_id=topic,
        role="ANALYST",
        old_session_id=ana.session,
        new_session_id=fresh,
        cursor_mode="copy",
    )
    assert rotated["cursor_source"] == "primary"
    old = await ana.check(topic, "ANALYST", refused=True)
    assert old["error"] == "unknown_topic"
    ana.session = fresh
    carried = await ana.check(topic, "ANALYST")
    assert [m["msg_id"] for m in carried["pending"]] == [later["msg_id"]]

    # A compaction, and a reader resuming from it.
    snapshot = await cond.call(
        "debate_compact",
        topic_id=topic,
        role="CONDUCTOR",
        body="OBSERVE: Q answered. ORIENT: musl is fine. DECIDE: ship. ACT: close the topic.",
    )
    tail = await ana.post(topic, "ANALYST", "agreed", priority="L")
    resumed = await hugo.call(
        "debate_read", topic_id=topic, role="HUMAN", since_latest_compaction=True
    )
    assert resumed["bootstrap_compaction_msg_id"] == snapshot["msg_id"]
    assert [m["msg_id"] for m in resumed["messages"]] == [snapshot["msg_id"], tail["msg_id"]]
    hits = await hugo.call("debate_search", topic_id=topic, query="DNS RESOLVER")
    assert [m["msg_id"] for m in hits["messages"]] == [question["msg_id"]]

    queue = await cond.call("debate_work_queue")
    assert [i["topic_id"] for i in queue["items"]] == [topic]

    resolved = await cond.call(
        "debate_close_topic",
        topic_id=topic,
        role="CONDUCTOR",
        new_state="RESOLVED",
        reason="shipped",
    )
    assert resolved["retired_bindings"] == 5
    late = await ben.post(topic, "CRITIC", "late", refused=True)
    assert late["error"] == "topic_resolved"
    archived = await cond.call(
        "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ARCHIVED"
    )
    assert archived["old_state"] == "RESOLVED"
    final = await hugo.call("debate_read", topic_id=topic, role="HUMAN", limit=1000)
    assert final["topic_state"] == "ARCHIVED"
    kinds = [m["kind"] for m in final["messages"]]
    assert kinds.count("STATE") == 3
    listed = await cond.call("debate_list_bindings", topic_id=topic)
    assert {b["state"] for b in listed["bindings"]} == {"retired"}
    assert sum(1 for b in listed["bindings"] if b["session_id"] is not None) == 1
