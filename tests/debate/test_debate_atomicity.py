"""Atomicity across the toolset: every accepted change writes its history event in the same
transaction, a failed commit leaves nothing behind, a rejection changes nothing, and a pure
read preserves nothing."""

from __future__ import annotations

import pytest
from debate_support import ALICE, BOB, CONDUCTOR

from agora.runtime.actor import InternalError

TABLES = (
    "debate_sessions",
    "debate_topics",
    "debate_bindings",
    "debate_messages",
    "debate_deliveries",
    "debate_cursors",
    "debate_watermarks",
    "debate_claims",
    "debate_history",
)
NOWHERE = "00000000-0000-4000-8000-000000000000"


async def dump(desk):
    def read(conn):
        return {
            t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES
        }

    return await desk.runtime.read(read)


@pytest.fixture
async def room(desk):
    a, b, e = await desk.session(ALICE), await desk.session(BOB), await desk.session(CONDUCTOR)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b), "EXECUTOR_1": None})
    q = await desk.post(ALICE, topic, "CONDUCTOR", "why?", to="ADVOCATE", priority="H", kind="Q")
    return {"topic": topic, "a": a, "b": b, "e": e, "q": q["msg_id"]}


def mutations(room):
    """One accepted call per mutating tool: (principal, tool, arguments)."""
    t = room["topic"]
    return {
        "post": (
            ALICE,
            "debate_post",
            {"topic_id": t, "role": "CONDUCTOR", "priority": "M", "kind": "STATUS", "body": "x"},
        ),
        "post_with_recipients": (
            ALICE,
            "debate_post_with_recipients",
            {
                "topic_id": t,
                "role": "CONDUCTOR",
                "priority": "M",
                "kind": "STATUS",
                "body": "x",
                "addressed_to_csv": "ADVOCATE",
            },
        ),
        "escalate": (BOB, "debate_escalate", {"topic_id": t, "role": "ADVOCATE", "reason": "r"}),
        "compact": (
            ALICE,
            "debate_compact",
            {"topic_id": t, "role": "CONDUCTOR", "body": "OBSERVE ORIENT DECIDE ACT"},
        ),
        "advance_watermark": (
            BOB,
            "debate_advance_watermark",
            {"topic_id": t, "role": "ADVOCATE", "processed_up_to_msg_id": room["q"]},
        ),
        "signal_advance": (
            BOB,
            "debate_signal_advance",
            {
                "topic_id": t,
                "role": "ADVOCATE",
                "session_id": room["b"],
                "last_processed_msg_id": room["q"],
            },
        ),
        "state": (
            ALICE,
            "debate_close_topic",
            {"topic_id": t, "role": "CONDUCTOR", "new_state": "RESOLVED"},
        ),
        "set_lane": (
            ALICE,
            "debate_set_lane",
            {"topic_id": t, "role": "CONDUCTOR", "lane": "P1", "reason": "r"},
        ),
        "add_role": (
            CONDUCTOR,
            "debate_add_role",
            {"topic_id": t, "role": "EXECUTOR_2", "session_id": room["e"]},
        ),
        "bind_role": (
            CONDUCTOR,
            "debate_bind_role",
            {"topic_id": t, "role": "EXECUTOR_1", "session_id": room["e"]},
        ),
        "rotate": (
            BOB,
            "debate_rotate_session",
            {
                "topic_id": t,
                "role": "ADVOCATE",
                "old_session_id": room["b"],
                "new_session_id": "NEW",
                "cursor_mode": "copy",
            },
        ),
    }


async def prepared(desk, room, name):
    who, tool, args = mutations(room)[name]
    if name == "state":  # the Q must be answered first
        await desk.post(BOB, room["topic"], "ADVOCATE", "because", kind="A", reply_to=room["q"])
    if args.get("new_session_id") == "NEW":
        args = {**args, "new_session_id": await desk.session(BOB)}
    return who, tool, args


NAMES = sorted(mutations({"topic": "", "a": "", "b": "", "e": "", "q": ""}))


@pytest.mark.parametrize("name", NAMES)
async def test_every_accepted_change_writes_history_in_its_transaction(desk, room, name):
    who, tool, args = await prepared(desk, room, name)
    before = await dump(desk)
    await desk.call(who, tool, **args)
    after = await dump(desk)
    assert len(after["debate_history"]) > len(before["debate_history"])


