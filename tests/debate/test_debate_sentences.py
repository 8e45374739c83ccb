"""Single contract sentences that the theme tests do not already pin (see CHECKLIST.md)."""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, MALLORY, OUTSIDER, STAR

from agora.toolsets.debate import sql
from agora.toolsets.debate.rules import fts_phrase, like_pattern

NOWHERE = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
async def room(desk):
    c, b, k = await desk.session(CONDUCTOR), await desk.session(BOB), await desk.session(CAROL)
    topic = await desk.topic(
        CONDUCTOR, {"CONDUCTOR": c, "ADVOCATE": (BOB, b), "CRITIC": (CAROL, k)}
    )
    return {"topic": topic, "c": c, "b": b, "k": k}


async def test_add_role_denials_are_uniform_and_shape_comes_first(desk, room):
    bob = await desk.session(BOB)
    mine = await desk.session(CONDUCTOR)
    bodies = [
        await desk.refused(
            BOB, "debate_add_role", topic_id=room["topic"], role="EXECUTOR_2", session_id=bob
        ),
        await desk.refused(
            CONDUCTOR, "debate_add_role", topic_id=NOWHERE, role="EXECUTOR_2", session_id=mine
        ),
        await desk.refused(
            CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="EXECUTOR_2", session_id=bob
        ),
    ]
    assert bodies[0] == bodies[1] == bodies[2]
    shape = await desk.refused(
        BOB, "debate_add_role", topic_id=NOWHERE, role="executor", session_id=bob
    )
    assert shape["error"] == "invalid_arguments"


async def test_add_role_on_a_role_held_elsewhere_falls_through_to_binding(desk, room):
    mine = await desk.session(CONDUCTOR)
    body = await desk.refused(
        CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="ADVOCATE", session_id=mine
    )
    assert body["error"] == "unknown_topic"  # a takeover, as debate_bind_role would say


async def test_conductor_acts_without_a_binding_only_through_the_override(desk, room):
    body = await desk.refused(
        CONDUCTOR,
        "debate_post",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="as bob",
    )
    assert body["error"] == "unknown_topic"
    decision = await desk.call(
        CONDUCTOR,
        "debate_post",
        topic_id=room["topic"],
        role="CONDUCTOR",
        priority="H",
        kind="DECISION",
        body="mediate",
    )
    out = await desk.call(
        CONDUCTOR,
        "debate_post_with_recipients",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="mediated",
        addressed_to_csv="CRITIC",
        conductor_override_msg_id=decision["msg_id"],
    )
    assert out["msg_id"]
    body = await desk.refused(
        BOB,
        "debate_post_with_recipients",
        topic_id=room["topic"],
        role="CRITIC",
        priority="M",
        kind="STATUS",
        body="x",
        addressed_to_csv="ADVOCATE",
        conductor_override_msg_id=decision["msg_id"],
    )
    assert body["error"] == "invalid_override"


async def test_completing_a_delivery_affects_only_that_recipient(desk, room):
    both = await desk.call(
        CONDUCTOR,
        "debate_post_with_recipients",
        topic_id=room["topic"],
        role="CONDUCTOR",
        priority="M",
        kind="STATUS",
        body="to both",
        addressed_to_csv="ADVOCATE,CRITIC",
    )
    await desk.call(
        BOB,
        "debate_signal_advance",
        topic_id=room["topic"],
        role="ADVOCATE",
        session_id=room["b"],
        last_processed_msg_id=both["msg_id"],
    )
    critic = await desk.call(
        CAROL, "debate_signal_check", topic_id=room["topic"], role="CRITIC", session_id=room["k"]
    )
    assert [m["msg_id"] for m in critic["pending"]] == [both["msg_id"]]


async def test_an_inactive_binding_cannot_advance_and_moves_nothing(desk, room):
    sent = await desk.call(
        CONDUCTOR,
        "debate_post_with_recipients",
        topic_id=room["topic"],
        role="CONDUCTOR",
        priority="M",
        kind="STATUS",
        body="x",
        addressed_to_csv="ADVOCATE",
    )
    fresh = await desk.session(BOB)
    await desk.call(
        BOB,
        "debate_rotate_session",
        topic_id=room["topic"],
        role="ADVOCATE",
        old_session_id=room["b"],
        new_session_id=fresh,
        cursor_mode="head",
    )
    before = await desk.runtime.read(lambda c: sql.cursors(c, room["topic"]))
    body = await desk.refused(
        BOB,
        "debate_signal_advance",
        topic_id=room["topic"],
        role="ADVOCATE",
        session_id=room["b"],
        last_processed_msg_id=sent["msg_id"],
    )
    assert body["error"] == "unknown_topic"
    assert await desk.runtime.read(lambda c: sql.cursors(c, room["topic"])) == before


