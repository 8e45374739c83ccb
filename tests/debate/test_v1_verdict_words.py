"""debate_judge_verdict refusals that say what a verdict must name.

A wrong winner answered "winner_msg_id names one of the projection's positions", a statement
that listed neither position although the server had both; {"winner": "PRO", ...} answered
"verdict.winner_msg_id must be a non-empty string", without saying that a role name is not
accepted.
"""

from __future__ import annotations

import json

from debate_support import CAROL, CONDUCTOR, v1_topic


async def _projection(desk):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_adjudicate()
    args = {"topic_id": v1.topic, "left_msg_id": pro, "right_msg_id": con}
    ab, _ = (await desk.call(CONDUCTOR, "debate_judge_prepare", **args))["projections"]
    return ab["projection_id"], pro, con


async def _refused(desk, projection, verdict):
    return await desk.refused(
        CAROL,
        "debate_judge_verdict",
        projection_id=projection,
        judge_role="JUDGE",
        verdict_json=json.dumps(verdict),
    )


async def test_a_wrong_winner_lists_the_two_positions(desk):
    projection, pro, con = await _projection(desk)
    body = await _refused(desk, projection, {"winner_msg_id": "PRO", "decision": "PRO wins"})
    assert body["error"] == "invalid_verdict"
    assert f"{pro} (PRO's CLAIM) or {con} (CON's CLAIM)" in body["message"]
    assert "a role name is not accepted" in body["message"]
    assert body["allowed"] == [pro, con]


async def test_a_role_named_as_winner_is_told_to_name_a_msg_id(desk):
    projection, _, _ = await _projection(desk)
    body = await _refused(desk, projection, {"winner": "PRO", "decision": "PRO wins"})
    assert body["error"] == "invalid_verdict"
    assert body["message"].startswith("verdict.winner_msg_id must be a non-empty string: the")
    assert "a role name" in body["message"]
    assert "is not accepted" in body["message"]
