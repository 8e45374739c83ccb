"""debate_state / debate_close_topic, debate_compact, debate_escalate, debate_set_lane,
debate_reconcile_project and debate_message_claim_reclaim."""

from __future__ import annotations

import pytest
from debate_support import ALICE, BOB, CONDUCTOR, OUTSIDER, STAR, legacy_topic

from agora.toolsets.debate import sql
from agora.toolsets.debate.rules import TRANSITIONS, DebateError, check_transition


@pytest.fixture
async def room(desk):
    a, b, h = await desk.session(ALICE), await desk.session(BOB), await desk.session(ALICE)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b), "HUMAN": h})
    return {"topic": topic, "a": a, "b": b, "h": h}


async def move(desk, room, state, who=ALICE, tool="debate_state", *, refused=False, **args):
    """Move the room's topic to ``state`` as ``who`` in the CONDUCTOR role."""
    use = desk.refused if refused else desk.call
    return await use(who, tool, topic_id=room["topic"], role="CONDUCTOR", new_state=state, **args)


async def ask(desk, room):
    return await desk.post(BOB, room["topic"], "ADVOCATE", "why?", priority="H", kind="Q")


async def bindings(desk, room):
    return {
        (b.role, b.generation): b.state
        for b in await desk.runtime.read(lambda c: sql.bindings(c, room["topic"]))
    }


async def test_forward_moves_only(desk, room):
    for state in ("INIT", "ACTIVE", "ARCHIVED"):
        body = await move(desk, room, state, refused=True)
        assert body["error"] == "illegal_transition"


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("INIT", "RESOLVED", "skips ACTIVE"),
        ("INIT", "ARCHIVED", "skips ACTIVE and RESOLVED"),
        ("ACTIVE", "ARCHIVED", "skips RESOLVED"),
        ("ACTIVE", "ACTIVE", "already ACTIVE"),
        ("ACTIVE", "INIT", "backward"),
        ("RESOLVED", "INIT", "backward"),
        ("ARCHIVED", "ACTIVE", "ARCHIVED is the last state"),
        ("ARCHIVED", "ARCHIVED", "already ARCHIVED"),
    ],
)
def test_a_refused_move_says_what_is_wrong_with_it_and_the_move_allowed(old, new, says):
    with pytest.raises(DebateError) as info:
        check_transition(old, new)
    body = info.value.body
    message = body["message"]
    assert "not a forward" not in message  # a skip is forward: what is wrong is said instead
    assert says in message, message
    allowed = TRANSITIONS.get(old)
    assert body["allowed"] == ([allowed] if allowed else [])
    if allowed:
        assert f"{old} -> {allowed}" in message, message


async def test_init_to_resolved_is_refused_as_a_skip(desk):
    a = await desk.session(ALICE)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a}, state="INIT")
    body = await desk.refused(
        ALICE, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="RESOLVED"
    )
    assert body["error"] == "illegal_transition"
    assert body["message"] == (
        "INIT -> RESOLVED skips ACTIVE: the lifecycle moves one state at a time "
        "(INIT -> ACTIVE -> RESOLVED -> ARCHIVED), so the only move from INIT is INIT -> ACTIVE"
    )
    assert body["allowed"] == ["ACTIVE"]


async def test_resolved_is_blocked_by_open_questions_with_the_list(desk, room):
    q = await ask(desk, room)
    body = await move(desk, room, "RESOLVED", refused=True)
    assert body["error"] == "open_questions"
    # The contract: "When the Q/A gate blocks, old and new states equal the current state";
    # the move that was asked for is requested_state.
    assert body["old_state"] == body["new_state"] == "ACTIVE"
    assert body["requested_state"] == "RESOLVED"
    assert "ACTIVE -> RESOLVED is blocked" in body["message"]
    assert [b["msg_id"] for b in body["blocking_questions"]] == [q["msg_id"]]
    assert (
        await desk.call(
            BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE", kind_filter_csv="STATE"
        )
    )["count"] == 1


async def test_deferred_reply_counts_as_resolution(desk, room):
    q = await ask(desk, room)
    await desk.post(
        ALICE, room["topic"], "CONDUCTOR", "[DEFERRED: next sprint]", reply_to=q["msg_id"]
    )
    out = await move(desk, room, "RESOLVED", reason="done")
    assert out["new_state"] == "RESOLVED"
    assert out["body"] == "RESOLVED [reason: done]"


