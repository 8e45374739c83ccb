"""debate_bind_role in words that fit a caller acquiring a role.

A caller that may read the topic (it holds one of its roles, or the conductor scope) is told
what went wrong: a role another principal holds (and whom to ask), a session that is not its
own (`session_not_yours`, as debate_init says it), an undeclared role (`invalid_role`). One
that may not learn that the topic exists (a newcomer with the topic_id, a caller without the
project grant) gets one `unknown_topic` for every mistake, the same bytes as for a missing
topic, whose words cover a seat already taken and say whom to ask. When one principal holds
both blind roles of a debate/v1 topic, the bindings list and the move to ACTIVE say so; to the
conductor they name who holds each blind role and who may no longer judge (one that gave its
seat back included), and the reply that gives a blind seat back says it can no longer judge."""

from __future__ import annotations

import uuid

from debate_support import ALICE, BOB, CAROL, CONDUCTOR, OUTSIDER

V1 = {"protocol_version": "debate/v1", "blind_roles_csv": "PRO,CON"}


def guidance(result):
    """The second text block of a reply (`Guided`), or None."""
    return getattr(result, "guidance", None)


async def _open(desk):
    """An INIT v1 topic of the conductor with PRO, CON and JUDGE left free."""
    c = await desk.session(CONDUCTOR)
    roles = {"CONDUCTOR": c, "PRO": None, "CON": None, "JUDGE": None}
    return await desk.topic(CONDUCTOR, roles, state="INIT", **V1)


async def test_a_seat_taken_by_the_opponent_is_refused_saying_whom_to_ask(desk):
    topic = await _open(desk)
    mine = await desk.session(ALICE)
    await desk.bind(ALICE, topic, "PRO", mine)
    await desk.bind(ALICE, topic, "CON", mine)
    # The real CON arrives with the topic_id: holding no role there, it may not learn more
    # than a missing topic would tell it, but the words say what to do about a taken seat.
    bob = await desk.session(BOB)
    body = await desk.bind(BOB, topic, "CON", bob, refused=True)
    missing = await desk.bind(BOB, str(uuid.uuid4()), "CON", bob, refused=True)
    assert body == missing
    assert body["error"] == "unknown_topic"
    assert "already holds is not free" in body["message"]
    assert "ask the conductor" in body["message"]
    assert "one of your sessions holds the role" not in body["message"]
    # A participant of the topic (the judge, say) is told plainly.
    carol = await desk.session(CAROL)
    await desk.bind(CAROL, topic, "JUDGE", carol)
    body = await desk.bind(CAROL, topic, "CON", carol, refused=True)
    assert body["error"] == "duplicate_active"
    assert "already held by another session, of another principal" in body["message"]
    assert "ask the conductor" in body["message"]


