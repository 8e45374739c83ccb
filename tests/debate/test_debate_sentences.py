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
    # Uniform, yet it names the scope among the reasons: an anonymous CONDUCTOR (a server
    # without [[principals]]) learns what it lacks without learning whether the topic exists.
    assert "conductor scope" in bodies[0]["message"]
    assert "[[principals]]" in bodies[0]["message"]
    shape = await desk.refused(
        BOB, "debate_add_role", topic_id=NOWHERE, role="executor", session_id=bob
    )
    assert shape["error"] == "invalid_arguments"


async def test_add_role_on_a_role_held_elsewhere_falls_through_to_binding(desk, room):
    mine = await desk.session(CONDUCTOR)
    body = await desk.refused(
        CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="ADVOCATE", session_id=mine
    )
    assert body["error"] == "duplicate_active"  # a takeover, as debate_bind_role would say


async def test_conductor_acts_without_a_binding_only_through_the_override(desk, room):
    body = await desk.post(CONDUCTOR, room["topic"], "ADVOCATE", "as bob", refused=True)
    assert body["error"] == "unknown_topic"
    decision = await desk.post(
        CONDUCTOR, room["topic"], "CONDUCTOR", "mediate", priority="H", kind="DECISION"
    )
    out = await desk.post(
        CONDUCTOR,
        room["topic"],
        "ADVOCATE",
        "mediated",
        to="CRITIC",
        conductor_override_msg_id=decision["msg_id"],
    )
    assert out["msg_id"]
    body = await desk.post(
        BOB,
        room["topic"],
        "CRITIC",
        to="ADVOCATE",
        refused=True,
        conductor_override_msg_id=decision["msg_id"],
    )
    assert body["error"] == "invalid_override"


async def test_completing_a_delivery_affects_only_that_recipient(desk, room):
    both = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "to both", to="ADVOCATE,CRITIC")
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], both["msg_id"])
    critic = await desk.check(CAROL, room["topic"], "CRITIC", room["k"])
    assert [m["msg_id"] for m in critic["pending"]] == [both["msg_id"]]


async def test_an_inactive_binding_cannot_advance_and_moves_nothing(desk, room):
    sent = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", to="ADVOCATE")
    fresh = await desk.session(BOB)
    await desk.rotate(BOB, room["topic"], "ADVOCATE", room["b"], fresh, cursor_mode="head")
    before = await desk.runtime.read(lambda c: sql.cursors(c, room["topic"]))
    body = await desk.advance(
        BOB, room["topic"], "ADVOCATE", room["b"], sent["msg_id"], refused=True
    )
    assert body["error"] == "unknown_topic"
    assert await desk.runtime.read(lambda c: sql.cursors(c, room["topic"])) == before


async def test_rotation_takes_no_override(desk, room):
    body = await desk.rotate(
        BOB,
        room["topic"],
        "ADVOCATE",
        room["b"],
        room["b"],
        refused=True,
        cursor_mode="head",
        conductor_override_msg_id=NOWHERE,
    )
    assert body["error"] == "invalid_arguments"
    body = await desk.rotate(BOB, room["topic"], "ADVOCATE", room["b"], room["b"], refused=True)
    assert body["error"] == "invalid_arguments"


async def test_search_viewer_role_never_widens_the_gate_and_errors_hold_no_content(desk, room):
    await desk.post(BOB, room["topic"], "ADVOCATE", "secret plan")
    body = await desk.refused(
        MALLORY, "debate_search", topic_id=room["topic"], query="secret", viewer_role="ADVOCATE"
    )
    assert body["error"] == "unknown_topic"
    assert "secret" not in json.dumps(body)
    unknown = await desk.refused(MALLORY, "debate_search", topic_id=NOWHERE, query="secret")
    assert unknown == body


async def test_search_full_text_and_literal_paths_agree(desk, room):
    for body in ("Alpha 50% beta", "alpha_50 beta", "ALPHA 50% BETA gamma", "nothing here"):
        await desk.post(BOB, room["topic"], "ADVOCATE", body)
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
    undeclared = await desk.check(BOB, room["topic"], "JUDGE", room["b"], refused=True)
    unknown = await desk.check(BOB, NOWHERE, "ADVOCATE", room["b"], refused=True)
    assert undeclared == unknown


async def test_messages_are_never_removed_by_the_lifecycle(desk, room):
    await desk.post(BOB, room["topic"], "ADVOCATE", "kept")
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
    old = await desk.post(BOB, room["topic"], "ADVOCATE", "needle in the hay")
    for i in range(4):
        await desk.post(BOB, room["topic"], "ADVOCATE", f"hay {i}")
    newer = await desk.post(BOB, room["topic"], "ADVOCATE", "another needle")
    hits = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="needle")
    assert [m["msg_id"] for m in hits["messages"]] == [newer["msg_id"], old["msg_id"]]
    one = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="needle", limit=1)
    assert [m["msg_id"] for m in one["messages"]] == [newer["msg_id"]]
    # Nothing among the newest two: the trigram index finds the old one.
    rare = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="the HAY")
    assert [m["msg_id"] for m in rare["messages"]] == [old["msg_id"]]


async def test_a_rare_query_with_a_recent_hit_asks_the_index(desk, room, monkeypatch):
    # Bench defect: a unique id posted among the newest messages made the search scan the
    # whole topic (40 ms on 100,000 messages) because the window had found one hit.
    from agora.toolsets.debate.handlers import reads

    monkeypatch.setattr(reads, "SEARCH_WINDOW", 2)
    monkeypatch.setattr(reads, "SCAN_BUDGET", 20)
    asked: list[str | None] = []
    search = sql.search

    def spy(conn, topic_id, phrase, pattern, limit):
        asked.append(phrase)
        return search(conn, topic_id, phrase, pattern, limit)

    monkeypatch.setattr(sql, "search", spy)
    for i in range(4):
        await desk.post(BOB, room["topic"], "ADVOCATE", f"hay {i}")
    needle = await desk.post(BOB, room["topic"], "ADVOCATE", "needle 1fe980b729")
    await desk.post(BOB, room["topic"], "ADVOCATE", "hay 4")
    hits = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="1FE980B729")
    assert [m["msg_id"] for m in hits["messages"]] == [needle["msg_id"]]
    assert asked == [fts_phrase("1fe980b729")]  # one hit in 2 of the default 20: the index
    common = await desk.call(BOB, "debate_search", topic_id=room["topic"], query="hay", limit=3)
    assert len(common["messages"]) == 3
    assert asked[1:] == [None]  # one hit in 2 for 3 wanted: scanning on finds the rest
