"""debate/v1: the conductor scope shows held blind CLAIMs to supervisors, never to a debater.

A principal with the conductor scope that holds (or held) a blind role is a debater: the
other side's CLAIM is hidden from it until the barrier releases, on every path (read, search,
signal check, the work queue, a msg_id it names), as from any debater. One that does not
debate yet may not take a blind role once another blind role's CLAIM is in, since it could
read that CLAIM first.
"""

from __future__ import annotations

import json

from debate_support import BOB, CAROL, CONDUCTOR, LANE, payload

from agora.identity import Principal

#: A second conductor-scoped principal, a supervisor that debates nothing.
COLE = Principal("cole", scopes=frozenset({"conductor"}), projects=frozenset({"ops"}))
DORA = Principal("dora", projects=frozenset({"ops"}))


async def _debating_conductor(desk):
    """An ACTIVE v1 topic whose PRO is held by the conductor-scoped cora (seeded by her
    debate_init), CON by bob and JUDGE by carol; returns (topic, PRO's session)."""
    con, judge = await desk.session(BOB), await desk.session(CAROL)
    pro = await desk.session(CONDUCTOR)
    topic = await desk.topic(
        CONDUCTOR,
        {"PRO": pro, "CON": (BOB, con), "JUDGE": (CAROL, judge)},
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )
    return topic, pro


async def _con_claim(desk, topic):
    out = await desk.post(
        BOB, topic, "CON", "CON-SECRET", to="PRO,JUDGE", kind="CLAIM", payload_json=payload()
    )
    return out["msg_id"]


async def test_a_conductor_holding_a_blind_role_does_not_see_the_other_claim(desk):
    topic, pro = await _debating_conductor(desk)
    claim = await _con_claim(desk, topic)
    inbox = await desk.check(CONDUCTOR, topic, "PRO", pro)
    assert inbox["pending"] == []
    for role in ("PRO", "CON"):
        read = await desk.call(CONDUCTOR, "debate_read", topic_id=topic, role=role)
        assert claim not in [m["msg_id"] for m in read["messages"]], role
    for view in ({"viewer_role": "PRO"}, {}):
        found = await desk.call(CONDUCTOR, "debate_search", topic_id=topic, query="SECRET", **view)
        assert found["count"] == 0, view
    queue = await desk.call(CONDUCTOR, "debate_work_queue", topics_csv=topic)
    [item] = queue["items"]
    assert (item["latest_message"] or {}).get("msg_id") != claim
    # Its own CLAIM releases the barrier, as any debater's does.
    await desk.post(CONDUCTOR, topic, "PRO", "pro", to="CON", kind="CLAIM", payload_json=payload())
    inbox = await desk.check(CONDUCTOR, topic, "PRO", pro)
    assert [m["msg_id"] for m in inbox["pending"]] == [claim]


async def test_a_supervising_conductor_still_sees_a_held_claim(desk):
    topic, _ = await _debating_conductor(desk)
    claim = await _con_claim(desk, topic)
    read = await desk.call(COLE, "debate_read", topic_id=topic, role="PRO")
    assert claim in [m["msg_id"] for m in read["messages"]]


async def test_a_conductor_may_not_take_a_blind_role_once_the_other_claim_is_in(desk):
    con, judge = await desk.session(BOB), await desk.session(CAROL)
    topic = await desk.topic(
        BOB,
        {"CON": con, "PRO": None, "JUDGE": (CAROL, judge)},
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
        project="ops",
    )
    await _con_claim(desk, topic)
    session = await desk.session(COLE)
    body = await desk.bind(COLE, topic, "PRO", session, refused=True)
    assert body["error"] == "blind_barrier_pending"
    assert "CON's blind CLAIM is already in" in body["message"]
    assert "conductor scope" in body["message"]
    # A debater without the scope binds it.
    await desk.bind(DORA, topic, "PRO", await desk.session(DORA))


async def test_the_init_and_bind_replies_tell_a_conductor_that_it_debates(desk):
    pro = await desk.session(CONDUCTOR)
    out = await desk.call(
        CONDUCTOR,
        "debate_init",
        title="t",
        created_by_role="PRO",
        roles_json=json.dumps(
            [{"role": "PRO", "session_id": pro}, {"role": "CON", "session_id": None}]
        ),
        metadata_json=LANE,
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )
    told = "your principal has the conductor scope and now holds the blind role PRO"
    assert told in out.guidance
    assert "the other blind role's CLAIM is hidden from it" in out.guidance
    bound = await desk.bind(COLE, out["topic_id"], "CON", await desk.session(COLE))
    assert "conductor scope and now holds the blind role CON" in bound.guidance


async def test_a_supervising_conductor_is_not_told_to_retire_conductor_for_nothing(desk):
    # The tester's repro: the conductor that opened the topic as CONDUCTOR asked for the free
    # PRO seat after CON's CLAIM; ineligible_judge told it to "retire CONDUCTOR first", and
    # doing so only led to blind_barrier_pending, with the topic's CONDUCTOR seat given up.
    cole, con, judge = [await desk.session(w) for w in (COLE, BOB, CAROL)]
    topic = await desk.topic(
        COLE,
        {"CONDUCTOR": cole, "CON": (BOB, con), "PRO": None, "JUDGE": (CAROL, judge)},
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
        project="ops",
    )
    await _con_claim(desk, topic)
    body = await desk.bind(COLE, topic, "PRO", cole, refused=True)
    assert body["error"] == "blind_barrier_pending"
    assert "retire CONDUCTOR" not in body["message"]
    assert "CON's blind CLAIM is already in" in body["message"]
    # Before any CLAIM, retiring CONDUCTOR is a way that works, and it is still offered.
    other = await desk.topic(
        COLE,
        {"CONDUCTOR": cole, "CON": (BOB, con), "PRO": None},
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
        project="ops",
    )
    body = await desk.bind(COLE, other, "PRO", cole, refused=True)
    assert body["error"] == "ineligible_judge"
    assert "retire CONDUCTOR first" in body["message"]