async def test_the_conductor_is_told_that_one_principal_holds_both_blind_roles(desk):
    topic = await _open(desk)
    mine = await desk.session(ALICE)
    await desk.bind(ALICE, topic, "PRO", mine)
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "PRO by alice; CON is free" in guidance(listed)
    assert "held by one principal" not in guidance(listed)
    await desk.bind(ALICE, topic, "CON", mine)
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "both blind roles, PRO and CON, are held by one principal" in guidance(listed)
    assert 'state "retired"' in guidance(listed)
    moved = await desk.call(
        CONDUCTOR, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    assert "held by one principal" in guidance(moved)
    # The holder gives the seat back; the real debater takes it; the note is gone.
    # The conductor cannot retire it (no override on v1), and is told who can.
    body = await desk.bind(
        CONDUCTOR, topic, "CON", await desk.session(CONDUCTOR), state="retired", refused=True
    )
    assert body["error"] == "duplicate_active"
    assert "ask its holder (principal alice) to give it back" in body["message"]
    assert "only its holder can give it up" in body["message"]
    await desk.bind(ALICE, topic, "CON", mine, state="retired")
    await desk.bind(BOB, topic, "CON", await desk.session(BOB))
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "PRO by alice; CON by bob" in guidance(listed)
    assert "held by one principal" not in guidance(listed)
    # A debater reads the roster without the seats note (no principal is named to it).
    assert guidance(await desk.call(BOB, "debate_list_bindings", topic_id=topic)) is None


async def test_a_third_principal_in_a_blind_seat_is_shown_to_the_conductor(desk):
    # The tester's repro: the judge's agent bound CON by mistake. The real CON was told to ask
    # the conductor, the conductor to "ask its holder", and nothing the conductor could read
    # named that holder; the judge had silently become unable to judge.
    topic = await _open(desk)
    await desk.bind(ALICE, topic, "PRO", await desk.session(ALICE))
    carol = await desk.session(CAROL)
    await desk.bind(CAROL, topic, "CON", carol)
    body = await desk.bind(BOB, topic, "CON", await desk.session(BOB), refused=True)
    assert "ask the conductor" in body["message"]
    assert "debate_list_bindings names who holds each debate/v1 blind role" in body["message"]
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "held by principal (bearer token): PRO by alice; CON by carol" in guidance(listed)
    assert "can no longer judge this debate" in guidance(listed)
    assert "held by one principal" not in guidance(listed)
    moved = await desk.call(
        CONDUCTOR, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    assert "PRO by alice; CON by carol" in guidance(moved)
    body = await desk.bind(
        CONDUCTOR, topic, "CON", await desk.session(CONDUCTOR), state="retired", refused=True
    )
    assert "ask its holder (principal carol) to give it back" in body["message"]
    assert "bind another of the topic's free roles" not in body["message"]
    # A participant refused the seat is sent to the conductor, who can see the holder now.
    await desk.bind(ALICE, topic, "JUDGE", await desk.session(ALICE), refused=True)
    body = await desk.bind(ALICE, topic, "CON", await desk.session(ALICE), refused=True)
    assert body["error"] == "duplicate_active"
    assert "its debate_list_bindings names who holds each blind role" in body["message"]


async def test_another_principals_session_is_not_yours_as_debate_init_says(desk):
    topic = await _open(desk)
    await desk.bind(ALICE, topic, "PRO", await desk.session(ALICE))
    theirs = await desk.session(BOB)
    body = await desk.bind(ALICE, topic, "CON", theirs, refused=True)
    assert body["error"] == "session_not_yours"
    assert body["field"] == "session_id"
    nobodys = str(uuid.uuid4())
    missing = await desk.bind(ALICE, topic, "CON", nobodys, refused=True)
    assert missing["error"] == "session_not_yours"
    assert body["message"].replace(theirs, "S") == missing["message"].replace(nobodys, "S")


async def test_an_undeclared_role_is_named_with_the_declared_ones(desk):
    topic = await _open(desk)
    carol = await desk.session(CAROL)
    await desk.bind(CAROL, topic, "JUDGE", carol)
    body = await desk.bind(CAROL, topic, "REFEREE", carol, refused=True)
    assert body["error"] == "invalid_role"
    assert "REFEREE is not a role of this topic" in body["message"]
    assert "CONDUCTOR, PRO, CON, JUDGE" in body["message"]


async def test_a_stranger_gets_one_answer_for_every_mistake(desk):
    topic = await _open(desk)
    await desk.bind(ALICE, topic, "PRO", await desk.session(ALICE))
    dora, olga = await desk.session(CAROL), await desk.session(OUTSIDER)
    bodies = [
        await desk.bind(CAROL, topic, "REFEREE", dora, refused=True),
        await desk.bind(CAROL, topic, "CON", await desk.session(BOB), refused=True),
        await desk.bind(CAROL, topic, "PRO", dora, refused=True),
        await desk.bind(CAROL, str(uuid.uuid4()), "PRO", dora, refused=True),
        await desk.bind(OUTSIDER, topic, "CON", olga, refused=True),
    ]
    assert all(b == bodies[0] for b in bodies)
    assert bodies[0]["error"] == "unknown_topic"


async def test_a_seat_given_back_still_bars_its_principal_and_both_are_told(desk):
    # The tester's repro (t12 N2): the judge's agent took CON by mistake and gave it back as
    # told; the real CON took it. The conductor's roster then looked like a normal seating,
    # and nothing told the judge's agent, or its conductor, that it could no longer judge.
    topic = await _open(desk)
    carol = await desk.session(CAROL)
    await desk.bind(CAROL, topic, "CON", carol)
    back = await desk.bind(CAROL, topic, "CON", carol, state="retired")
    assert "gave back the blind role CON, and it can no longer judge this debate" in guidance(back)
    assert "ineligible_judge" in guidance(back)
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "PRO is free; CON is free" in guidance(listed)  # the seat is free, carol still named
    assert "held a blind role: carol (" in guidance(listed)
    await desk.bind(ALICE, topic, "PRO", await desk.session(ALICE))
    await desk.bind(BOB, topic, "CON", await desk.session(BOB))
    barred = "Barred from judging this debate, as holding or having held a blind role:"
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    assert "PRO by alice; CON by bob" in guidance(listed)
    assert f"{barred} alice, carol and bob" in guidance(listed)
    moved = await desk.call(
        CONDUCTOR, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    assert f"{barred} alice, carol and bob" in guidance(moved)
    body = await desk.bind(CAROL, topic, "JUDGE", carol, refused=True)
    assert body["error"] == "ineligible_judge"
    # A debater's roster names no principal; a retired seat of a role that is not blind
    # carries no such note.
    assert guidance(await desk.call(BOB, "debate_list_bindings", topic_id=topic)) is None
    dora = await desk.session(CONDUCTOR)
    await desk.bind(CONDUCTOR, topic, "JUDGE", dora)
    assert guidance(await desk.bind(CONDUCTOR, topic, "JUDGE", dora, state="retired")) is None
