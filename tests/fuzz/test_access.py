"""Access: another principal's entity looks exactly like a missing one, for every tool.

Alice builds entities in every toolset that has owners (debate sessions and topics, chamber
attempts, router runs) and every call she makes is kept as a template. Then, for each
template that names one of her ids, Bob makes the same call twice: with Alice's ids (a
foreign entity) and with those ids changed in their last hex digits (a missing entity of the
same shape). Either Bob's foreign call succeeds (the tool does not check ownership of that
entity: a shared read) or both calls must be refused with byte-identical answers once the ids
he supplied are blanked: nothing tells Bob that Alice's entity exists (a listing that
filters by her ids answers him as for missing ones). Alice's scenario reaches 24 tools that
name an entity, 18 of them debate tools (signals, rotations, reclaims, a debate/v1 topic's
protocol state and lane) and 4 router run tools (`COMPARED`). Each template is tried
as Alice sent it and with her names in it (the router's ``context``) changed to Bob's. No
hand-written list of tools: every template Alice's scenario produces is tried.
"""

from __future__ import annotations

import json
import re
from typing import Any

import trio

from agora.config import Config
from agora.identity import Principal
from agora.server.embed import open_server
from agora.toolsets.router.progress import evidence_digest

ALICE = Principal("alice", frozenset(), frozenset({"shared"}))
BOB = Principal("bob", frozenset(), frozenset({"shared"}))
ID = re.compile(r"^(chl|run|graph|card)-[0-9a-f]{12,}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-")
LANE = '{"priority_lane": "P3", "priority_reason": "access"}'
CONTEXT = {"session_id": "alice-1", "actor": "alice", "runtime_policy_snapshot_id": "p"}


