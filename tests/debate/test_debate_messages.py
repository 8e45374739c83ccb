"""debate_post, debate_post_with_recipients, debate_read and debate_search."""

from __future__ import annotations

import pytest
from debate_support import ALICE, BOB, CONDUCTOR, CONTRACT, MALLORY, STAR

from agora.toolsets.debate import sql
from agora.toolsets.debate.rules import KINDS


@pytest.fixture
async def topic(desk):
    """CONDUCTOR (alice), ADVOCATE (bob), HUMAN (alice) on one ACTIVE topic."""
    a, b = await desk.session(ALICE), await desk.session(BOB)
    h = await desk.session(ALICE)
    return await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b), "HUMAN": h})


async def post(desk, who, topic, role="CONDUCTOR", body="hello", **args):
    return await desk.post(who, topic, role, body, **args)


async def test_post_assigns_id_and_authoritative_increasing_ts(desk, topic):
    first = await post(desk, ALICE, topic)
    second = await post(desk, ALICE, topic)
    assert first["vehicle"] == "analysis"
    assert first["topic_state"] == "ACTIVE"
    assert (first["ts"], first["msg_id"]) < (second["ts"], second["msg_id"])
    assert first["ts"].endswith("Z")
    assert len(first["ts"]) == 27


async def test_authorship_comes_from_the_owned_binding_never_the_role_string(desk, topic):
    assert (await post(desk, BOB, topic, role="ADVOCATE"))["msg_id"]
    for who in (BOB, MALLORY, STAR, CONDUCTOR):
        body = await desk.post(who, topic, "CONDUCTOR", priority="H", kind="DECISION", refused=True)
        assert body["error"] == "unknown_topic"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param({"body": ""}, "invalid_arguments", id="empty-body"),
        pytest.param({"kind": "GOSSIP"}, "invalid_arguments", id="unknown-kind"),
        pytest.param({"priority": "X"}, "invalid_arguments", id="priority"),
        pytest.param(
            {"reply_to": "00000000-0000-4000-8000-000000000000"}, "bad_reply_to", id="reply-target"
        ),
        pytest.param(
            {"kind": "COMPACTION", "body": "nothing"},
            "compaction_sections_missing",
            id="compaction",
        ),
        pytest.param({"kind": "STATE", "body": "ARCHIVED"}, "illegal_transition", id="state"),
        pytest.param({"kind": "WATERMARK", "body": "nope"}, "unknown_msg_id", id="watermark"),
        pytest.param({"vehicle": "boat"}, "invalid_arguments", id="vehicle"),
        pytest.param({"payload_json": "[1]"}, "invalid_json", id="payload"),
        # Nested past the decoder's recursion limit (an internal error before), and past 32.
        pytest.param({"payload_json": "[" * 5000 + "]" * 5000}, "invalid_json", id="deepest"),
        pytest.param(
            {"payload_json": '{"a":' + "[" * 40 + "]" * 40 + "}"}, "invalid_json", id="deep"
        ),
        # What no reply can carry: stored, each broke every later read of the topic.
        pytest.param({"payload_json": '{"a": "\\ud800"}'}, "invalid_json", id="lone-high"),
        pytest.param({"payload_json": '{"a": "\\udc00x"}'}, "invalid_json", id="lone-low"),
        pytest.param({"payload_json": '{"a": 1e999}'}, "invalid_json", id="infinite"),
        pytest.param({"payload_json": '{"a": NaN}'}, "invalid_json", id="nan"),
    ],
)
async def test_post_rejections_preserve_nothing(desk, topic, args, code):
    before = await desk.runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM debate_messages").fetchone()[0]
    )
    base = {"topic_id": topic, "role": "CONDUCTOR", "priority": "M", "kind": "STATUS", "body": "b"}
    body = await desk.refused(ALICE, "debate_post", **{**base, **args})
    assert body["error"] == code
    after = await desk.runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM debate_messages").fetchone()[0]
    )
    assert after == before


async def test_a_payload_that_no_reply_could_carry_is_refused_saying_why(desk, topic):
    """Newcomer finding: payload_json '{"summary": "\\ud800"}' was stored, and from then on
    every debate_read and debate_search of the topic failed with an internal error (the reply
    could not be encoded), for every caller and after a restart."""
    lone = await desk.post(
        ALICE, topic, "CONDUCTOR", refused=True, payload_json='{"summary": "\\ud800"}'
    )
    assert lone["error"] == "invalid_json"
    assert "\\ud800 (a high surrogate) must be followed by a low surrogate" in lone["message"]
    pair = await post(desk, ALICE, topic, payload_json='{"summary": "\\ud83d\\ude00 ok"}')
    page = await desk.call(ALICE, "debate_read", topic_id=topic, role="CONDUCTOR")
    [read] = [m for m in page["messages"] if m["msg_id"] == pair["msg_id"]]
    assert read["payload"] == {"summary": "\U0001f600 ok"}  # an escaped pair is one character


