"""debate_work_queue: participation-filtered, deterministic ordering with reason codes."""

from __future__ import annotations

from debate_support import ALICE, BOB, CONDUCTOR, MALLORY, STAR, legacy_topic


async def topic(desk, lane, **args):
    a = await desk.session(ALICE)
    metadata = f'{{"priority_lane": "{lane}", "priority_reason": "r"}}'
    return await desk.topic(
        ALICE, {"CONDUCTOR": a, "ADVOCATE": None}, metadata_json=metadata, **args
    )


async def test_lanes_outrank_derived_urgency_and_reasons_explain(desk):
    low = await topic(desk, "P7")
    urgent = await topic(desk, "P1")
    overdue = await topic(desk, "P7", resolve_by="2026-11-29T00:00Z")
    await desk.post(ALICE, low, "CONDUCTOR", "?", priority="H", kind="Q")
    out = await desk.call(ALICE, "debate_work_queue")
    order = [i["topic_id"] for i in out["items"]]
    assert order == [urgent, overdue, low]
    by_id = {i["topic_id"]: i for i in out["items"]}
    assert "lane:P1" in by_id[urgent]["reason_codes"]
    assert "deadline_overdue" in by_id[overdue]["reason_codes"]
    assert {"open_questions", "blocked_questions", "missing_roles"} <= set(
        by_id[low]["reason_codes"]
    )
    assert by_id[low]["missing_roles"] == ["ADVOCATE"]
    assert by_id[low]["latest_message"]["kind"] == "Q"
    assert out["ordering"][0] == "lane_rank"
    await desk.call(
        ALICE, "debate_set_lane", topic_id=low, role="CONDUCTOR", lane="P0", reason="now"
    )
    again = await desk.call(ALICE, "debate_work_queue", limit=1)
    assert [i["topic_id"] for i in again["items"]] == [low]
    assert (again["count"], again["total"]) == (1, 3)


async def test_unreachable_topics_vanish_and_malformed_ids_are_skipped(desk):
    mine = await topic(desk, "P3")
    assert (await desk.call(MALLORY, "debate_work_queue"))["items"] == []
    out = await desk.call(BOB, "debate_work_queue", topics_csv=f"{mine},not-an-id")
    assert out["items"] == []
    assert out["skipped_invalid_topic_ids"] == ["not-an-id"]
    for who in (STAR, CONDUCTOR):
        assert [i["topic_id"] for i in (await desk.call(who, "debate_work_queue"))["items"]] == [
            mine
        ]


async def test_states_filter_and_bad_states(desk):
    t = await topic(desk, "P3", state="INIT")
    assert [i["state"] for i in (await desk.call(ALICE, "debate_work_queue"))["items"]] == ["INIT"]
    assert (await desk.call(ALICE, "debate_work_queue", states_csv="ACTIVE"))["items"] == []
    body = await desk.refused(ALICE, "debate_work_queue", states_csv="OPEN")
    assert body["error"] == "unknown_state"
    body = await desk.refused(ALICE, "debate_work_queue", limit=0)
    assert body["error"] == "invalid_arguments"
    assert (await desk.call(ALICE, "debate_work_queue", states_csv=""))["total"] == 1
    assert t


async def test_a_closed_topic_misses_no_role(desk):
    a, b = await desk.session(ALICE), await desk.session(BOB)
    closed, live = [
        await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)}) for _ in range(2)
    ]
    for state in ("RESOLVED", "ARCHIVED"):
        await desk.call(ALICE, "debate_state", topic_id=closed, role="CONDUCTOR", new_state=state)
        out = await desk.call(ALICE, "debate_work_queue", states_csv="ACTIVE,RESOLVED,ARCHIVED")
        by_id = {i["topic_id"]: i for i in out["items"]}
        # Closing retired every binding by design: that is no role missing an owner, and it
        # must not rank the closed topic above the live one.
        assert by_id[closed]["missing_roles"] == [], state
        assert "missing_roles" not in by_id[closed]["reason_codes"]
        assert by_id[closed]["priority_score"] == by_id[live]["priority_score"]
    # An open topic whose role lost its owner still misses it.
    await desk.bind(BOB, live, "ADVOCATE", b, state="retired")
    out = await desk.call(ALICE, "debate_work_queue", topics_csv=live)
    assert out["items"][0]["missing_roles"] == ["ADVOCATE"]


async def test_a_closed_topic_is_not_overdue(desk):
    closed = await topic(desk, "P3", resolve_by="2026-11-29T00:00Z")
    await desk.call(ALICE, "debate_state", topic_id=closed, role="CONDUCTOR", new_state="RESOLVED")
    [item] = (await desk.call(ALICE, "debate_work_queue", states_csv="RESOLVED"))["items"]
    assert item["resolve_by"] is not None
    assert not {"deadline_overdue", "deadline_soon"} & set(item["reason_codes"])


async def test_conductor_sees_sentinel_topics_as_metadata_only(desk):
    await legacy_topic(
        desk, "7e57ab1e-0000-4000-8000-0000000000aa", "7e57ab1e-0000-4000-8000-0000000000ab", "old"
    )
    [item] = (await desk.call(CONDUCTOR, "debate_work_queue"))["items"]
    assert item["metadata_only"] is True
    assert item["reason_codes"] == ["project_unset"]
    assert (await desk.call(ALICE, "debate_work_queue"))["items"] == []
    assert (await desk.call(STAR, "debate_work_queue"))["items"] == []


async def test_malformed_stored_metadata_fails_the_run(desk):
    t = await topic(desk, "P3")
    await desk.runtime.write(
        [("UPDATE debate_topics SET metadata = ? WHERE topic_id = ?", ("[not json", t))]
    )
    body = await desk.refused(ALICE, "debate_work_queue")
    assert body["error"] == "corrupt_topic_record"


async def test_a_filter_of_only_malformed_ids_ranks_nothing_and_names_them(desk):
    await topic(desk, "P1")
    out = await desk.call(ALICE, "debate_work_queue", topics_csv="not-a-topic,also-not")
    assert (out["items"], out["total"]) == ([], 0)
    assert out["skipped_invalid_topic_ids"] == ["not-a-topic", "also-not"]