async def test_resolved_retires_active_bindings_archived_also_diagnostic(desk, room):
    diag = await desk.session(BOB)
    await desk.bind(BOB, room["topic"], "ADVOCATE", diag, state="diagnostic")
    out = await move(desk, room, "RESOLVED")
    assert out["retired_bindings"] == 3
    assert out["transition_msg_id"]
    states = await bindings(desk, room)
    assert states[("ADVOCATE", 2)] == "diagnostic"
    body = await desk.post(BOB, room["topic"], "ADVOCATE", "late", refused=True)
    assert body["error"] == "topic_resolved"
    body = await desk.post(ALICE, room["topic"], "CONDUCTOR", "late", refused=True)
    assert body["error"] == "topic_resolved"
    out = await move(desk, room, "ARCHIVED", tool="debate_close_topic")
    assert out["old_state"] == "RESOLVED"
    assert out["retired_bindings"] == 1
    assert set((await bindings(desk, room)).values()) == {"retired"}
    page = await desk.call(BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE")
    assert page["topic_state"] == "ARCHIVED"
    for who, role in ((BOB, "ADVOCATE"), (ALICE, "CONDUCTOR")):
        body = await desk.post(who, room["topic"], role, "ARCHIVED", kind="STATE", refused=True)
        assert body["error"] == "topic_archived"


async def test_a_retired_participant_hears_why_its_inbox_is_closed(desk, room):
    await move(desk, room, "RESOLVED")
    for state in ("RESOLVED", "ARCHIVED"):
        if state == "ARCHIVED":
            await move(desk, room, "ARCHIVED", tool="debate_close_topic")
        for tool in ("debate_signal_check", "debate_signal_wait"):
            extra = {"timeout_ms": 1000} if tool == "debate_signal_wait" else {}
            args = {"topic_id": room["topic"], "role": "ADVOCATE", "session_id": room["b"]}
            body = await desk.refused(BOB, tool, **args, **extra)
            assert body["error"] == f"topic_{state.lower()}", body
            assert "retired" in body["message"]
            # Who never held that binding still gets the uniform denial.
            other = await desk.session(ALICE)
            body = await desk.refused(ALICE, tool, **{**args, "session_id": other}, **extra)
            assert body["error"] == "unknown_topic"
            body = await desk.refused(OUTSIDER, tool, **args, **extra)
            assert body["error"] == "unknown_topic"
        page = await desk.call(BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE")
        assert page["topic_state"] == state


async def test_direct_state_post_bypasses_the_qa_gate(desk, room):
    await ask(desk, room)
    out = await desk.post(
        ALICE, room["topic"], "CONDUCTOR", "RESOLVED", priority="INFO", kind="STATE"
    )
    assert out["topic_state"] == "RESOLVED"


async def test_lifecycle_authority_is_the_owned_binding_not_scope(desk, room):
    for who in (STAR, CONDUCTOR, BOB):
        body = await move(desk, room, "RESOLVED", who=who, refused=True)
        assert body["error"] == "unknown_topic"


async def test_compact_requires_ooda_and_valid_bounds(desk, room):
    body = await desk.refused(
        ALICE, "debate_compact", topic_id=room["topic"], role="CONDUCTOR", body="OBSERVE ORIENT ACT"
    )
    assert body["error"] == "compaction_sections_missing"
    body = await desk.refused(
        ALICE,
        "debate_compact",
        topic_id=room["topic"],
        role="CONDUCTOR",
        body="OBSERVE ORIENT DECIDE ACT",
        since_ts="yesterday",
    )
    assert body["error"] == "invalid_arguments"
    body = await desk.refused(
        STAR,
        "debate_compact",
        topic_id=room["topic"],
        role="CONDUCTOR",
        body="OBSERVE ORIENT DECIDE ACT",
    )
    assert body["error"] == "unknown_topic"


async def test_compact_refuses_a_window_that_runs_backwards(desk, room):
    before = await desk.call(ALICE, "debate_read", topic_id=room["topic"], role="CONDUCTOR")
    body = await desk.refused(
        ALICE,
        "debate_compact",
        topic_id=room["topic"],
        role="CONDUCTOR",
        body="OBSERVE ORIENT DECIDE ACT",
        since_ts="2026-05-01T00:00:00Z",
        until_ts="2026-01-01T00:00:00Z",
    )
    assert body["error"] == "invalid_timestamp"
    assert "runs backwards" in body["message"]
    after = await desk.call(ALICE, "debate_read", topic_id=room["topic"], role="CONDUCTOR")
    assert after["count"] == before["count"]  # nothing preserved
    # One instant is a window too, and either bound alone is none to compare.
    for bounds in (
        {"since_ts": "2026-01-01T00:00:00Z", "until_ts": "2026-01-01T00:00:00Z"},
        {"since_ts": "2026-05-01T00:00:00Z"},
        {"until_ts": "2026-01-01T00:00:00Z"},
    ):
        await desk.call(
            ALICE,
            "debate_compact",
            topic_id=room["topic"],
            role="CONDUCTOR",
            body="OBSERVE ORIENT DECIDE ACT",
            **bounds,
        )


async def test_escalate_to_a_role_nobody_holds_is_refused_unless_human(desk):
    a, b = await desk.session(ALICE), await desk.session(BOB)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)})
    before = await desk.call(ALICE, "debate_read", topic_id=topic, role="CONDUCTOR")
    body = await desk.refused(
        BOB, "debate_escalate", topic_id=topic, role="ADVOCATE", reason="x", target_role="CONDUTOR"
    )
    assert body["error"] == "unknown_recipient"
    assert "CONDUCTOR" in body["message"]  # the declared roles, to pick the right one
    after = await desk.call(ALICE, "debate_read", topic_id=topic, role="CONDUCTOR")
    assert after["count"] == before["count"]  # nothing preserved
    # Humans read the whole topic: HUMAN (the default) and OPERATOR need not be declared.
    for target in ("HUMAN", "OPERATOR"):
        out = await desk.call(
            BOB, "debate_escalate", topic_id=topic, role="ADVOCATE", reason="x", target_role=target
        )
        assert out["msg_id"]
    # A declared target's inbox receives it.
    out = await desk.call(
        BOB, "debate_escalate", topic_id=topic, role="ADVOCATE", reason="y", target_role="CONDUCTOR"
    )
    inbox = await desk.check(ALICE, topic, "CONDUCTOR", a)
    assert out["msg_id"] in {m["msg_id"] for m in inbox["pending"]}