@pytest.mark.parametrize("name", NAMES)
async def test_a_failed_commit_leaves_nothing_behind(desk, room, name):
    who, tool, args = await prepared(desk, room, name)
    # Plant the history row the change will want: its commit fails on the primary key.
    seq = len((await dump(desk))["debate_history"]) + 1
    await desk.runtime.write(
        [
            (
                "INSERT INTO debate_history (topic_id, seq, at, event, actor, "
                "detail) VALUES (?, ?, '', 'planted', '', '{}')",
                (room["topic"], seq),
            )
        ]
    )
    before = await dump(desk)
    with pytest.raises(InternalError):
        await desk.call(who, tool, **args)
    assert await dump(desk) == before
    # The topic reloaded from the store: it still works once the obstacle is gone.
    await desk.runtime.write([("DELETE FROM debate_history WHERE event = 'planted'", ())])
    await desk.call(who, tool, **args)


REJECTED = {
    "post": (
        BOB,
        "debate_post",
        {"role": "CONDUCTOR", "priority": "M", "kind": "STATUS", "body": "x"},
    ),
    "post_with_recipients": (
        ALICE,
        "debate_post_with_recipients",
        {
            "role": "CONDUCTOR",
            "priority": "M",
            "kind": "STATUS",
            "body": "x",
            "addressed_to_csv": "JUDGE",
        },
    ),
    "escalate": (ALICE, "debate_escalate", {"role": "ADVOCATE", "reason": "r"}),
    "compact": (ALICE, "debate_compact", {"role": "CONDUCTOR", "body": "OBSERVE ACT"}),
    "advance_watermark": (
        BOB,
        "debate_advance_watermark",
        {"role": "ADVOCATE", "processed_up_to_msg_id": NOWHERE},
    ),
    "signal_advance": (
        BOB,
        "debate_signal_advance",
        {"role": "ADVOCATE", "session_id": "B", "last_processed_msg_id": NOWHERE},
    ),
    "state": (ALICE, "debate_state", {"role": "CONDUCTOR", "new_state": "RESOLVED"}),
    "set_lane": (ALICE, "debate_set_lane", {"role": "CONDUCTOR", "lane": "P1", "reason": "  "}),
    "add_role": (BOB, "debate_add_role", {"role": "EXECUTOR_2", "session_id": "B"}),
    "bind_role": (BOB, "debate_bind_role", {"role": "CONDUCTOR", "session_id": "B"}),
    "rotate": (
        BOB,
        "debate_rotate_session",
        {"role": "ADVOCATE", "old_session_id": "B", "new_session_id": "B", "cursor_mode": "head"},
    ),
    "reconcile": (CONDUCTOR, "debate_reconcile_project", {"project": "ops"}),
    "claim_reclaim": (BOB, "debate_message_claim_reclaim", {"older_than_ts": "2026-13-01T00:00Z"}),
    "init": (
        ALICE,
        "debate_init",
        {"title": "t", "created_by_role": "CONDUCTOR", "metadata_json": "{}"},
    ),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
async def test_a_rejection_changes_nothing(desk, room, name):
    who, tool, args = REJECTED[name]
    args = {k: room["b"] if v == "B" else v for k, v in args.items()}
    if name != "init":
        args["topic_id"] = room["topic"]
    before = await dump(desk)
    await desk.refused(who, tool, **args)
    assert await dump(desk) == before


READS = {
    "read": (BOB, "debate_read", {"role": "ADVOCATE"}),
    "search": (BOB, "debate_search", {"query": "why"}),
    "list_bindings": (BOB, "debate_list_bindings", {}),
    "work_queue": (BOB, "debate_work_queue", {}),
    "session_list": (BOB, "debate_session_list", {}),
}


@pytest.mark.parametrize("name", sorted(READS))
async def test_pure_reads_preserve_nothing(desk, room, name):
    who, tool, args = READS[name]
    if name not in ("work_queue", "session_list"):
        args = {**args, "topic_id": room["topic"]}
    before = await dump(desk)
    await desk.call(who, tool, **args)
    assert await dump(desk) == before
