"""debate_session_open/_list and debate_init: sessions, roster seeding, idempotency, lanes,
projects and the validation of every init argument."""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, BOB, CONDUCTOR, LANE, OUTSIDER, STAR

from agora.toolsets.debate import sql


async def test_session_open_mints_caller_owned_sessions_listed_newest_first(desk):
    first = await desk.session(ALICE)
    desk.wall.advance(1)
    second = await desk.session(ALICE)
    await desk.session(BOB)
    listed = await desk.call(ALICE, "debate_session_list")
    assert [s["session_id"] for s in listed["sessions"]] == [second, first]
    assert (listed["count"], listed["has_more"]) == (2, False)
    # A page that is not all of them says so (a count of 1 at limit 1 told nothing).
    page = await desk.call(ALICE, "debate_session_list", limit=1)
    assert ([s["session_id"] for s in page["sessions"]], page["has_more"]) == ([second], True)
    whole = await desk.call(ALICE, "debate_session_list", limit=2)
    assert whole["has_more"] is False


async def test_init_seeds_bindings_atomically_and_mints_omitted_sessions(desk):
    mine = await desk.session(ALICE)
    roles = [{"role": "CONDUCTOR", "session_id": mine}, {"role": "ADVOCATE"}]
    args = {"title": "Musl-first packaging", "created_by_role": "CONDUCTOR",
            "roles_json": json.dumps(roles), "metadata_json": LANE}  # fmt: skip
    out = await desk.call(ALICE, "debate_init", **args)
    assert out["state"] == "INIT"
    assert out["archived_at"] is None
    assert out["roles"] == ["CONDUCTOR", "ADVOCATE"]
    assert out["project"] == "ops"
    seeded = {b["role"]: b for b in out["seeded_bindings"]}
    assert seeded["CONDUCTOR"]["session_id"] == mine
    assert not seeded["CONDUCTOR"]["minted"]
    assert seeded["ADVOCATE"]["minted"]
    sessions = await desk.call(ALICE, "debate_session_list")
    owned = {s["session_id"] for s in sessions["sessions"]}
    assert seeded["ADVOCATE"]["session_id"] in owned
    # The repeat answers as the first call did: the minted session still says minted.
    again = await desk.call(ALICE, "debate_init", topic_id=out["topic_id"], **args)
    assert again["seeded_bindings"] == out["seeded_bindings"]
    history = await desk.runtime.read(lambda c: sql.history(c, out["topic_id"]))
    assert [e["event"] for e in history] == ["topic_created"]


async def test_init_repeat_with_identical_shape_returns_the_topic(desk):
    args = {"title": "t", "created_by_role": "CONDUCTOR", "metadata_json": LANE}
    out = await desk.call(ALICE, "debate_init", **args)
    again = await desk.call(ALICE, "debate_init", topic_id=out["topic_id"], **args)
    assert again["topic_id"] == out["topic_id"]
    assert again["created_at"] == out["created_at"]


async def test_init_repeat_with_a_differing_shape_is_rejected(desk):
    args = {"title": "t", "created_by_role": "CONDUCTOR", "metadata_json": LANE}
    out = await desk.call(ALICE, "debate_init", **args)
    body = await desk.refused(
        ALICE, "debate_init", **{**args, "title": "other"}, topic_id=out["topic_id"]
    )
    assert body["error"] == "init_conflict"