async def test_escalate_writes_h_ping_to_the_target_role(desk, room):
    out = await desk.call(
        BOB, "debate_escalate", topic_id=room["topic"], role="ADVOCATE", reason="deadline  missed"
    )
    inbox = await desk.check(ALICE, room["topic"], "HUMAN", room["h"])
    [msg] = inbox["pending"]
    assert msg["msg_id"] == out["msg_id"]
    assert msg["priority"] == "H"
    assert msg["kind"] == "PING"
    assert msg["body"] == "[ESCALATE:deadline missed] target=HUMAN"
    body = await desk.refused(
        BOB, "debate_escalate", topic_id=room["topic"], role="ADVOCATE", reason="   "
    )
    assert body["error"] == "invalid_arguments"


async def test_set_lane_two_gates_in_order(desk, room):
    out = await desk.call(
        ALICE,
        "debate_set_lane",
        topic_id=room["topic"],
        role="CONDUCTOR",
        lane="p1",
        reason="outage",
        next_action="page ops",
    )
    assert (out["lane"], out["rank"], out["next_action"]) == ("P1", 1, "page ops")
    body = await desk.refused(
        BOB, "debate_set_lane", topic_id=room["topic"], role="ADVOCATE", lane="P1", reason="mine"
    )
    assert body["error"] == "conductor_role_required"
    for who in (BOB, STAR, CONDUCTOR):
        body = await desk.refused(
            who, "debate_set_lane", topic_id=room["topic"], role="CONDUCTOR", lane="P1", reason="x"
        )
        assert body["error"] == "unknown_topic"
    body = await desk.refused(
        ALICE, "debate_set_lane", topic_id=room["topic"], role="CONDUCTOR", lane="P8", reason="x"
    )
    assert body["error"] == "invalid_arguments"


async def test_set_lane_role_gate_says_nothing_of_the_topic(desk, room):
    """The role gate comes before the topic: a stranger naming another role gets the same
    answer for an existing topic as for one that does not exist."""
    args = {"role": "ADVOCATE", "lane": "P1", "reason": "mine"}
    missing = "7e57ab1e-0000-4000-8000-00000000000f"
    for who in (OUTSIDER, BOB):
        there = await desk.refused(who, "debate_set_lane", topic_id=room["topic"], **args)
        nowhere = await desk.refused(who, "debate_set_lane", topic_id=missing, **args)
        assert (
            there
            == nowhere
            == {
                "ok": False,
                "error": "conductor_role_required",
                "message": "role must read CONDUCTOR",
            }
        )


