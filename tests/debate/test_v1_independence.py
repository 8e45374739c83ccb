"""debate/v1 judge independence: one principal never holds a blind role and a judging role.

The contract: "the judge role must be an active declared participant outside the blind
pair". Independence goes by principal, not by session: a debater binding the judge role
with a second session of its own is the same judge as its blind seat.
"""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, payload

from agora.identity import Principal
from agora.mcp.results import Guided

#: Every caller without a token is this one principal.
ANONYMOUS = Principal(projects=frozenset({"ops"}))


async def _open_topic(desk, seats):
    """A v1 topic (blind PRO and CON) of the conductor; ``seats`` maps each role to the
    principal that binds it after creation, or None to leave it unbound."""
    roles = {"CONDUCTOR": await desk.session(CONDUCTOR)}
    for role, who in seats.items():
        roles[role] = None if who is None else (who, await desk.session(who))
    return await desk.topic(
        CONDUCTOR, roles, protocol_version="debate/v1", blind_roles_csv="PRO,CON"
    )


async def _holders(desk, topic):
    out = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=topic)
    return {b["role"] for b in out["bindings"] if b["state"] == "active"}


@pytest.mark.parametrize(
    ("who", "held", "role", "seats", "then"),
    [
        pytest.param(
            BOB, "CON", "JUDGE", {"PRO": ALICE, "CON": BOB, "JUDGE": None}, CAROL, id="judge"
        ),
        pytest.param(
            CAROL, "JUDGE", "CON", {"PRO": ALICE, "CON": None, "JUDGE": CAROL}, BOB, id="blind"
        ),
        pytest.param(
            ANONYMOUS,
            "PRO",
            "JUDGE",
            {"PRO": ANONYMOUS, "CON": BOB, "JUDGE": None},
            CAROL,
            id="tokenless-callers-are-one-principal",
        ),
    ],
)
async def test_a_principal_cannot_bind_both_a_blind_role_and_a_judging_role(
    desk, who, held, role, seats, then
):
    topic = await _open_topic(desk, seats)
    second = await desk.session(who)  # a session of its own: still the same principal
    body = await desk.bind(who, topic, role, second, refused=True)
    assert (body["error"], body["role"], body["held_role"]) == ("ineligible_judge", role, held)
    assert "independent of the blind pair" in body["message"]
    assert "bearer token" in body["message"]
    assert role not in await _holders(desk, topic)
    await desk.bind(then, topic, role, await desk.session(then))  # a principal of its own
    assert role in await _holders(desk, topic)


async def test_a_judge_sharing_a_principal_with_a_blind_role_gives_no_verdict(desk):
    # The conductor seeds PRO and JUDGE on two sessions of its own at creation: no bind is
    # refused, so the verdict is where independence is checked.
    mine = {role: await desk.session(CONDUCTOR) for role in ("CONDUCTOR", "PRO", "JUDGE")}
    topic = await desk.topic(
        CONDUCTOR,
        {**mine, "CON": (BOB, await desk.session(BOB))},
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )

    async def post(who, role, kind, **args):
        args.setdefault("payload_json", payload(f"{role} {kind}"))
        return await desk.call(
            who, "debate_post", topic_id=topic, role=role, priority="M", kind=kind, body="x", **args
        )

    pro = (await post(CONDUCTOR, "PRO", "CLAIM"))["msg_id"]
    con = (await post(BOB, "CON", "CLAIM"))["msg_id"]
    await post(
        CONDUCTOR, "JUDGE", "VERIFY", reply_to=pro, payload_json=payload("ok", result="verified")
    )
    added = await desk.refused(
        CONDUCTOR,
        "debate_add_role",
        topic_id=topic,
        role="JUDGE_TWO",
        session_id=await desk.session(CONDUCTOR),
    )
    assert (added["error"], added["held_role"]) == ("ineligible_judge", "PRO")
    prepared = await desk.call(
        CONDUCTOR, "debate_judge_prepare", topic_id=topic, left_msg_id=pro, right_msg_id=con
    )

    async def verdicts_refused() -> list[dict]:
        bodies = []
        for projection in prepared["projections"]:
            body = await desk.refused(
                CONDUCTOR,
                "debate_judge_verdict",
                projection_id=projection["projection_id"],
                judge_role="JUDGE",
                verdict_json=json.dumps({"winner_msg_id": pro, "decision": "PRO wins"}),
            )
            assert (body["error"], body["held_role"]) == ("ineligible_judge", "PRO")
            bodies.append(body)
        return bodies

    for body in await verdicts_refused():
        assert "independent of the blind pair" in body["message"]
        assert "retire" not in body["message"]  # (it advised retiring PRO: below)
    # A tester's finding: retiring PRO, as the refusal advised, made the verdicts count, on
    # the PRO claim the same principal wrote. A principal that held a blind role stays out.
    await desk.bind(CONDUCTOR, topic, "PRO", mine["PRO"], state="retired")
    await verdicts_refused()
    state = await desk.call(CONDUCTOR, "debate_protocol_state", topic_id=topic)
    assert (state["phase"], state["outcome"]) == ("ADJUDICATE", None)


