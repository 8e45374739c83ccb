"""Addressed delivery: debate_signal_check, debate_signal_advance, debate_advance_watermark
and debate_signal_wait (push wake-up)."""

from __future__ import annotations

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, STAR

from agora.toolsets.base import ToolCall
from agora.toolsets.debate import sql
from agora.toolsets.debate.handlers import inbox
from agora.toolsets.debate.topic import KIND


@pytest.fixture
async def room(desk):
    """CONDUCTOR (alice), ADVOCATE (bob), CRITIC (carol) on one ACTIVE topic."""
    a, b, c = await desk.session(ALICE), await desk.session(BOB), await desk.session(CAROL)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b), "CRITIC": (CAROL, c)})
    return {"topic": topic, "a": a, "b": b, "c": c}


async def say(desk, room, to, body="x", **args):
    """A post from the CONDUCTOR (alice) addressed to ``to``."""
    return await desk.post(ALICE, room["topic"], "CONDUCTOR", body, to=to, **args)


async def check(desk, room, who=BOB, role="ADVOCATE", session="b", **args):
    """debate_signal_check as ``who`` in ``role`` through the room's session ``session``."""
    return await desk.check(who, room["topic"], role, room[session], **args)


async def test_check_returns_only_messages_addressed_to_the_role_or_session(desk, room):
    to_role = await say(desk, room, "ADVOCATE", "for the role")
    await say(desk, room, "CRITIC", "not for bob")
    await desk.post(ALICE, room["topic"], "CONDUCTOR", "broadcast", priority="H")
    to_session = await say(desk, room, room["b"], "for the session", priority="H")
    inbox = await check(desk, room)
    assert [m["msg_id"] for m in inbox["pending"]] == [to_role["msg_id"], to_session["msg_id"]]
    assert inbox["max_priority"] == "H"
    assert not inbox["truncated"]
    assert inbox["next_cursor"] == {"ts": to_session["ts"], "msg_id": to_session["msg_id"]}


async def test_a_page_merges_role_and_session_mail_in_order_once_each(desk, room):
    # Mail for the role, for the session and for both, interleaved: one page in (ts, msg_id)
    # order, a message addressed to both listed once (then a page from one key alone).
    both = f"ADVOCATE,{room['b']}"
    sent = [await say(desk, room, to) for to in ("ADVOCATE", room["b"], both, "ADVOCATE", both)]
    inbox = await check(desk, room)
    assert [m["msg_id"] for m in inbox["pending"]] == [m["msg_id"] for m in sent]
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], sent[-1]["msg_id"])
    later = [await say(desk, room, room["b"]) for _ in range(2)]
    inbox = await check(desk, room)
    assert [m["msg_id"] for m in inbox["pending"]] == [m["msg_id"] for m in later]


async def test_empty_inbox_answers_zero_counts_and_null_cursor(desk, room):
    inbox = await check(desk, room)
    assert inbox["count"] == 0
    assert inbox["next_cursor"] is None
    assert inbox["max_priority"] is None


async def test_check_persists_progress_but_never_moves_the_cursor(desk, room):
    sent = await say(desk, room, "ADVOCATE")
    await check(desk, room)
    again = await check(desk, room)
    assert [m["msg_id"] for m in again["pending"]] == [sent["msg_id"]]
    cursors = await desk.runtime.read(lambda c: sql.cursors(c, room["topic"]))
    cursor = cursors[("ADVOCATE", room["b"])]
    assert cursor.msg_id is None
    assert cursor.last_check_at is not None
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT state FROM debate_deliveries WHERE msg_id = ?", (sent["msg_id"],)
        ).fetchall()
    )
    assert [r[0] for r in rows] == ["delivered"]


async def test_cursor_precedence_explicit_id_then_ts_then_persisted(desk, room):
    first = await say(desk, room, "ADVOCATE", "one")
    second = await say(desk, room, "ADVOCATE", "two")
    assert [
        m["body"]
        for m in (
            await check(desk, room, since_msg_id=first["msg_id"], since_ts="2000-01-01T00:00Z")
        )["pending"]
    ] == ["two"]
    assert (await check(desk, room, since_ts=second["ts"]))["count"] == 0
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], first["msg_id"])
    assert [m["body"] for m in (await check(desk, room))["pending"]] == ["two"]


async def test_check_limit_defaults_and_caps_with_truncation(desk, room):
    for i in range(3):
        await say(desk, room, "ADVOCATE", f"m{i}")
    page = await check(desk, room, limit=2)
    assert page["count"] == 2
    assert page["truncated"]
    assert page["limit"] == 2
    assert (await check(desk, room, limit=0))["limit"] == 1
    assert (await check(desk, room))["limit"] == 200
    assert (await check(desk, room, limit=5000))["limit"] == 1000