async def test_sentinel_topics_deny_everyone_until_reconciled_once(desk, room):
    topic = await legacy_topic(desk, "7e57ab1e-0000-4000-8000-000000000001", room["a"])
    for who in (ALICE, STAR, CONDUCTOR):
        body = await desk.refused(who, "debate_read", topic_id=topic, role="CONDUCTOR")
        assert body["error"] == "unknown_topic"
        for tool, extra in (
            ("debate_list_bindings", {}),
            ("debate_search", {"query": "x"}),
            ("debate_signal_check", {"role": "CONDUCTOR", "session_id": room["a"]}),
            ("debate_set_lane", {"role": "CONDUCTOR", "lane": "P1", "reason": "r"}),
        ):
            other = await desk.refused(who, tool, topic_id=topic, **extra)
            assert other["error"] == "unknown_topic"
        body = await desk.post(who, topic, "CONDUCTOR", refused=True)
        assert body["error"] == "unknown_topic"
    body = await desk.refused(STAR, "debate_reconcile_project", topic_id=topic, project="ops")
    assert body["error"] == "reconcile_rejected"
    bad = await desk.refused(CONDUCTOR, "debate_reconcile_project", topic_id=topic, project="*")
    assert bad == body
    unknown = await desk.refused(
        CONDUCTOR,
        "debate_reconcile_project",
        topic_id="7e57ab1e-0000-4000-8000-000000000002",
        project="ops",
    )
    assert unknown == body
    out = await desk.call(CONDUCTOR, "debate_reconcile_project", topic_id=topic, project="ops")
    assert out == {"topic_id": topic, "project": "ops", "matched": 1}
    events = await desk.runtime.read(lambda c: sql.history(c, topic))
    assert [e["event"] for e in events] == ["project_reconciled"]
    again = await desk.refused(CONDUCTOR, "debate_reconcile_project", topic_id=topic, project="ops")
    assert again == body
    page = await desk.call(ALICE, "debate_read", topic_id=topic, role="CONDUCTOR")
    assert page["topic_state"] == "ACTIVE"


async def test_claim_reclaim_sweeps_only_the_callers_stale_claims(desk, room):
    decision = await desk.post(
        ALICE,
        room["topic"],
        "CONDUCTOR",
        "do it",
        to="ADVOCATE",
        priority="H",
        kind="DECISION",
        standing=False,
    )
    await desk.check(BOB, room["topic"], "ADVOCATE", room["b"])
    desk.wall.advance(600)
    cutoff = "2026-11-30T00:09Z"
    none = await desk.call(
        ALICE, "debate_message_claim_reclaim", topic_id=room["topic"], older_than_ts=cutoff
    )
    assert none["reclaimed_count"] == 0
    out = await desk.call(
        BOB, "debate_message_claim_reclaim", topic_id=room["topic"], older_than_ts=cutoff
    )
    assert [(r["msg_id"], r["state"]) for r in out["reclaimed"]] == [
        (decision["msg_id"], "reclaimed")
    ]
    await desk.post(
        BOB, room["topic"], "ADVOCATE", "done late", kind="A", reply_to=decision["msg_id"]
    )
    claims = await desk.runtime.read(lambda c: sql.claims(c, room["topic"]))
    assert [c.state for c in claims] == ["done"]
    events = [e["event"] for e in await desk.runtime.read(lambda c: sql.history(c, room["topic"]))]
    assert events.count("claim_taken") == events.count("claim_reclaimed") == 1
    assert events.count("claim_done") == 1
    outsider = await desk.refused(
        OUTSIDER, "debate_message_claim_reclaim", topic_id=room["topic"], older_than_ts=cutoff
    )
    assert outsider["error"] == "unknown_topic"
    body = await desk.refused(
        BOB,
        "debate_message_claim_reclaim",
        topic_id=room["topic"],
        older_than_ts=cutoff,
        minimum_age_seconds=59,
    )
    assert body["error"] == "invalid_arguments"
    body = await desk.refused(
        BOB,
        "debate_message_claim_reclaim",
        topic_id=room["topic"],
        older_than_ts="2026-11-30 00:09",
    )
    assert body["error"] == "invalid_arguments"