async def test_rotation_takes_no_override(desk, room):
    body = await desk.refused(
        BOB,
        "debate_rotate_session",
        topic_id=room["topic"],
        role="ADVOCATE",
        old_session_id=room["b"],
        new_session_id=room["b"],
        cursor_mode="head",
        conductor_override_msg_id=NOWHERE,
    )
    assert body["error"] == "invalid_arguments"
    body = await desk.refused(
        BOB,
        "debate_rotate_session",
        topic_id=room["topic"],
        role="ADVOCATE",
        old_session_id=room["b"],
        new_session_id=room["b"],
    )
    assert body["error"] == "invalid_arguments"


async def test_search_viewer_role_never_widens_the_gate_and_errors_hold_no_content(desk, room):
    await desk.call(
        BOB,
        "debate_post",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="secret plan",
    )
    body = await desk.refused(
        MALLORY, "debate_search", topic_id=room["topic"], query="secret", viewer_role="ADVOCATE"
    )
    assert body["error"] == "unknown_topic"
    assert "secret" not in json.dumps(body)
    unknown = await desk.refused(MALLORY, "debate_search", topic_id=NOWHERE, query="secret")
    assert unknown == body


async def test_search_full_text_and_literal_paths_agree(desk, room):
    for body in ("Alpha 50% beta", "alpha_50 beta", "ALPHA 50% BETA gamma", "nothing here"):
        await desk.call(
            BOB,
            "debate_post",
            topic_id=room["topic"],
            role="ADVOCATE",
            priority="M",
            kind="STATUS",
            body=body,
        )
    for query in ("alpha 50", "50%", "beta", "a_5"):
        folded = query.casefold()

        def both(conn, folded=folded):
            pattern = like_pattern(folded)
            return (
                sql.search(conn, room["topic"], fts_phrase(folded), pattern, 50),
                sql.search(conn, room["topic"], None, pattern, 50),
            )

        full, literal = await desk.runtime.read(both)
        assert [r[0] for r in full] == [r[0] for r in literal], query


async def test_list_bindings_denies_outsiders_with_the_missing_shape(desk, room):
    outsider = await desk.refused(OUTSIDER, "debate_list_bindings", topic_id=room["topic"])
    missing = await desk.refused(BOB, "debate_list_bindings", topic_id=NOWHERE)
    assert outsider == missing
    assert missing["error"] == "unknown_topic"


async def test_check_denies_undeclared_roles_and_unknown_topics_alike(desk, room):
    undeclared = await desk.refused(
        BOB, "debate_signal_check", topic_id=room["topic"], role="JUDGE", session_id=room["b"]
    )
    unknown = await desk.refused(
        BOB, "debate_signal_check", topic_id=NOWHERE, role="ADVOCATE", session_id=room["b"]
    )
    assert undeclared == unknown


async def test_messages_are_never_removed_by_the_lifecycle(desk, room):
    await desk.call(
        BOB,
        "debate_post",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="kept",
    )
    count = "SELECT COUNT(*) FROM debate_messages"
    before = await desk.runtime.read(lambda c: c.execute(count).fetchone()[0])
    await desk.call(
        CONDUCTOR, "debate_state", topic_id=room["topic"], role="CONDUCTOR", new_state="RESOLVED"
    )
    await desk.call(
        CONDUCTOR, "debate_state", topic_id=room["topic"], role="CONDUCTOR", new_state="ARCHIVED"
    )
    after = await desk.runtime.read(lambda c: c.execute(count).fetchone()[0])
    assert after == before + 2  # the two STATE messages; nothing removed
    bindings = await desk.runtime.read(lambda c: sql.bindings(c, room["topic"]))
    assert len(bindings) == 3


async def test_set_lane_needs_a_declared_conductor_role_and_reshapes_the_queue(desk):
    a = await desk.session(ALICE)
    topic = await desk.topic(ALICE, {"LEAD": a})
    body = await desk.refused(
        ALICE, "debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="P0", reason="r"
    )
    assert body["error"] == "unknown_topic"
    star = await desk.refused(
        STAR, "debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="P0", reason="r"
    )
    assert star == body


async def test_search_finds_old_hits_beyond_the_recent_window(desk, room, monkeypatch):
    from agora.toolsets.debate.handlers import reads

    monkeypatch.setattr(reads, "SEARCH_WINDOW", 2)
    old = await desk.call(
        BOB,
        "debate_post",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="needle in the hay",
    )
    for i in range(4):
        await desk.call(
            BOB,
            "debate_post",
            topic_id=room["topic"],
            role="ADVOCATE",
            priority="M",
            kind="STATUS",
            body=f"hay {i}",
        )
    newer = await desk.call(
        BOB,
        "debate_post",
        topic_id=room["topic"],
        role="ADVOCATE",
        priority="M",
        kind="STATUS",
        body="another needle",
    )
    hits = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="needle")
    assert [m["msg_id"] for m in hits["messages"]] == [newer["msg_id"], old["msg_id"]]
    one = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="needle", limit=1)
    assert [m["msg_id"] for m in one["messages"]] == [newer["msg_id"]]
    # Nothing among the newest two: the trigram index finds the old one.
    rare = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="the HAY")
    assert [m["msg_id"] for m in rare["messages"]] == [old["msg_id"]]
