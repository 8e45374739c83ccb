"""Reads show a session id only to its owner (and to star), as debate_list_bindings does.

Before, debate_read, debate_search and the inbox showed every recipient session id and
author_session_id to every reader, while debate_list_bindings hid the same ids."""

from __future__ import annotations

from debate_support import ALICE, BOB, CAROL, CONDUCTOR, STAR


async def test_session_ids_are_shown_to_their_owners_only(desk):
    alice, bob, carol = [await desk.session(w) for w in (ALICE, BOB, CAROL)]
    topic = await desk.topic(ALICE, {"CONDUCTOR": alice, "PRO": (BOB, bob), "CON": (CAROL, carol)})
    await desk.post(
        ALICE, topic, "CONDUCTOR", "to a session", to=f"CON,{bob}", author_session_id=alice
    )

    async def shown(who, role):
        read = await desk.call(who, "debate_read", topic_id=topic, role=role)
        found = await desk.call(who, "debate_search", topic_id=topic, query="to a session")
        [a] = [m for m in read["messages"] if m["body"] == "to a session"]
        [b] = found["messages"]
        assert (a["recipients"], a["author_session_id"]) == (
            b["recipients"],
            b["author_session_id"],
        )
        return a["recipients"], a["author_session_id"]

    assert await shown(ALICE, "CONDUCTOR") == (["CON", None], alice)
    assert await shown(BOB, "PRO") == (["CON", bob], None)
    assert await shown(CAROL, "CON") == (["CON", None], None)
    assert await shown(CONDUCTOR, "CONDUCTOR") == (["CON", None], None)  # reads all, owns none
    assert await shown(STAR, "CONDUCTOR") == (["CON", bob], alice)
    for who, role, session, expected in (
        (BOB, "PRO", bob, ["CON", bob]),
        (CAROL, "CON", carol, ["CON", None]),
    ):
        for out in (
            await desk.check(who, topic, role, session),
            await desk.wait(who, topic, role, session, 1000),
        ):
            [m] = out["pending"]
            assert (m["recipients"], m["author_session_id"]) == (expected, None)
    listed = await desk.call(CAROL, "debate_list_bindings", topic_id=topic)
    assert {b["role"]: b["session_id"] for b in listed["bindings"]}["PRO"] is None  # the same rule
