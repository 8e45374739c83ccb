"""debate_add_role, debate_bind_role, debate_rotate_session and debate_list_bindings."""

from __future__ import annotations

import uuid

import pytest
from debate_support import BOB, CAROL, CONDUCTOR, OUTSIDER, STAR

from agora.toolsets.debate import sql


@pytest.fixture
async def room(desk):
    """CONDUCTOR held by cora (a conductor principal), ADVOCATE by bob."""
    c, b = await desk.session(CONDUCTOR), await desk.session(BOB)
    topic = await desk.topic(CONDUCTOR, {"CONDUCTOR": c, "ADVOCATE": (BOB, b)})
    return {"topic": topic, "c": c, "b": b}


async def decision(desk, room):
    return (
        await desk.post(
            CONDUCTOR, room["topic"], "CONDUCTOR", "rebind", priority="H", kind="DECISION"
        )
    )["msg_id"]


async def test_add_role_needs_conductor_or_star_and_an_owned_session(desk, room):
    mine = await desk.session(CONDUCTOR)
    out = await desk.call(
        CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="EXECUTOR_1", session_id=mine
    )
    assert out["added_role"]
    assert out["generation"] == 1
    assert out["state"] == "active"
    replay = await desk.call(
        CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="EXECUTOR_1", session_id=mine
    )
    assert replay["added_role"] is False
    assert replay["generation"] == 1
    bob = await desk.session(BOB)
    for who, session in ((BOB, bob), (CONDUCTOR, bob), (STAR, bob)):
        body = await desk.refused(
            who, "debate_add_role", topic_id=room["topic"], role="EXECUTOR_2", session_id=session
        )
        assert body["error"] == "unknown_topic"
    body = await desk.refused(
        CONDUCTOR, "debate_add_role", topic_id=room["topic"], role="EXECUTOR", session_id=mine
    )
    assert body["error"] == "executor_role_not_numbered"


async def test_a_conductor_adds_roles_only_in_its_own_projects(desk):
    # A conductor reads any project's topic (the seed's read gate lets conductor/star
    # through), but posts only where its grants reach: adding a role it could never post
    # as, in a topic of another project, is denied as a missing topic is.
    olga = await desk.session(OUTSIDER)
    theirs = await desk.topic(OUTSIDER, {"LEAD": olga}, project="other")
    mine = await desk.session(CONDUCTOR)
    refused = await desk.refused(
        CONDUCTOR, "debate_add_role", topic_id=theirs, role="SPY", session_id=mine
    )
    missing = await desk.refused(
        CONDUCTOR, "debate_add_role", topic_id=str(uuid.uuid4()), role="SPY", session_id=mine
    )
    assert refused == missing
    bindings = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=theirs)
    assert [b["role"] for b in bindings["bindings"]] == ["LEAD"]


async def test_bind_role_takeover_is_denied_without_a_valid_override(desk, room):
    carol = await desk.session(CAROL)
    body = await desk.bind(CAROL, room["topic"], "ADVOCATE", carol, refused=True)
    assert body["error"] == "unknown_topic"  # carol holds no role there: a stranger
    mine = await desk.session(CONDUCTOR)
    body = await desk.bind(CONDUCTOR, room["topic"], "ADVOCATE", mine, refused=True)
    assert body["error"] == "duplicate_active"
    body = await desk.bind(
        CONDUCTOR,
        room["topic"],
        "ADVOCATE",
        mine,
        refused=True,
        replace_active=True,
        conductor_override_msg_id="00000000-0000-4000-8000-000000000000",
    )
    assert body["error"] == "invalid_override"
    sanction = await decision(desk, room)
    out = await desk.bind(
        CONDUCTOR,
        room["topic"],
        "ADVOCATE",
        mine,
        replace_active=True,
        conductor_override_msg_id=sanction,
    )
    assert out["generation"] == 2
    assert out["retired_sessions"] == 1


async def test_single_active_owner_and_replace_active_swap(desk, room):
    other = await desk.session(BOB)
    body = await desk.bind(BOB, room["topic"], "ADVOCATE", other, refused=True)
    assert body["error"] == "duplicate_active"
    out = await desk.bind(BOB, room["topic"], "ADVOCATE", other, replace_active=True)
    assert out["session_id"] == other
    assert out["retired_sessions"] == 1
    group = await desk.runtime.read(lambda c: sql.bindings(c, room["topic"]))
    assert [(b.generation, b.state) for b in group if b.role == "ADVOCATE"] == [
        (1, "retired"),
        (2, "active"),
    ]
    assert await desk.post(BOB, room["topic"], "ADVOCATE", author_session_id=other)


async def test_bind_state_empty_fails_validation(desk, room):
    body = await desk.bind(BOB, room["topic"], "ADVOCATE", room["b"], refused=True, state="")
    assert body["error"] == "invalid_arguments"


