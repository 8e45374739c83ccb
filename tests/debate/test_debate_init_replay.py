"""A repeated debate_init answers as the caller may see the topic, as it stands now.

A participant that replayed the creator's debate_init (the same arguments and the topic_id)
saw the creator's session ids in seeded_bindings, marked minted although nothing was minted
for it (a session id is shown only to its owner and to star callers), and the reply's
"Next:" note was the one of the topic's creation: BLIND_CLAIM still waited for the CLAIM of
both blind roles after one of them was in.
"""

from __future__ import annotations

import json

from debate_support import ALICE, BOB, CONDUCTOR, CONTRACT, LANE, STAR, payload


async def _v1_topic(desk) -> tuple[dict[str, str], dict[str, str]]:
    """A v1 topic of cora: CONDUCTOR and JUDGE seeded on sessions minted for her, PRO and
    CON left unbound and then bound by alice and bob. Returns debate_init's arguments (with
    the topic_id) and the session of each role."""
    roles = [{"role": "CONDUCTOR"}, {"role": "JUDGE"}]
    roles += [{"role": r, "session_id": None} for r in ("PRO", "CON")]
    args = {
        "title": "replayed",
        "created_by_role": "CONDUCTOR",
        "roles_json": json.dumps(roles),
        "metadata_json": LANE,
        "protocol_version": "debate/v1",
        "blind_roles_csv": "PRO,CON",
        "project": "ops",  # (star holds no grant that would name it)
    }
    out = await desk.call(CONDUCTOR, "debate_init", **args)
    args["topic_id"] = out["topic_id"]
    sessions = {b["role"]: b["session_id"] for b in out["seeded_bindings"]}
    for who, role in ((ALICE, "PRO"), (BOB, "CON")):
        sessions[role] = await desk.session(who)
        await desk.bind(who, out["topic_id"], role, sessions[role])
    return args, sessions


async def test_a_replay_shows_session_ids_to_their_owner_and_star_only(desk):
    args, sessions = await _v1_topic(desk)
    mine = [
        {"role": r, "session_id": sessions[r], "generation": 1, "minted": True}
        for r in ("CONDUCTOR", "JUDGE")
    ]
    assert (await desk.call(CONDUCTOR, "debate_init", **args))["seeded_bindings"] == mine
    hidden = [{**b, "session_id": None, "minted": False} for b in mine]
    assert (await desk.call(BOB, "debate_init", **args))["seeded_bindings"] == hidden
    shown = [{**b, "minted": False} for b in mine]  # star sees them; none was minted for it
    assert (await desk.call(STAR, "debate_init", **args))["seeded_bindings"] == shown


async def test_a_replay_says_the_next_step_of_the_topic_as_it_stands(desk):
    args, _ = await _v1_topic(desk)
    await desk.call(
        CONDUCTOR, "debate_state", topic_id=args["topic_id"], role="CONDUCTOR", new_state="ACTIVE"
    )
    await desk.post(ALICE, args["topic_id"], "PRO", kind="CLAIM", to="CON", payload_json=payload())
    again = await desk.call(CONDUCTOR, "debate_init", **args)
    assert again["state"] == "ACTIVE"
    assert "Next: BLIND_CLAIM waits for the CLAIM of CON (" in again.guidance


async def test_a_repeat_without_its_topic_id_is_a_new_topic_as_the_tool_says(desk):
    # A tester's note: the description said "idempotent on identical shape", but a repeat
    # without topic_id created a second topic; the description now says which repeat is one.
    args, _ = await _v1_topic(desk)
    first = args.pop("topic_id")
    again = await desk.call(CONDUCTOR, "debate_init", **args)
    assert again["topic_id"] != first
    said = CONTRACT.tools["debate_init"].description
    assert "for a repeat that names its topic_id" in said
    assert "without topic_id, every call creates a new topic" in said
