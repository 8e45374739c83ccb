"""A judging step out of its phase says which phase or step it needs (it answered an empty
``allowed`` list before: debate_judge_prepare outside ADJUDICATE, and a VERIFY or any other
semantic post in ADJUDICATE)."""

from __future__ import annotations

import json

import pytest
from debate_support import CAROL, CONDUCTOR, payload, v1_topic

NOWHERE = "00000000-0000-4000-8000-000000000000"


async def _prepare(v1, left=NOWHERE, right=NOWHERE):
    return await v1.desk.refused(
        CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=left, right_msg_id=right
    )


@pytest.mark.parametrize(
    ("reach", "phase", "words"),
    [
        pytest.param(None, "BLIND_CLAIM", "both blind roles' CLAIMs move it to DEBATE", id="blind"),
        pytest.param("to_debate", "DEBATE", "a VERIFY from a non-blind role", id="debate"),
    ],
)
async def test_prepare_outside_adjudicate_says_how_to_get_there(desk, reach, phase, words):
    v1 = await v1_topic(desk)
    if reach is not None:
        await getattr(v1, reach)()
    body = await _prepare(v1)
    assert (body["error"], body["phase"], body["needed_phase"]) == (
        "wrong_phase",
        phase,
        "ADJUDICATE",
    )
    assert "allowed" not in body
    assert words in body["message"]


async def test_prepare_after_the_debate_stopped_says_it_is_over(desk):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_adjudicate()
    prepared = await desk.call(
        CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=pro, right_msg_id=con
    )
    for p in prepared["projections"]:
        await desk.call(
            CAROL,
            "debate_judge_verdict",
            projection_id=p["projection_id"],
            judge_role="JUDGE",
            verdict_json=json.dumps({"winner_msg_id": pro, "decision": "PRO wins"}),
        )
    body = await _prepare(v1, pro, con)
    assert (body["phase"], body["needed_phase"]) == ("STOPPED", "ADJUDICATE")
    assert "judged no more" in body["message"]


async def test_a_post_in_adjudicate_names_the_judging_steps(desk):
    v1 = await v1_topic(desk)
    pro, _ = await v1.to_adjudicate()
    body = await desk.refused(
        CAROL,
        "debate_post",
        topic_id=v1.topic,
        role="JUDGE",
        priority="M",
        kind="VERIFY",
        body="again",
        reply_to=pro,
        payload_json=payload("again", result="verified"),
    )
    assert (body["error"], body["phase"]) == ("wrong_phase", "ADJUDICATE")
    assert body["next_steps"] == ["debate_judge_prepare", "debate_judge_verdict"]
    assert "allowed" not in body
    assert "debate_judge_prepare" in body["message"]
