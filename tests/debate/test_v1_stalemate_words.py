"""What the replies say around a debate/v1 STALEMATE: which post ends it, and who closes it.

Agents read the JSON of a reply and acted on it: in STALEMATE a debate_escalate wrote its
PING and the phase stayed STALEMATE, with no word, so the agent believed it had escalated.
"""

from __future__ import annotations

from debate_support import ALICE, payload, v1_topic


async def _stalemate(desk):
    """A v1 topic at its round cap, unresolved: STALEMATE round_cap_unresolved."""
    v1 = await v1_topic(desk, max_rounds=1)
    pro, _ = await v1.to_debate()
    await v1.post("JUDGE", "VERIFY", reply_to=pro, payload_json=payload("?", result="unknown"))
    return v1


async def test_debate_escalate_in_stalemate_says_it_wrote_a_ping(desk):
    # The contract keeps debate_escalate's PING apart from the ESCALATE kind: the reply says
    # which one ends the stalemate.
    v1 = await _stalemate(desk)
    args = {"topic_id": v1.topic, "role": "PRO", "reason": "needs a human"}
    out = await desk.call(ALICE, "debate_escalate", **args, target_role="HUMAN")
    assert out.guidance.startswith(
        "This wrote an urgent (H) PING addressed to HUMAN, not a debate/v1 ESCALATE: the debate"
        " stays in STALEMATE (round_cap_unresolved)."
    )
    assert "post kind ESCALATE addressed to HUMAN or OPERATOR" in out.guidance
    assert (await v1.state())["phase"] == "STALEMATE"
