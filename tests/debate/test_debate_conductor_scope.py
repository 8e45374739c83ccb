"""Conductor-only tools name the missing scope to a caller who can see the topic.

On a server with no ``[[principals]]`` every caller is the anonymous principal, which holds
the project ``local`` and never a scope: it can open a debate/v1 topic, hold every seat
(CONDUCTOR included) and drive it to ADJUDICATE, but it can never run the conductor-only
steps. Those answer ``conductor_required`` with a message that says how to get the scope,
not ``unknown_topic`` (the caller holds the role and sees the topic, so the not-found answer
only misled). A caller who cannot see the topic still gets the not-found answer, byte for
byte what a missing topic gives: the scope check never becomes an existence oracle.
"""

from __future__ import annotations

import json

import pytest
from debate_support import ALICE, CONDUCTOR, OUTSIDER, STAR, legacy_topic, payload

from agora.identity import Principal

#: The tokenless caller of a server with no [[principals]] (`Config.anonymous`).
ANONYMOUS = Principal(projects=frozenset({"local"}))
#: Another server's-worth of stranger: a principal granted a project the topic is not in.
NOWHERE = "00000000-0000-4000-8000-00000000dead"
SEATS = ("CONDUCTOR", "PRO", "CON", "JUDGE")


async def _solo(desk, who=ANONYMOUS):
    """A debate/v1 topic in ADJUDICATE where ``who`` holds every seat: (topic, sessions,
    PRO's claim, CON's claim)."""
    sessions = {role: await desk.session(who) for role in SEATS}
    roster = [{"role": r, "session_id": sessions[r]} for r in SEATS]
    init = await desk.call(
        who,
        "debate_init",
        title="solo",
        created_by_role="CONDUCTOR",
        roles_json=json.dumps(roster),
        metadata_json='{"priority_lane": "P2", "priority_reason": "solo"}',
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )
    topic = init["topic_id"]
    await desk.call(who, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")

    async def post(role, kind, **args):
        args.setdefault("payload_json", payload(f"{role} {kind}"))
        out = await desk.call(
            who, "debate_post", topic_id=topic, role=role, priority="M", kind=kind,
            body=f"{role} {kind}", **args,
        )  # fmt: skip
        return out["msg_id"]

    pro, con = await post("PRO", "CLAIM"), await post("CON", "CLAIM")
    await post("JUDGE", "VERIFY", reply_to=pro, payload_json=payload("ok", result="verified"))
    state = await desk.call(who, "debate_protocol_state", topic_id=topic)
    assert state["phase"] == "ADJUDICATE"
    return topic, sessions, pro, con


def _calls(topic, session, pro, con):
    """Every conductor-only call on ``topic`` (tool, arguments)."""
    return [
        ("debate_judge_prepare", {"topic_id": topic, "left_msg_id": pro, "right_msg_id": con}),
        ("debate_add_role", {"topic_id": topic, "role": "EXECUTOR_1", "session_id": session}),
        ("debate_reconcile_project", {"topic_id": topic, "project": "local"}),
    ]


def _says_how(body):
    """The refusal names the scope and where it is configured."""
    assert body["error"] == "conductor_required", body
    assert 'scopes include "conductor"' in body["message"], body
    assert "[[principals]]" in body["message"], body


async def test_the_anonymous_conductor_is_told_it_lacks_the_conductor_scope(desk):
    topic, sessions, pro, con = await _solo(desk)
    for tool, args in _calls(topic, sessions["CONDUCTOR"], pro, con):
        _says_how(await desk.refused(ANONYMOUS, tool, **args))
    _says_how(await desk.refused(ANONYMOUS, "debate_protocol_maintain"))
    _says_how(await desk.refused(ANONYMOUS, "debate_protocol_maintain", topic_ids_csv=topic))
    state = await desk.call(ANONYMOUS, "debate_protocol_state", topic_id=topic)
    assert state["phase"] == "ADJUDICATE"  # nothing moved


async def test_a_seated_participant_and_a_star_caller_get_conductor_required(desk):
    topic, sessions, pro, con = await _solo(desk, ALICE)
    for tool, args in _calls(topic, sessions["CONDUCTOR"], pro, con):
        _says_how(await desk.refused(ALICE, tool, **args))
    # Star sees every topic but is no conductor; it may grow a roster (add_role).
    for tool, args in _calls(topic, await desk.session(STAR), pro, con):
        if tool != "debate_add_role":
            _says_how(await desk.refused(STAR, tool, **args))
    # The conductor passes the scope gate (and meets the tool's own rules).
    mine = await desk.session(CONDUCTOR)
    added = await desk.call(
        CONDUCTOR, "debate_add_role", topic_id=topic, role="EXECUTOR_1", session_id=mine
    )
    assert added["added_role"] is True


@pytest.mark.parametrize("who", [ALICE, OUTSIDER], ids=["same-project", "other-project"])
async def test_a_caller_who_cannot_see_the_topic_gets_the_missing_topics_answer(desk, who):
    # ANONYMOUS's topic is in project "local": alice (ops, not seated) and olga cannot see it.
    topic, _, pro, con = await _solo(desk)
    session = await desk.session(who)
    for (tool, args), (_, missing) in zip(
        _calls(topic, session, pro, con), _calls(NOWHERE, session, pro, con), strict=True
    ):
        seen = await desk.refused(who, tool, **args)
        assert seen == await desk.refused(who, tool, **missing), tool
        assert seen["error"] != "conductor_required", tool


async def test_a_legacy_topic_denies_everyone_but_a_conductor_alike(desk):
    # A sentinel topic denies everyone (its owner too): reconcile stays uniform.
    session = await desk.session(ALICE)
    topic = await legacy_topic(desk, "00000000-0000-4000-8000-0000000000aa", session)
    seen = await desk.refused(ALICE, "debate_reconcile_project", topic_id=topic, project="ops")
    missing = await desk.refused(ALICE, "debate_reconcile_project", topic_id=NOWHERE, project="ops")
    assert seen == missing