async def test_advance_is_monotonic_and_only_to_addressed_messages(desk, room):
    mine = await say(desk, room, "ADVOCATE")
    other = await say(desk, room, "CRITIC")
    args = {"topic_id": room["topic"], "role": "ADVOCATE", "session_id": room["b"]}
    body = await desk.refused(
        BOB, "debate_signal_advance", last_processed_msg_id=other["msg_id"], **args
    )
    assert body["error"] == "target_not_addressed"
    out = await desk.call(
        BOB, "debate_signal_advance", last_processed_msg_id=mine["msg_id"], **args
    )
    assert out["last_processed_ts"] == mine["ts"]
    assert out["worker_claim"] is None
    body = await desk.refused(
        BOB, "debate_signal_advance", last_processed_msg_id=mine["msg_id"], **args
    )
    assert body["error"] == "regressive_cursor"
    unknown = await desk.refused(
        BOB,
        "debate_signal_advance",
        last_processed_msg_id="00000000-0000-4000-8000-000000000000",
        **args,
    )
    assert unknown["error"] == "unknown_msg_id"
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT recipient, state FROM debate_deliveries WHERE msg_id IN (?, ?) ORDER BY 1",
            (mine["msg_id"], other["msg_id"]),
        ).fetchall()
    )
    assert [tuple(r) for r in rows] == [("role:ADVOCATE", "done"), ("role:CRITIC", "pending")]


async def test_signal_paths_need_the_callers_own_session_on_the_role(desk, room):
    await say(desk, room, "ADVOCATE")
    for who, session in ((CAROL, "b"), (BOB, "c"), (STAR, "b")):
        body = await desk.check(who, room["topic"], "ADVOCATE", room[session], refused=True)
        assert body["error"] == "unknown_topic"