async def test_init_requires_a_priority_lane_with_reason(desk):
    for metadata in (
        "{}",
        '{"priority_lane": "P2"}',
        '{"priority_lane": "P9", "priority_reason": "x"}',
    ):
        body = await desk.refused(
            ALICE, "debate_init", title="t", created_by_role="CONDUCTOR", metadata_json=metadata
        )
        assert body["error"] in ("priority_lane_required", "invalid_lane")
    nested = '{"conductor_priority": {"lane": "p1", "reason": "outage"}}'
    out = await desk.call(
        ALICE, "debate_init", title="t", created_by_role="CONDUCTOR", metadata_json=nested
    )
    assert out["metadata"]["conductor_priority"]["lane"] == "P1"


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        pytest.param({"title": ""}, "invalid_arguments", id="empty-title"),
        pytest.param({"created_by_role": "lower"}, "invalid_arguments", id="role-shape"),
        pytest.param({"bogus": 1}, "invalid_arguments", id="unknown-argument"),
        pytest.param({"topic_id": "not-a-uuid"}, "invalid_arguments", id="topic-id"),
        pytest.param(
            {"max_rounds": 11, "protocol_version": "debate/v1"},
            "invalid_arguments",
            id="round-bound",
        ),
        pytest.param(
            {"phase_timeout_seconds": 29, "protocol_version": "debate/v1"},
            "invalid_arguments",
            id="timeout-floor",
        ),
        pytest.param({"protocol_version": "debate/v2"}, "invalid_arguments", id="protocol"),
        pytest.param(
            {"protocol_version": "debate/v1", "blind_roles_csv": "CONDUCTOR"},
            "invalid_blind_roles",
            id="one-blind-role",
        ),
        pytest.param({"max_rounds": 3}, "protocol_fields_require_debate_v1", id="v1-field"),
        pytest.param({"resolve_by": "2026-13-40T00:00Z"}, "invalid_timestamp", id="deadline"),
        pytest.param(
            {"roles_json": '[{"role": "EXECUTOR"}]', "created_by_role": "EXECUTOR"},
            "executor_role_not_numbered",
            id="executor",
        ),
        pytest.param(
            {"roles_json": '[{"role": "A1"}, {"role": "A1"}]', "created_by_role": "A1"},
            "invalid_roles",
            id="duplicate-role",
        ),
        pytest.param({"roles_json": "{}"}, "invalid_roles", id="roles-not-array"),
        pytest.param({"project": "elsewhere"}, "project_out_of_scope", id="project-scope"),
        pytest.param({"project": "*"}, "invalid_project", id="wildcard"),
    ],
)
async def test_init_rejects_bad_arguments_and_creates_nothing(desk, extra, code):
    args = {"title": "t", "created_by_role": "CONDUCTOR", "metadata_json": LANE, **extra}
    body = await desk.refused(ALICE, "debate_init", **args)
    assert body["error"] == code
    count = await desk.runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM debate_topics").fetchone()[0]
    )
    assert count == 0


async def test_init_never_takes_over_a_foreign_session(desk):
    foreign = await desk.session(BOB)
    missing = "00000000-0000-4000-8000-000000000000"
    for who in (ALICE, STAR, CONDUCTOR):
        bodies = []
        for session in (foreign, missing):
            roles = json.dumps([{"role": "CONDUCTOR", "session_id": session}])
            body = await desk.refused(
                who,
                "debate_init",
                title="t",
                created_by_role="CONDUCTOR",
                roles_json=roles,
                metadata_json=LANE,
            )
            # No topic was named, so no "unknown topic": the session is what is wrong.
            assert body["error"] == "session_not_yours", body
            assert "topic" not in body["message"].split(";")[0]
            bodies.append(body["message"].replace(session, "<s>"))
        # A foreign session and one that does not exist answer the same words.
        assert bodies[0] == bodies[1]


async def test_project_defaults_from_a_single_grant_untagged_for_star_required_otherwise(desk):
    args = {"title": "t", "created_by_role": "CONDUCTOR", "metadata_json": LANE}
    assert (await desk.call(ALICE, "debate_init", **args))["project"] == "ops"
    assert (await desk.call(STAR, "debate_init", **args))["project"] is None
    from agora.identity import Principal

    multi = Principal("multi", projects=frozenset({"a", "b"}))
    assert (await desk.refused(multi, "debate_init", **args))["error"] == "project_required"
    assert (await desk.call(multi, "debate_init", project="b", **args))["project"] == "b"
    assert (await desk.refused(OUTSIDER, "debate_init", project="ops", **args))[
        "error"
    ] == "project_out_of_scope"