async def test_a_debater_that_retires_its_blind_role_still_cannot_bind_a_judging_one(desk):
    """A tester's finding: pro retired its own PRO binding (no sanction needed) after its
    CLAIM, bound the free JUDGE with a second session and judged its own claim the winner."""
    topic = await _open_topic(desk, {"PRO": ALICE, "CON": BOB, "JUDGE": None})
    bindings = await desk.call(ALICE, "debate_list_bindings", topic_id=topic)
    [pro] = [b for b in bindings["bindings"] if b["role"] == "PRO" and b["state"] == "active"]
    await desk.bind(ALICE, topic, "PRO", pro["session_id"], state="retired")
    body = await desk.bind(ALICE, topic, "JUDGE", await desk.session(ALICE), refused=True)
    assert (body["error"], body["held_role"]) == ("ineligible_judge", "PRO")
    assert "retiring PRO does not make it so" in body["message"]
    await desk.bind(CAROL, topic, "JUDGE", await desk.session(CAROL))  # one that never did


async def test_a_conductor_override_on_a_v1_topic_says_there_is_none_and_what_does_the_job(desk):
    """A tester's finding: an override must cite a CONDUCTOR DECISION, which a debate/v1
    topic refuses (a legacy kind), so every override on v1 was refused with words about a
    DECISION that cannot exist there, and the agent went round between the two refusals."""
    topic = await _open_topic(desk, {"PRO": ALICE, "CON": BOB, "JUDGE": CAROL})
    state = await desk.call(CONDUCTOR, "debate_protocol_state", topic_id=topic)
    body = await desk.refused(
        CONDUCTOR,
        "debate_bind_role",
        topic_id=topic,
        role="PRO",
        session_id=await desk.session(CONDUCTOR),
        replace_active=True,
        conductor_override_msg_id=state["topic_id"],
    )
    assert body["error"] == "invalid_override", body
    assert "debate/v1 topic does not take" in body["message"]
    assert "debate_protocol_maintain" in body["message"]


async def test_debate_init_notes_a_roster_whose_judge_cannot_be_independent(desk):
    """A tester's note: debate_init seeded one principal with PRO and JUDGE (which a bind
    refuses) without a word; the agent learnt it at verdict time."""
    mine = {role: await desk.session(CONDUCTOR) for role in ("CONDUCTOR", "PRO", "JUDGE")}
    entries = [{"role": r, "session_id": s} for r, s in mine.items()]
    entries.append({"role": "CON", "session_id": None})
    args = {
        "title": "t", "created_by_role": "CONDUCTOR", "roles_json": json.dumps(entries),
        "metadata_json": json.dumps({"priority_lane": "P2", "priority_reason": "r"}),
        "protocol_version": "debate/v1", "blind_roles_csv": "PRO,CON",
    }  # fmt: skip
    seeded = await desk.call(CONDUCTOR, "debate_init", **args)
    assert type(seeded) is Guided, seeded
    assert seeded.guidance.startswith(
        "Note: your principal now holds the blind role PRO, and also CONDUCTOR and JUDGE, roles"
        " that may judge: "
    )
    # Every role it holds is named: an anonymous all-roles roster left CON out.
    every = [{"role": r} for r in ("CONDUCTOR", "PRO", "CON", "JUDGE")]
    alone = await desk.call(ALICE, "debate_init", **{**args, "roles_json": json.dumps(every)})
    assert alone.guidance.startswith(
        "Note: your principal now holds the blind roles PRO and CON, and also CONDUCTOR and"
        " JUDGE, roles that may judge: "
    )
    fair = [{"role": "CONDUCTOR", "session_id": mine["CONDUCTOR"]}] + [
        {"role": r, "session_id": None} for r in ("PRO", "CON", "JUDGE")
    ]
    plain = await desk.call(CONDUCTOR, "debate_init", **{**args, "roles_json": json.dumps(fair)})
    assert not plain.guidance.startswith("Note:")  # only the next step: INIT, to activate
    assert plain.guidance.startswith("Next: the topic is INIT")


async def test_holding_both_blind_roles_is_allowed_and_said(desk):
    """A tester's note: one principal bound PRO, then CON (or debate_init minted both), with no
    word that neither CLAIM is then hidden from it; one user may play both sides to try the
    server, so it is not refused, but the reply says so."""
    topic = await _open_topic(desk, {"PRO": None, "CON": None})
    session = await desk.session(ALICE)
    first = await desk.bind(ALICE, topic, "PRO", session)
    assert "not blind" not in first.guidance
    both = await desk.bind(ALICE, topic, "CON", session)
    assert both.guidance.startswith(
        "Note: your principal now holds both blind roles, PRO and CON, so their claims are not"
        " blind: "
    )
    entries = [{"role": "PRO"}, {"role": "CON"}]
    args = {
        "title": "t", "created_by_role": "PRO", "roles_json": json.dumps(entries),
        "metadata_json": json.dumps({"priority_lane": "P2", "priority_reason": "r"}),
        "protocol_version": "debate/v1", "blind_roles_csv": "PRO,CON",
    }  # fmt: skip
    minted = await desk.call(ALICE, "debate_init", **args)
    assert minted.guidance.startswith("Note: your principal now holds both blind roles, PRO and")
    # Another principal's CON: blind again, and no note.
    other = await _open_topic(desk, {"PRO": ALICE, "CON": None})
    fair = await desk.bind(BOB, other, "CON", await desk.session(BOB))
    assert "not blind" not in fair.guidance