async def test_watermark_posts_the_marker_and_heals_the_primary_cursor(desk, room):
    first = await say(desk, room, "ADVOCATE", "one")
    await say(desk, room, "ADVOCATE", "two")
    marker = await desk.call(
        BOB,
        "debate_advance_watermark",
        topic_id=room["topic"],
        role="ADVOCATE",
        processed_up_to_msg_id=first["msg_id"],
    )
    page = await desk.call(
        BOB, "debate_read", topic_id=room["topic"], role="CRITIC", kind_filter_csv="WATERMARK"
    )
    [msg] = page["messages"]
    assert msg["msg_id"] == marker["msg_id"]
    assert msg["body"] == first["msg_id"]
    assert msg["priority"] == "INFO"
    assert msg["recipients"] == []
    assert [m["body"] for m in (await check(desk, room))["pending"]] == ["two"]
    # debate_read starts after the role's watermark unless a cursor is given.
    page = await desk.call(BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE")
    assert [m["body"] for m in page["messages"]] == ["two", first["msg_id"]]
    whole = await desk.call(
        BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE", since_ts="2000-01-01T00:00Z"
    )
    assert whole["count"] > page["count"]
    body = await desk.refused(
        STAR,
        "debate_advance_watermark",
        topic_id=room["topic"],
        role="ADVOCATE",
        processed_up_to_msg_id=first["msg_id"],
    )
    assert body["error"] == "unknown_topic"
    body = await desk.refused(
        BOB,
        "debate_advance_watermark",
        topic_id=room["topic"],
        role="ADVOCATE",
        processed_up_to_msg_id="00000000-0000-4000-8000-000000000000",
    )
    assert body["error"] == "unknown_msg_id"


async def test_a_watermark_that_moves_nothing_says_so(desk, room):
    # A watermark set back to an earlier message answered like any other: the agent was
    # not told that nothing moved (a contract check's find).
    first = await say(desk, room, "ADVOCATE", "one")
    second = await say(desk, room, "ADVOCATE", "two")
    mark = {"topic_id": room["topic"], "role": "ADVOCATE"}
    ahead = await desk.call(
        BOB, "debate_advance_watermark", **mark, processed_up_to_msg_id=second["msg_id"]
    )
    assert not hasattr(ahead, "guidance")
    back = await desk.call(
        BOB, "debate_advance_watermark", **mark, processed_up_to_msg_id=first["msg_id"]
    )
    assert back.guidance == (
        "The WATERMARK marker was posted, but nothing moved: ADVOCATE's watermark and cursor "
        f"are already at or past {first['msg_id']}."
    )
    page = await desk.call(BOB, "debate_read", topic_id=room["topic"], role="ADVOCATE")
    assert second["msg_id"] not in [m["msg_id"] for m in page["messages"]]  # still after it


async def test_one_shot_decision_is_claimed_by_its_first_check(desk, room):
    decision = await say(desk, room, "ADVOCATE", "ship it", kind="DECISION", standing=False)
    await check(desk, room)
    await check(desk, room)
    claims = await desk.runtime.read(lambda c: sql.claims(c, room["topic"]))
    assert [(c.msg_id, c.state, c.session_id) for c in claims] == [
        (decision["msg_id"], "active", room["b"])
    ]


async def test_only_the_claimants_copy_of_a_one_shot_decision_names_its_claim(desk, room):
    # Both recipients receive the DECISION (a check returns what is addressed to the caller);
    # the first check claims it, and that recipient's copy says it holds the claim, in a
    # check and in a wait alike, while the other's stays as posted (no foreign claim state).
    to = "ADVOCATE,CRITIC"
    decision = await say(desk, room, to, "ship it", kind="DECISION", standing=False)
    first = await check(desk, room, CAROL, "CRITIC", "c")
    [mine] = first["pending"]
    assert mine["claim"] == {
        "role": "CRITIC",
        "state": "active",
        "claimed_at": mine["claim"]["claimed_at"],
    }
    second = await check(desk, room)
    [theirs] = second["pending"]
    assert theirs["msg_id"] == mine["msg_id"] == decision["msg_id"]
    assert "claim" not in theirs
    again = await desk.wait(CAROL, room["topic"], "CRITIC", room["c"], 1000)
    assert again["pending"][0]["claim"]["role"] == "CRITIC"
    await desk.post(CAROL, room["topic"], "CRITIC", "done", kind="A", reply_to=decision["msg_id"])
    done = await check(desk, room, CAROL, "CRITIC", "c")
    assert [m.get("claim", {}).get("state") for m in done["pending"]] == ["done"]
    standing = await say(desk, room, to, "a standing rule", kind="DECISION", standing=True)
    page = await check(desk, room, CAROL, "CRITIC", "c", since_msg_id=decision["msg_id"])
    assert [(m["msg_id"], "claim" in m) for m in page["pending"]] == [(standing["msg_id"], False)]


async def test_wait_answers_when_an_addressed_message_commits(desk, room, autojump_clock):
    async def later():
        await trio.sleep(3)
        await say(desk, room, "CRITIC", "not mine")
        await trio.sleep(2)
        await say(desk, room, "ADVOCATE", "mine")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        with trio.fail_after(60):
            start = trio.current_time()
            out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000)
    assert trio.current_time() - start == pytest.approx(5)
    assert [m["body"] for m in out["pending"]] == ["mine"]


async def test_wait_times_out_with_an_empty_inbox_and_the_topic_stays_usable(
    desk, room, autojump_clock
):
    with trio.fail_after(60):
        start = trio.current_time()
        out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 1000)
    assert trio.current_time() - start == pytest.approx(1)
    assert out["count"] == 0
    await say(desk, room, "ADVOCATE")
    assert (await check(desk, room))["count"] == 1


async def test_a_wait_that_finds_mail_records_its_check_in_one_command(desk, room):
    sent = await say(desk, room, "ADVOCATE")
    actor = desk.runtime.registry.get(KIND, room["topic"])
    before = actor.handled
    with trio.fail_after(60):
        out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000)
    assert [m["msg_id"] for m in out["pending"]] == [sent["msg_id"]]
    assert actor.handled == before + 1  # it was a look, then a check: two turns
    cursor = (await desk.runtime.read(lambda c: sql.cursors(c, room["topic"])))[
        ("ADVOCATE", room["b"])
    ]
    assert cursor.last_check_at is not None
    assert cursor.msg_id is None  # a wait never moves the cursor
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT state FROM debate_deliveries WHERE msg_id = ?", (sent["msg_id"],)
        ).fetchall()
    )
    assert [r[0] for r in rows] == ["delivered"]


async def test_a_wait_sleeps_through_posts_to_other_roles(desk, room, autojump_clock):
    await say(desk, room, "CRITIC", "warm")  # the topic's actor is loaded
    actor = desk.runtime.registry.get(KIND, room["topic"])
    before = actor.handled
    got = []

    async def wait():
        got.append(await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000))

    start = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(1)
            await say(desk, room, "CRITIC", "not for bob")
            await desk.post(ALICE, room["topic"], "CONDUCTOR", "broadcast")
            await trio.sleep(1)
            assert actor.handled == before + 3  # the look and two posts: no re-run
            mine = await say(desk, room, "ADVOCATE", "for bob")
    assert trio.current_time() == start + 2
    assert [m["msg_id"] for m in got[0]["pending"]] == [mine["msg_id"]]


