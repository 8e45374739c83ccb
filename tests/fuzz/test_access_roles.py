"""Access by role: callers without the conductor's standing get the contract's refusals.

On the access tests' server (`access_world`), Alice (conductor scope) seats a debate/v1
topic in ADJUDICATE where Dave holds PRO. Dave calls the conductor-only tools there
(seed 003: judge_prepare, add_role, set_lane, state and close on the CONDUCTOR role,
reconcile_project, an override on bind_role, protocol_maintain, a verdict for a seat not
his): each refuses with the seed's error in the debate's shape (``{ok, error, message}``,
mirrored as text), the same bytes as for a missing topic where the seed says "uniformly",
and nothing changes. Stella (star scope, not seated) reads the topic, as star may, and may
grow its roster, but star is no conductor: the conductor-only tools refuse her too.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import trio
from access_alice import LANE, Recorder, adjudicate
from access_world import answer, blank, missing_id, sdk_client

if TYPE_CHECKING:
    from mcp import Client

# The SDK's Streamable HTTP client leaves its SSE iterators to Trio's GC hook (see e2e).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)


#: What a debater seated on a topic gets from each conductor-only call there (seed 003):
#: (tool, arguments beyond topic_id, the error, whether a missing topic answers the same).
CONDUCTOR_ONLY = [
    # "Conductor callers only" ... "rejected uniformly": the not-found shape.
    ("debate_judge_prepare", {"left_msg_id": "<pro>", "right_msg_id": "<con>"},
     "unknown_topic", True),
    # "callers without conductor or star scope are rejected uniformly".
    ("debate_add_role", {"role": "EXECUTOR_1", "session_id": "<own>"}, "unknown_topic", True),
    # "the caller must hold the conductor role": a CONDUCTOR binding he does not own.
    ("debate_set_lane", {"role": "CONDUCTOR", "lane": "P0", "reason": "mine"},
     "unknown_topic", True),
    # "the role argument must read CONDUCTOR": the first gate, before the topic.
    ("debate_set_lane", {"role": "PRO", "lane": "P0", "reason": "mine"},
     "conductor_role_required", True),
    # Lifecycle authority is the owned binding: "Unowned roles deny as not-found".
    ("debate_state", {"role": "CONDUCTOR", "new_state": "RESOLVED"}, "unknown_topic", True),
    ("debate_close_topic", {"role": "CONDUCTOR", "new_state": "RESOLVED"}, "unknown_topic", True),
    # "Conductor callers only. All other principals ... are denied".
    ("debate_reconcile_project", {"project": "mine"}, "reconcile_rejected", True),
    # The override "cites the sanctioning CONDUCTOR decision": conductor or star only.
    ("debate_bind_role", {"role": "CONDUCTOR", "session_id": "<own>",
                          "conductor_override_msg_id": "<pro>", "replace_active": True},
     "invalid_override", False),
]  # fmt: skip


def _fill(args: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    return {k: values.get(v, v) if isinstance(v, str) else v for k, v in args.items()}


async def _seated(conductor: Recorder, debater: Recorder) -> tuple[str, str]:
    """A debate/v1 topic of Alice's in ADJUDICATE where Dave holds PRO: (topic, his session)."""
    seats = {role: await conductor.session() for role in ("CONDUCTOR", "CON", "JUDGE")}
    roster = [{"role": r, "session_id": seats.get(r)} for r in ("CONDUCTOR", "PRO", "CON", "JUDGE")]
    init = await conductor.call(
        "debate_init", title="seated", created_by_role="CONDUCTOR",
        roles_json=json.dumps(roster), metadata_json=LANE, protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )  # fmt: skip
    topic = str(init["topic_id"])
    own = await debater.session()
    await debater.call("debate_bind_role", topic_id=topic, role="PRO", session_id=own)
    await conductor.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    return topic, own


async def _refused(client: Client, tool: str, args: dict[str, Any], code: str) -> dict[str, Any]:
    """A refusal in the debate's vocabulary: exactly {ok, error, message}, mirrored as text."""
    got = await answer(client, tool, args)
    assert got.get("isError") is True, (tool, got)
    body = got["structuredContent"]
    assert (set(body), body["ok"], body["error"]) == ({"ok", "error", "message"}, False, code), (
        tool,
        got,
    )
    assert json.loads(got["content"][0]["text"]) == body
    return got


