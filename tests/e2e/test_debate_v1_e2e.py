"""debate/v1 end to end over WebSocket against a real ``agora serve``: six agents, each with
its own bearer token and session (CONDUCTOR, the blind roles PRO and CON, JUDGE, HUMAN,
EXECUTOR_1).

One run goes from the blind claims to STOPPED by agreeing order-swap verdicts (blind hiding
seen from the other side, a STALE_READ, a worker claim completed by its EVIDENCE, a wake dry
run); one splits the verdicts into STALEMATE and escalates to the HUMAN; one is killed with
``kill -9`` in the middle of the blind phase and resumes the exact micro-state. Every
structured result is checked against the outputSchema that tools/list advertises.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import trio
from e2e_config import roster_toml, write_config
from e2e_mcp import check_structured
from e2e_process import AgoraProcess

from agora.client import WsClient, connect

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 60
AGENTS = {
    "CONDUCTOR": ("v1-cond-token", '["conductor"]'),
    "PRO": ("v1-pro-token", "[]"),
    "CON": ("v1-con-token", "[]"),
    "JUDGE": ("v1-judge-token", "[]"),
    "HUMAN": ("v1-human-token", "[]"),
    "EXECUTOR_1": ("v1-exec-token", "[]"),
}


def principals() -> str:
    return roster_toml({role.lower(): seat for role, seat in AGENTS.items()}, projects='["ops"]')


def payload(summary: str, **extra: Any) -> str:
    return json.dumps({"summary": summary, "assumptions": [], "evidence_refs": [], **extra})


class Seat:
    """One agent: its connection, the advertised schemas, its role and session."""

    def __init__(self, role: str, client: WsClient, tools: dict[str, Any]) -> None:
        self.role, self.client, self.tools, self.session = role, client, tools, ""
        self.topic = ""

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        check_structured(self.tools[tool], result)
        assert not result.get("isError"), result
        out: dict[str, Any] = result["structuredContent"]
        return out

    async def refused(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert result.get("isError"), result
        body: dict[str, Any] = result["structuredContent"]
        return body

    def _post_args(self, kind: str, to: str | None, priority: str, **args: Any) -> tuple:
        args.setdefault("payload_json", payload(f"{self.role} {kind}"))
        tool = "debate_post"
        if to is not None:
            tool, args["addressed_to_csv"] = "debate_post_with_recipients", to
        return tool, {
            "topic_id": self.topic,
            "role": self.role,
            "priority": priority,
            "kind": kind,
            "body": f"{self.role}: {kind}",
            **args,
        }

    async def post(
        self, kind: str, *, to: str | None = None, priority: str = "M", **args: Any
    ) -> dict[str, Any]:
        tool, full = self._post_args(kind, to, priority, **args)
        return await self.call(tool, **full)

    async def post_refused(self, kind: str, **args: Any) -> dict[str, Any]:
        tool, full = self._post_args(kind, None, "M", **args)
        return await self.refused(tool, **full)

    async def state(self) -> dict[str, Any]:
        return await self.call("debate_protocol_state", topic_id=self.topic)

    async def transcript(self) -> list[str]:
        page = await self.call("debate_read", topic_id=self.topic, role=self.role)
        return [m["msg_id"] for m in page["messages"]]


async def seat_all(url: str, stack: Any) -> dict[str, Seat]:
    seats = {}
    for role, (token, _) in AGENTS.items():
        client = await stack.enter_async_context(connect(url, token=token))
        tools = {t["name"]: t for t in await client.list_tools()}
        seats[role] = Seat(role, client, tools)
        seats[role].session = (await seats[role].call("debate_session_open"))["session_id"]
    return seats


async def open_topic(seats: dict[str, Seat], **args: Any) -> str:
    cond = seats["CONDUCTOR"]
    roles = [{"role": r, "session_id": cond.session if r == "CONDUCTOR" else None} for r in AGENTS]
    created = await cond.call(
        "debate_init",
        title="Musl-first packaging",
        created_by_role="CONDUCTOR",
        roles_json=json.dumps(roles),
        metadata_json='{"priority_lane": "P2", "priority_reason": "release blocker"}',
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
        **args,
    )
    topic = created["topic_id"]
    assert created["protocol_state"]["phase"] == "BLIND_CLAIM"
    for seat in seats.values():
        seat.topic = topic
        if seat.role != "CONDUCTOR":
            await seat.call(
                "debate_bind_role", topic_id=topic, role=seat.role, session_id=seat.session
            )
    await cond.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    return topic


async def blind_claims(seats: dict[str, Seat]) -> tuple[str, str]:
    """Both blind CLAIMs, checking the barrier from every seat in between."""
    pro = (await seats["PRO"].post("CLAIM"))["msg_id"]
    for role, sees in (
        ("PRO", True),
        ("CON", False),
        ("JUDGE", False),
        ("HUMAN", False),
        ("EXECUTOR_1", False),
        ("CONDUCTOR", True),
    ):
        assert (pro in await seats[role].transcript()) is sees, role
    found = await seats["CON"].call(
        "debate_search", topic_id=seats["CON"].topic, query="PRO", viewer_role="CON"
    )
    assert found["count"] == 0
    con = await seats["CON"].post("CLAIM")
    assert con["protocol_state"]["phase"] == "DEBATE"
    for seat in seats.values():
        assert {pro, con["msg_id"]} <= set(await seat.transcript())
    return pro, con["msg_id"]


async def to_adjudicate(seats: dict[str, Seat], pro: str) -> None:
    verify = await seats["JUDGE"].post(
        "VERIFY", reply_to=pro, payload_json=payload("checked", result="verified")
    )
    assert verify["protocol_state"]["phase"] == "ADJUDICATE"


async def judge(seats: dict[str, Seat], pro: str, con: str, winners: tuple[str, str]) -> dict:
    prepared = await seats["CONDUCTOR"].call(
        "debate_judge_prepare",
        topic_id=seats["CONDUCTOR"].topic,
        left_msg_id=pro,
        right_msg_id=con,
    )
    ab, ba = prepared["projections"]
    await seats["JUDGE"].call(
        "debate_judge_verdict",
        projection_id=ab["projection_id"],
        judge_role="JUDGE",
        verdict_json=json.dumps({"winner_msg_id": winners[0], "decision": "adopt"}),
    )
    return await seats["JUDGE"].call(
        "debate_judge_verdict",
        projection_id=ba["projection_id"],
        judge_role="JUDGE",
        verdict_json=json.dumps(json.dumps({"winner_msg_id": winners[1], "decision": "adopt"})),
    )


async def test_six_agents_debate_to_stopped(start_agora):
    from contextlib import AsyncExitStack

    server = start_agora(principals(), "--toolsets", "debate")
    url = f"ws://127.0.0.1:{server.port}/mcp/debate"
    with trio.fail_after(TIMEOUT):
        async with AsyncExitStack() as stack:
            seats = await seat_all(url, stack)
            await open_topic(seats)
            pro, con = await blind_claims(seats)
            cond, pro_seat, con_seat, exe = (
                seats[r] for r in ("CONDUCTOR", "PRO", "CON", "EXECUTOR_1")
            )
            challenge = await con_seat.post(
                "CHALLENGE", to="PRO,EXECUTOR_1", priority="H", reply_to=pro
            )
            # PRO has an urgent message it has not read: its rebuttal is a stale read.
            stale = await pro_seat.post_refused("EVIDENCE", reply_to=pro)
            assert stale["error"] == "stale_read"
            inbox = await pro_seat.call(
                "debate_signal_check",
                topic_id=pro_seat.topic,
                role="PRO",
                session_id=pro_seat.session,
            )
            assert [m["msg_id"] for m in inbox["pending"]] == [challenge["msg_id"]]
            await pro_seat.call(
                "debate_signal_advance",
                topic_id=pro_seat.topic,
                role="PRO",
                session_id=pro_seat.session,
                last_processed_msg_id=challenge["msg_id"],
            )
            dry = await cond.call(
                "debate_trigger_dry_run",
                tool_response_json=json.dumps(
                    {
                        "schema_version": "debate.trigger/v1",
                        "topic_id": cond.topic,
                        "msg_id": challenge["msg_id"],
                    }
                ),
            )
            assert [t["role"] for t in dry["targets"]] == ["EXECUTOR_1"]
            taken = await exe.call(
                "debate_worker_claim",
                topic_id=exe.topic,
                role="EXECUTOR_1",
                parent_session_id=exe.session,
                trigger_msg_id=challenge["msg_id"],
            )
            assert taken["state"] == "active"
            await exe.post("EVIDENCE", reply_to=challenge["msg_id"], priority="H", to="PRO")
            again = await exe.call(
                "debate_worker_claim",
                topic_id=exe.topic,
                role="EXECUTOR_1",
                parent_session_id=exe.session,
                trigger_msg_id=challenge["msg_id"],
            )
            assert (again["state"], again["no_action"]) == ("completed", True)
            await pro_seat.call(
                "debate_signal_advance",
                topic_id=pro_seat.topic,
                role="PRO",
                session_id=pro_seat.session,
                last_processed_msg_id=(
                    await pro_seat.call(
                        "debate_signal_check",
                        topic_id=pro_seat.topic,
                        role="PRO",
                        session_id=pro_seat.session,
                    )
                )["pending"][-1]["msg_id"],
            )
            await pro_seat.post("REBUT", reply_to=challenge["msg_id"])
            await to_adjudicate(seats, pro)
            out = await judge(seats, pro, con, (pro, pro))
            assert (out["complete"], out["stable"]) == (True, True)
            assert (await seats["HUMAN"].state())["phase"] == "STOPPED"
            assert (await con_seat.post_refused("DISSENT"))["error"] == "protocol_terminal"
            closed = await cond.call(
                "debate_state", topic_id=cond.topic, role="CONDUCTOR", new_state="RESOLVED"
            )
            assert closed["new_state"] == "RESOLVED"


async def test_split_verdicts_stalemate_and_escalate_to_the_human(start_agora):
    from contextlib import AsyncExitStack

    server = start_agora(principals(), "--toolsets", "debate")
    url = f"ws://127.0.0.1:{server.port}/mcp/debate"
    with trio.fail_after(TIMEOUT):
        async with AsyncExitStack() as stack:
            seats = await seat_all(url, stack)
            await open_topic(seats, max_rounds=2)
            pro, con = await blind_claims(seats)
            await to_adjudicate(seats, pro)
            out = await judge(seats, pro, con, (pro, con))
            state = out["protocol_state"]
            assert (out["stable"], state["phase"], state["stalemate_reason"]) == (
                False,
                "STALEMATE",
                "judge_order_swap_disagreement",
            )
            await seats["CON"].post("DISSENT")
            escalated = await seats["CONDUCTOR"].post("ESCALATE", to="HUMAN", priority="H")
            assert escalated["protocol_state"]["phase"] == "ESCALATED"
            human = seats["HUMAN"]
            inbox = await human.call(
                "debate_signal_check",
                topic_id=human.topic,
                role="HUMAN",
                session_id=human.session,
            )
            assert [m["kind"] for m in inbox["pending"]] == ["ESCALATE"]


async def test_kill_9_mid_phase_resumes_the_exact_micro_state(tmp_path: Path) -> None:
    from contextlib import AsyncExitStack

    config = write_config(tmp_path, principals())
    args = ("--db", str(tmp_path / "v1.db"), "--toolsets", "debate", "--config", str(config))
    with AgoraProcess(*args) as first:
        url = first.url.replace("http", "ws") + "/mcp/debate"
        with trio.fail_after(TIMEOUT):
            async with AsyncExitStack() as stack:
                seats = await seat_all(url, stack)
                topic = await open_topic(seats)
                pro = (await seats["PRO"].post("CLAIM"))["msg_id"]
                before = await seats["CONDUCTOR"].state()
                sessions = {role: seat.session for role, seat in seats.items()}
        first.kill()  # no shutdown: only what was committed survives
    with AgoraProcess(*args) as second:
        url = second.url.replace("http", "ws") + "/mcp/debate"
        with trio.fail_after(TIMEOUT):
            async with AsyncExitStack() as stack:
                seats = {}
                for role, (token, _) in AGENTS.items():
                    client = await stack.enter_async_context(connect(url, token=token))
                    tools = {t["name"]: t for t in await client.list_tools()}
                    seats[role] = Seat(role, client, tools)
                    seats[role].session, seats[role].topic = sessions[role], topic
                assert await seats["CONDUCTOR"].state() == before
                assert pro not in await seats["CON"].transcript()
                assert pro in await seats["PRO"].transcript()
                again = await seats["PRO"].post_refused("CLAIM")
                assert again["error"] == "blind_claim_duplicate"
                con = await seats["CON"].post("CLAIM")
                state = con["protocol_state"]
                assert (state["phase"], state["transition_version"]) == (
                    "DEBATE",
                    before["transition_version"] + 1,
                )
                assert pro in await seats["CON"].transcript()
        second.assert_clean_exit(second.stop())