async def test_a_wait_wakes_when_the_topic_state_moves(desk, room, autojump_clock):
    got = []

    async def wait():
        got.append(await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 30_000, refused=True))

    start = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(1)
            topic = room["topic"]
            await desk.call(
                ALICE, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="RESOLVED"
            )
    # It looked again at once (RESOLVED retired bob's binding), not at its timeout, and says
    # why it will never be delivered anything more.
    assert got[0]["error"] == "topic_resolved"
    assert trio.current_time() == start + 1


async def test_a_wait_that_times_out_empty_records_its_check(desk, room, autojump_clock):
    with trio.fail_after(60):
        out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 1000)
    assert out["count"] == 0
    cursor = (await desk.runtime.read(lambda c: sql.cursors(c, room["topic"])))[
        ("ADVOCATE", room["b"])
    ]
    assert cursor.last_check_at is not None


async def _shut_down_after(desk, seconds: float) -> None:
    await trio.sleep(seconds)
    desk.runtime.begin_shutdown()


async def test_wait_answers_at_once_on_shutdown(desk, room, autojump_clock):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_shut_down_after, desk, 2)
        with trio.fail_after(60):
            start = trio.current_time()
            out = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], 55_000)
    assert trio.current_time() - start == pytest.approx(2)
    assert out["count"] == 0
    # Not a timeout: the answer says the server is going away (wait again after reconnecting).
    assert out["shutting_down"] is True


@pytest.mark.parametrize("on_topic", [True, False], ids=["one-topic", "every-topic"])
async def test_only_a_wait_cut_short_by_shutdown_says_so(desk, room, autojump_clock, on_topic):
    topic = room["topic"] if on_topic else None
    with trio.fail_after(60):
        timed_out = await desk.wait(BOB, topic, "ADVOCATE", room["b"], 1000)
    assert timed_out["count"] == 0
    assert "shutting_down" not in timed_out  # a real timeout: nothing came, none is ending
    await say(desk, room, "ADVOCATE", "mine")
    with trio.fail_after(60):
        found = await desk.wait(BOB, topic, "ADVOCATE", room["b"], 1000)
    assert found["count"] == 1
    assert "shutting_down" not in found
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], found["pending"][0]["msg_id"])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_shut_down_after, desk, 2)
        with trio.fail_after(60):
            out = await desk.wait(BOB, topic, "ADVOCATE", room["b"], 30_000)
    assert (out["count"], out["shutting_down"], out["topic_id"]) == (0, True, room["topic"])


async def test_wait_rejects_timeouts_out_of_range(desk, room, autojump_clock):
    for timeout in (999, 55_001):
        body = await desk.wait(BOB, room["topic"], "ADVOCATE", room["b"], timeout, refused=True)
        assert body["error"] == "invalid_arguments"


async def test_consumed_messages_read_back_exactly_as_first_delivered(desk, room):
    sent = await say(
        desk,
        room,
        "ADVOCATE",
        "payload",
        payload_json='{"k": [1, 2]}',
        body_mode="plain",
        author_session_id=room["a"],
    )
    first = await check(desk, room)
    await desk.advance(BOB, room["topic"], "ADVOCATE", room["b"], sent["msg_id"])
    again = await check(desk, room, since_ts="2000-01-01T00:00Z")
    assert again["pending"] == first["pending"]
    assert first["pending"][0]["payload"] == {"k": [1, 2]}


async def test_a_wait_on_a_topic_is_its_topic_wait_itself_not_awaited_in_a_dispatch(desk, room):
    # A parked wait's every wake-up walks its coroutines: debate_signal_wait hands over the
    # coroutine of the wait it picked (one topic, or the session's topics) without a frame.
    args = {"session_id": room["b"], "role": "ADVOCATE", "timeout_ms": 0}
    for topic, waits in ((room["topic"], "_wait_one"), (None, "_wait_any")):
        given = args if topic is None else {**args, "topic_id": topic}
        call = ToolCall(tool="debate_signal_wait", args=given, principal=BOB, runtime=desk.runtime)
        coro = inbox.debate_signal_wait(call)
        assert coro.cr_code.co_name == waits
        reply = await coro
        assert reply["pending"] == []