async def test_author_session_must_be_owned_by_the_caller(desk, topic):
    foreign = await desk.session(BOB)
    body = await desk.post(ALICE, topic, "CONDUCTOR", refused=True, author_session_id=foreign)
    assert body["error"] == "session_not_yours"
    missing = "00000000-0000-4000-8000-000000000000"
    absent = await desk.post(ALICE, topic, "CONDUCTOR", refused=True, author_session_id=missing)
    assert absent["message"].replace(missing, foreign) == body["message"]
    mine = await desk.session(ALICE)
    ok = await post(desk, ALICE, topic, author_session_id=mine)
    page = await desk.call(ALICE, "debate_read", topic_id=topic, role="CONDUCTOR")
    assert [m["author_session_id"] for m in page["messages"] if m["msg_id"] == ok["msg_id"]] == [
        mine
    ]


async def test_addressed_posts_need_declared_roles_or_live_sessions(desk, topic):
    body = await desk.post(
        ALICE, topic, "CONDUCTOR", "?", to="JUDGE", priority="H", kind="Q", refused=True
    )
    assert body["error"] == "unknown_recipient"
    body = await desk.post(
        ALICE, topic, "CONDUCTOR", "?", to="", priority="H", kind="Q", refused=True
    )
    assert body["error"] == "invalid_arguments"
    out = await desk.post(
        ALICE, topic, "CONDUCTOR", "?", to="ADVOCATE, HUMAN", priority="H", kind="Q"
    )
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT recipient, state FROM debate_deliveries WHERE msg_id = ? ORDER BY recipient",
            (out["msg_id"],),
        ).fetchall()
    )
    assert [tuple(r) for r in rows] == [("role:ADVOCATE", "pending"), ("role:HUMAN", "pending")]


async def test_every_post_writes_a_history_event_in_its_transaction(desk, topic):
    before = len(await desk.runtime.read(lambda c: sql.history(c, topic)))
    await post(desk, ALICE, topic)
    events = await desk.runtime.read(lambda c: sql.history(c, topic))
    assert len(events) == before + 1
    assert events[-1]["event"] == "message_posted"


async def test_a_post_writes_no_update_of_the_topics_row(desk, topic, monkeypatch):
    # Regression: every post also ran UPDATE debate_topics SET updated_at, one statement in
    # eight of the writer's work per delivered post, for a column no tool shows.
    written: list[str] = []
    store = desk.runtime.store
    write = store.write

    async def recorded(statements, *rest):
        written.extend(str(w[0]) for w in statements)
        return await write(statements, *rest)

    monkeypatch.setattr(store, "write", recorded)
    stamp = "SELECT updated_at FROM debate_topics WHERE topic_id = ?"
    before = await desk.runtime.read(lambda c: c.execute(stamp, (topic,)).fetchone()[0])
    await post(desk, ALICE, topic, to="ADVOCATE")
    assert any(w.startswith("INSERT INTO debate_messages") for w in written)
    assert not [w for w in written if w.startswith("UPDATE debate_topics")]
    assert await desk.runtime.read(lambda c: c.execute(stamp, (topic,)).fetchone()[0]) == before


async def test_read_pages_with_compound_cursor_filters_and_truncation(desk, topic):
    ids = [(await post(desk, ALICE, topic, body=f"m{i}"))["msg_id"] for i in range(5)]
    page = await desk.call(BOB, "debate_read", topic_id=topic, role="ADVOCATE", limit=2)
    assert page["truncated"]
    assert page["count"] == 2
    assert page["next_msg_id_cursor"] == page["last_msg_id_returned"]
    rest = await desk.call(
        BOB, "debate_read", topic_id=topic, role="ADVOCATE", since_msg_id=page["next_msg_id_cursor"]
    )
    got = [m["msg_id"] for m in page["messages"] + rest["messages"] if m["kind"] == "STATUS"]
    assert got == ids
    assert not rest["truncated"]
    assert rest["next_msg_id_cursor"] is None
    only = await desk.call(
        BOB, "debate_read", topic_id=topic, role="ADVOCATE", kind_filter_csv="STATE"
    )
    assert [m["kind"] for m in only["messages"]] == ["STATE"]
    unknown = await desk.refused(
        BOB,
        "debate_read",
        topic_id=topic,
        role="ADVOCATE",
        since_msg_id="00000000-0000-4000-8000-000000000000",
    )
    assert unknown["error"] == "unknown_cursor"
    assert "m1" not in str(unknown)


