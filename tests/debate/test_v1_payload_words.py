"""debate/v1 payload_json refusals that say what arrived and what is required.

A payload_json encoded twice (a JSON string holding the object, a common model mistake) was
refused "payload_json must be a JSON object" without saying that a string holding JSON
arrived; a payload without its arrays read "payload.assumptions must be an array" although
README said the arrays "may be empty", which reads as if they may be left out.
"""

from __future__ import annotations

import json

from debate_support import payload, v1_topic


async def test_a_twice_encoded_payload_is_named_as_such(desk):
    v1 = await v1_topic(desk)
    body = await v1.refused("PRO", "CLAIM", payload_json=json.dumps(payload("twice")))
    assert body["error"] == "invalid_json"
    assert "a string holding JSON arrived" in body["message"]
    assert "encoded twice" in body["message"]
    # A plain string that holds no object keeps the short words.
    body = await v1.refused("PRO", "CLAIM", payload_json=json.dumps("tabs"))
    assert body["message"] == "payload_json must be a JSON object"


async def test_the_two_arrays_are_required_and_may_be_empty(desk):
    v1 = await v1_topic(desk)
    body = await v1.refused("PRO", "CLAIM", payload_json=json.dumps({"summary": "tabs"}))
    assert body["error"] == "invalid_payload"
    assert body["message"] == "payload.assumptions is required (may be empty: [])"
    body = await v1.refused(
        "PRO",
        "CLAIM",
        payload_json=json.dumps({"summary": "s", "assumptions": [], "evidence_refs": 1}),
    )
    assert body["message"] == "payload.evidence_refs must be an array (may be empty: [])"