async def test_a_debater_calling_a_conductor_tool_gets_the_contracts_refusal(world):
    with trio.fail_after(120):
        async with sdk_client(world, "alice") as a, sdk_client(world, "dave") as d:
            conductor, debater = Recorder(a), Recorder(d)
            topic, own = await _seated(conductor, debater)
            pro, con = await adjudicate(conductor, topic, pro=debater)
            values = {"<pro>": pro, "<con>": con, "<own>": own}
            before = await _topic_view(a, topic)
            for tool, extra, code, uniform in CONDUCTOR_ONLY:
                args = {"topic_id": topic, **_fill(extra, values)}
                got = await _refused(d, tool, args, code)
                if uniform:  # nothing tells the debater more than a missing topic would
                    nowhere = missing_id(topic)
                    missing = await answer(d, tool, {**args, "topic_id": nowhere})
                    assert blank(got, {topic}) == blank(missing, {nowhere}), (tool, missing)
            await _refused(d, "debate_protocol_maintain", {"topic_ids_csv": topic},
                           "conductor_required")  # fmt: skip
            assert await _topic_view(a, topic) == before  # the refusals changed nothing
            prepared = await conductor.call(
                "debate_judge_prepare", topic_id=topic, left_msg_id=pro, right_msg_id=con
            )
            verdict = {
                "projection_id": prepared["projections"][0]["projection_id"],
                "verdict_json": json.dumps({"winner_msg_id": pro, "decision": "adopt"}),
            }
            # The JUDGE seat is Alice's; his own PRO seat is blind: "ineligible judges".
            await _refused(d, "debate_judge_verdict", {**verdict, "judge_role": "JUDGE"},
                           "unknown_topic")  # fmt: skip
            await _refused(d, "debate_judge_verdict", {**verdict, "judge_role": "PRO"},
                           "ineligible_judge")  # fmt: skip
            assert (await _topic_view(a, topic))["phase"] == "ADJUDICATE"
            await conductor.call(
                "debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="P1", reason="mine"
            )


async def _topic_view(client: Client, topic: str) -> dict[str, Any]:
    """The conductor's view of the topic: protocol state, bindings, transcript size."""
    state = await answer(client, "debate_protocol_state", {"topic_id": topic})
    bindings = await answer(client, "debate_list_bindings", {"topic_id": topic})
    read = await answer(client, "debate_read", {"topic_id": topic, "role": "CONDUCTOR"})
    return {
        "phase": state["structuredContent"]["phase"],
        "state": state["structuredContent"],
        "bindings": bindings["structuredContent"],
        "count": read["structuredContent"]["count"],
    }


#: What a star caller, seated nowhere, gets from the conductor-only calls (seed 003).
STAR_REFUSED = [
    # "Conductor callers only": star is not one.
    ("debate_judge_prepare", {"left_msg_id": "<pro>", "right_msg_id": "<con>"},
     "unknown_topic"),
    # "star scope alone never suffices".
    ("debate_set_lane", {"role": "CONDUCTOR", "lane": "P0", "reason": "star"}, "unknown_topic"),
    # "no star or conductor exception" on lifecycle moves.
    ("debate_state", {"role": "CONDUCTOR", "new_state": "RESOLVED"}, "unknown_topic"),
    # "All other principals, including star, are denied".
    ("debate_reconcile_project", {"project": "star"}, "reconcile_rejected"),
]  # fmt: skip


async def test_a_star_caller_reads_and_grows_the_roster_but_is_no_conductor(world):
    with trio.fail_after(120):
        async with (
            sdk_client(world, "alice") as a,
            sdk_client(world, "dave") as d,
            sdk_client(world, "stella") as s,
        ):
            conductor, star = Recorder(a), Recorder(s)
            topic, _own = await _seated(conductor, Recorder(d))
            pro, con = await adjudicate(conductor, topic, pro=Recorder(d))
            values = {"<pro>": pro, "<con>": con}
            before = await _topic_view(a, topic)
            for tool, extra, code in STAR_REFUSED:
                args = {"topic_id": topic, **_fill(extra, values)}
                got = await _refused(s, tool, args, code)
                nowhere = missing_id(topic)
                missing = await answer(s, tool, {**args, "topic_id": nowhere})
                assert blank(got, {topic}) == blank(missing, {nowhere}), (tool, missing)
            await _refused(s, "debate_protocol_maintain", {"topic_ids_csv": topic},
                           "conductor_required")  # fmt: skip
            assert await _topic_view(a, topic) == before
            # What star may do: read any topic, and grow a roster with a session of its own.
            page = await star.call("debate_read", topic_id=topic, role="CONDUCTOR")
            assert page["count"] == before["count"]
            mine = await star.session()
            added = await star.call(
                "debate_add_role", topic_id=topic, role="OBSERVER", session_id=mine
            )
            assert (added["role"], added["added_role"]) == ("OBSERVER", True)