async def test_read_refuses_unknown_kinds_in_its_filter(desk, topic):
    await post(desk, ALICE, topic, kind="Q")
    for given in ("BOGUS", "QUESTION", "Q,BOGUS"):
        body = await desk.refused(
            BOB, "debate_read", topic_id=topic, role="ADVOCATE", kind_filter_csv=given
        )
        assert body["error"] == "unknown_kind", body
        assert body["unknown"] == [k for k in given.split(",") if k != "Q"]
        assert body["allowed"] == list(KINDS)
    page = await desk.call(BOB, "debate_read", topic_id=topic, role="ADVOCATE", kind_filter_csv="Q")
    assert [m["kind"] for m in page["messages"]] == ["Q"]
    # The shape check comes first: an outsider hears of the bad kind, not of the topic.
    body = await desk.refused(
        MALLORY, "debate_read", topic_id=topic, role="ADVOCATE", kind_filter_csv="BOGUS"
    )
    assert body["error"] == "unknown_kind"


def test_the_kinds_are_the_contracts():
    enum = CONTRACT.tools["debate_post"].input_schema["properties"]["kind"]["enum"]
    assert tuple(enum) == KINDS


async def test_read_never_moves_a_cursor(desk, topic):
    await post(desk, ALICE, topic)
    before = await desk.runtime.read(lambda c: sql.cursors(c, topic))
    await desk.call(BOB, "debate_read", topic_id=topic, role="ADVOCATE")
    assert await desk.runtime.read(lambda c: sql.cursors(c, topic)) == before


async def test_read_since_latest_compaction_resumes_at_the_snapshot(desk, topic):
    await post(desk, ALICE, topic, body="old")
    snap = await desk.call(
        ALICE,
        "debate_compact",
        topic_id=topic,
        role="CONDUCTOR",
        body="OBSERVE a ORIENT b DECIDE c ACT d",
        since_ts="2026-11-30T00:00Z",
    )
    tail = await post(desk, ALICE, topic, body="new")
    page = await desk.call(
        BOB, "debate_read", topic_id=topic, role="ADVOCATE", since_latest_compaction=True
    )
    assert page["bootstrap_compaction_msg_id"] == snap["msg_id"]
    assert [m["msg_id"] for m in page["messages"]] == [snap["msg_id"], tail["msg_id"]]
    assert page["messages"][0]["body"].startswith("[COMPACTION since_ts=2026-11-30T00:00:00")


async def test_search_is_literal_casefolded_newest_first(desk, topic):
    await post(desk, ALICE, topic, body="Use 100% musl_builds")
    await post(desk, ALICE, topic, body="use 1000 muslXbuilds")
    await post(desk, ALICE, topic, body="USE 100% MUSL_BUILDS again")
    hits = await desk.call(BOB, "debate_search", topic_id=topic, query="100% musl_b")
    assert [m["body"] for m in hits["messages"]] == [
        "USE 100% MUSL_BUILDS again",
        "Use 100% musl_builds",
    ]
    short = await desk.call(BOB, "debate_search", topic_id=topic, query="%")
    assert short["count"] == 2
    one = await desk.call(BOB, "debate_search", topic_id=topic, query="use", limit=0)
    assert one["count"] == 1
    assert one["limit"] == 1


async def test_conductor_and_star_read_without_participating(desk, topic):
    for who in (CONDUCTOR, STAR):
        page = await desk.call(who, "debate_read", topic_id=topic, role="ADVOCATE")
        assert page["topic_state"] == "ACTIVE"
    body = await desk.refused(MALLORY, "debate_read", topic_id=topic, role="ADVOCATE")
    assert body["error"] == "unknown_topic"


async def test_role_sent_to_debate_search_is_pointed_to_viewer_role(desk):
    """Every other tool names it ``role``; debate_search's contract names it ``viewer_role``.
    Sending ``role`` listed the allowed fields with no "did you mean", difflib finding
    "role" too short a part of "viewer_role" to suggest it."""
    topic = await desk.topic(ALICE, {"CONDUCTOR": await desk.session(ALICE)})
    body = await desk.refused(ALICE, "debate_search", topic_id=topic, query="x", role="CONDUCTOR")
    (issue,) = [issue for issue in body["problems"] if issue["field"] == "role"]
    assert issue["message"].startswith("is not an allowed field (did you mean 'viewer_role'?")