async def test_retired_bindings_stay_as_history_and_grant_nothing(desk, room):
    out = await desk.bind(BOB, room["topic"], "ADVOCATE", room["b"], state="retired")
    assert out["state"] == "retired"
    body = await desk.post(BOB, room["topic"], "ADVOCATE", refused=True)
    assert body["error"] == "unknown_topic"
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=room["topic"])
    assert [(b["role"], b["state"]) for b in listed["bindings"]] == [
        ("ADVOCATE", "retired"),
        ("CONDUCTOR", "active"),
    ]


async def test_list_bindings_shows_session_ids_only_to_owner_or_star(desk, room):
    mine = await desk.call(BOB, "debate_list_bindings", topic_id=room["topic"])
    shown = {b["role"]: b["session_id"] for b in mine["bindings"]}
    assert shown == {"ADVOCATE": room["b"], "CONDUCTOR": None}
    star = await desk.call(STAR, "debate_list_bindings", topic_id=room["topic"])
    assert {b["role"]: b["session_id"] for b in star["bindings"]} == {
        "ADVOCATE": room["b"],
        "CONDUCTOR": room["c"],
    }
    strip = [{k: v for k, v in b.items() if k != "session_id"} for b in mine["bindings"]]
    assert strip == [{k: v for k, v in b.items() if k != "session_id"} for b in star["bindings"]]


async def test_rotate_copy_carries_the_cursor_and_both_sides_must_be_owned(desk, room):
    sent = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "one", to="ADVOCATE")
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], sent["msg_id"])
    later = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "two", to="ADVOCATE")
    new = await desk.session(BOB)
    foreign = await desk.session(CAROL)
    body = await desk.rotate(
        BOB, room["topic"], "ADVOCATE", room["b"], foreign, refused=True, cursor_mode="copy"
    )
    assert body["error"] == "unknown_topic"
    out = await desk.rotate(BOB, room["topic"], "ADVOCATE", room["b"], new, cursor_mode="copy")
    assert out["cursor_source"] == "primary"
    assert out["warning"] is None
    inbox = await desk.check(BOB, room["topic"], "ADVOCATE", new)
    assert [m["msg_id"] for m in inbox["pending"]] == [later["msg_id"]]
    body = await desk.rotate(
        BOB, room["topic"], "ADVOCATE", room["b"], new, refused=True, cursor_mode="head"
    )
    assert body["error"] == "inactive_predecessor"


async def test_rotate_modes_head_replay_and_missing_copy_source(desk, room):
    sent = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "one", to="ADVOCATE")
    second, third, fourth = [await desk.session(BOB) for _ in range(3)]
    copy = await desk.rotate(BOB, room["topic"], "ADVOCATE", room["b"], second, cursor_mode="copy")
    assert copy["warning"] == "copy_source_cursor_missing"
    assert copy["cursor_source"] is None
    head = await desk.rotate(BOB, room["topic"], "ADVOCATE", second, third, cursor_mode="head")
    assert head["generation"] == 3
    inbox = await desk.check(BOB, room["topic"], "ADVOCATE", third)
    assert inbox["count"] == 0
    await desk.rotate(BOB, room["topic"], "ADVOCATE", third, fourth, cursor_mode="replay")
    inbox = await desk.check(BOB, room["topic"], "ADVOCATE", fourth)
    assert [m["msg_id"] for m in inbox["pending"]] == [sent["msg_id"]]
    cursors = await desk.runtime.read(lambda c: sql.cursors(c, room["topic"]))
    assert cursors[("ADVOCATE", third)].superseded


async def test_a_rotated_session_sees_the_one_shot_claims_its_predecessor_saw(desk, room):
    # bob's session b took two one-shot DECISIONs at its first check and answered one; the
    # session he rotates the role to inherits the role's claims with it, and its check
    # shows both as b's did (the answered one done), marks included.
    say = {"to": "ADVOCATE", "kind": "DECISION", "standing": False}
    answered = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "ship", **say)
    pending = await desk.post(CONDUCTOR, room["topic"], "CONDUCTOR", "hold", **say)
    await desk.check(BOB, room["topic"], "ADVOCATE", room["b"])
    await desk.post(
        BOB, room["topic"], "ADVOCATE", "shipped", kind="A", reply_to=answered["msg_id"]
    )
    seen = (await desk.check(BOB, room["topic"], "ADVOCATE", room["b"]))["pending"]
    assert [(m["msg_id"], m["claim"]["state"]) for m in seen] == [
        (answered["msg_id"], "done"),
        (pending["msg_id"], "active"),
    ]
    new, newer = await desk.session(BOB), await desk.session(BOB)
    await desk.rotate(BOB, room["topic"], "ADVOCATE", room["b"], new, cursor_mode="copy")
    assert (await desk.check(BOB, room["topic"], "ADVOCATE", new))["pending"] == seen
    await desk.rotate(BOB, room["topic"], "ADVOCATE", new, newer, cursor_mode="replay")
    assert (await desk.check(BOB, room["topic"], "ADVOCATE", newer))["pending"] == seen