def _ids(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {i for v in value.values() for i in _ids(v)}
    if isinstance(value, list):
        return {i for v in value for i in _ids(v)}
    return {value} if isinstance(value, str) and ID.match(value) else set()


def _missing(entity_id: str) -> str:
    """The same id with its last eight hex digits changed (same pattern, no such entity)."""
    head, tail = entity_id[:-8], entity_id[-8:]
    return head + "".join("0123456789abcdef"[(int(c, 16) + 7) % 16] for c in tail)


def _swap(value: Any, swap: dict[str, str]) -> Any:
    text = json.dumps(value)
    for old, new in swap.items():
        text = text.replace(old, new)
    return json.loads(text)


def _blank(reply: dict[str, Any], ids: set[str]) -> str:
    text = json.dumps(reply, sort_keys=True)
    for entity_id in sorted(ids, key=len, reverse=True):
        text = text.replace(entity_id, "<id>")
    return text


class Recorder:
    """Alice's calls: each successful one is kept as a template."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.templates: list[tuple[str, dict[str, Any]]] = []

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.get("isError"), (tool, result)
        self.templates.append((tool, args))
        return result["structuredContent"]  # type: ignore[no-any-return]


async def _alice(rec: Recorder) -> None:
    session = (await rec.call("debate_session_open"))["session_id"]
    roster = json.dumps([{"role": "ROLE_A", "session_id": session}])
    init = await rec.call(
        "debate_init", title="t", created_by_role="ROLE_A", roles_json=roster, metadata_json=LANE
    )
    topic = init["topic_id"]
    await rec.call("debate_state", topic_id=topic, role="ROLE_A", new_state="ACTIVE")
    post = await rec.call(
        "debate_post", topic_id=topic, role="ROLE_A", priority="M", kind="STATUS", body="hi"
    )
    await rec.call("debate_read", topic_id=topic, role="ROLE_A")
    await rec.call("debate_list_bindings", topic_id=topic)
    await rec.call("debate_search", topic_id=topic, query="hi")
    await rec.call("debate_signal_check", session_id=session, role="ROLE_A", topic_id=topic)
    await rec.call(
        "debate_advance_watermark", topic_id=topic, role="ROLE_A",
        processed_up_to_msg_id=post["msg_id"],
    )  # fmt: skip
    await _alice_debate_more(rec, topic, session)
    entry = {"product": "alice-agent", "host": "h", "provider_claim": "p", "model_claim": "m"}
    attempt = await rec.call(
        "enter_open_challenge", **entry, suite="chambre-chrono-v0", seed="alice"
    )
    handle = attempt["attempt_handle"]
    await rec.call("observe_chamber", challenge_handle=handle, object=attempt["objects"][0])
    await rec.call("chamber_action", challenge_handle=handle, op="look", expected_action_index=0)
    plan = await rec.call(
        "plan_work", context=CONTEXT, expected_state_version=0, idempotency_key="k",
        correlation_id="c", objective="1. a\n2. b", goal_binding_id=None,
        requested_work_mode=None, explicit_skill_ids=[], explicit_semantics=None,
    )  # fmt: skip
    run = {"workflow_run_id": plan["workflow_run_id"]}
    work = await rec.call("get_next_work", context=CONTEXT, **run)
    await rec.call("get_router_status", context=CONTEXT, goal_binding_id=None, **run)
    phase = work["work_item"]["phase_id"]
    event = await rec.call(
        "record_work_event", context=CONTEXT, **run, phase_id=phase,
        observation={"check_id": "plan-ready", "outcome": "passed"},
        activation_receipt_ref=None, expected_state_version=1, idempotency_key="e",
        correlation_id="e",
    )  # fmt: skip
    refs = event["event_ids"]
    await rec.call(
        "evaluate_gate", context=CONTEXT, **run, phase_id=phase, evidence_refs=refs,
        expected_evidence_digest=evidence_digest(refs), expected_plan_revision=1,
        expected_state_version=event["resulting_state_version"], idempotency_key="g",
        correlation_id="g",
    )  # fmt: skip


async def _alice_debate_more(rec: Recorder, topic: str, session: str) -> None:
    """The debate tools that name a topic, a session or a message beyond the first ones."""
    other = (await rec.call("debate_session_open"))["session_id"]
    roster = json.dumps(
        [{"role": "ROLE_A", "session_id": session}, {"role": "ROLE_B", "session_id": other}]
    )
    init = await rec.call(
        "debate_init", title="two", created_by_role="ROLE_A", roles_json=roster,
        metadata_json=LANE,
    )  # fmt: skip
    topic = init["topic_id"]
    await rec.call("debate_state", topic_id=topic, role="ROLE_A", new_state="ACTIVE")
    sent = await rec.call(
        "debate_post_with_recipients", topic_id=topic, role="ROLE_A", priority="M",
        kind="STATUS", body="to b", addressed_to_csv="ROLE_B",
    )  # fmt: skip
    inbox = {"session_id": other, "role": "ROLE_B", "topic_id": topic}
    await rec.call("debate_signal_wait", **inbox, timeout_ms=1000)
    await rec.call("debate_signal_advance", **inbox, last_processed_msg_id=sent["msg_id"])
    third = (await rec.call("debate_session_open"))["session_id"]
    await rec.call(
        "debate_rotate_session", topic_id=topic, role="ROLE_B", old_session_id=other,
        new_session_id=third, cursor_mode="copy",
    )  # fmt: skip
    await _alice_v1(rec)
    cutoff = "2020-01-01T00:00Z"
    await rec.call("debate_message_claim_reclaim", topic_id=topic, older_than_ts=cutoff)
    await rec.call("debate_worker_reclaim", topic_id=topic, older_than_ts=cutoff)
    await rec.call("debate_work_queue", topics_csv=topic)
    await rec.call("debate_escalate", topic_id=topic, role="ROLE_A", reason="needs a human")


async def _alice_v1(rec: Recorder) -> None:
    """A debate/v1 topic with every seat Alice's: its protocol state."""
    seats = ("CONDUCTOR", "PRO", "CON", "JUDGE", "HUMAN")
    sessions = {role: (await rec.call("debate_session_open"))["session_id"] for role in seats}
    roster = [{"role": r, "session_id": None if r == "HUMAN" else s} for r, s in sessions.items()]
    init = await rec.call(
        "debate_init", title="v1", created_by_role="CONDUCTOR", roles_json=json.dumps(roster),
        metadata_json=LANE, protocol_version="debate/v1", blind_roles_csv="PRO,CON",
    )  # fmt: skip
    topic = init["topic_id"]
    await rec.call("debate_bind_role", topic_id=topic, role="HUMAN", session_id=sessions["HUMAN"])
    await rec.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    await rec.call("debate_protocol_state", topic_id=topic)
    await rec.call("debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="p1", reason="r")


async def _compare(
    bob: Any, tool: str, args: dict[str, Any], checked: list[str], shared: list[str]
) -> None:
    ids = _ids(args)
    if not ids:
        return
    foreign = await bob.request("tools/call", {"name": tool, "arguments": args})
    swap = {i: _missing(i) for i in ids}
    missing = await bob.request("tools/call", {"name": tool, "arguments": _swap(args, swap)})
    foreign.pop("id"), missing.pop("id")
    answered = "result" in foreign and not foreign["result"].get("isError")
    if answered and _blank(foreign, ids) != _blank(missing, set(swap.values())):
        shared.append(tool)  # answered about Alice's entity: a shared read
        return
    assert _blank(foreign, ids) == _blank(missing, set(swap.values())), (
        f"{tool}: Bob can tell Alice's entity from a missing one:\n"
        f"foreign: {foreign}\nmissing: {missing}"
    )
    checked.append(tool)


async def test_a_foreign_entity_answers_like_a_missing_one(tmp_path):
    config = Config(db=str(tmp_path / "access.db"))
    checked: list[str] = []
    shared: list[str] = []
    with trio.fail_after(60):
        async with open_server(config, listen=False) as server:
            async with server.client(principal=ALICE) as alice:
                await alice.initialize()
                rec = Recorder(alice)
                await _alice(rec)
            async with server.client(principal=BOB) as bob:
                await bob.initialize()
                for tool, args in rec.templates:
                    for bob_args in (args, _swap(args, {'"alice': '"bob'})):
                        await _compare(bob, tool, bob_args, checked, shared)
    # Router runs belong to their principal: Bob naming Alice's context.session_id reaches
    # no run of hers ("context fields are correlation, not authority").
    assert shared == [], shared
    assert set(checked) >= COMPARED, sorted(COMPARED - set(checked))


#: The tools whose foreign and missing answers Bob must find identical (each names an id).
COMPARED = {
    "chamber_action", "observe_chamber",
    "get_next_work", "get_router_status", "record_work_event", "evaluate_gate",
    "debate_advance_watermark", "debate_bind_role", "debate_escalate", "debate_list_bindings",
    "debate_message_claim_reclaim", "debate_post", "debate_post_with_recipients",
    "debate_protocol_state", "debate_read", "debate_rotate_session", "debate_search",
    "debate_set_lane", "debate_signal_advance", "debate_signal_check", "debate_signal_wait",
    "debate_state", "debate_work_queue", "debate_worker_reclaim",
}  # fmt: skip
