"""debate/v1 order-swap judging: debate_judge_prepare and debate_judge_verdict."""

from __future__ import annotations

import json

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, MALLORY, STAR, payload, v1_topic


async def _counts(desk):
    def read(conn):
        tables = ("debate_judge_projections", "debate_history", "debate_messages")
        counts = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables]
        return (*counts, conn.execute("SELECT * FROM debate_protocol").fetchall())

    return await desk.runtime.read(read)


async def _moves(desk, topic):
    rows = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT detail FROM debate_history WHERE topic_id = ? AND event = 'protocol_moved'",
            (topic,),
        ).fetchall()
    )
    return [json.loads(r[0])["new_phase"] for r in rows]


@pytest.fixture
async def judged(desk):
    """A v1 topic in ADJUDICATE with the two blind CLAIMs and a CHALLENGE."""
    v1 = await v1_topic(desk)
    pro, con = await v1.to_adjudicate()
    return v1, pro, con


async def _prepare(desk, v1, left, right, who=CONDUCTOR, *, refused=False):
    """debate_judge_prepare of ``left`` and ``right``; with ``refused`` it must fail, and its
    error body is returned."""
    use = desk.refused if refused else desk.call
    return await use(
        who, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=left, right_msg_id=right
    )


def _verdict(winner, decision="adopt"):
    return json.dumps({"winner_msg_id": winner, "decision": decision})


async def _judge(
    desk,
    projection,
    winner,
    *,
    role="JUDGE",
    who=CAROL,
    decision="adopt",
    verdict=None,
    refused=False,
):
    """debate_judge_verdict of ``role`` naming ``winner`` (or the raw ``verdict`` text); with
    ``refused`` it must fail, and its error body is returned."""
    use = desk.refused if refused else desk.call
    return await use(
        who,
        "debate_judge_verdict",
        projection_id=projection,
        judge_role=role,
        verdict_json=_verdict(winner, decision) if verdict is None else verdict,
    )


async def test_prepare_makes_immutable_ab_and_ba_projections(desk, judged):
    v1, pro, con = judged
    out = await _prepare(desk, v1, pro, con)
    ab, ba = out["projections"]
    assert (ab["order_key"], ba["order_key"]) == ("AB", "BA")
    assert [p["msg_id"] for p in ab["positions"]] == [pro, con]
    assert [p["msg_id"] for p in ba["positions"]] == [con, pro]
    assert ab["positions"][0]["summary"] == "PRO CLAIM"
    assert ab["round_no"] == ba["round_no"] == 1
    assert ab["protocol_version"] == "debate/v1"
    before = await _counts(desk)
    assert await _prepare(desk, v1, pro, con) == out
    assert await _counts(desk) == before
    swapped = await _prepare(desk, v1, con, pro, refused=True)
    assert swapped["error"] == "projection_conflict"
    # The same pair in the other order: not "another pair" (as the message said).
    assert f"these two positions in the other order (AB: {pro} first)" in swapped["message"]
    assert await _counts(desk) == before


@pytest.mark.parametrize(
    ("case", "code"),
    [
        pytest.param("participant", "unknown_topic", id="not-conductor"),
        pytest.param("star", "unknown_topic", id="star-is-not-conductor"),
        pytest.param("unknown-msg", "unknown_msg_id", id="unknown-message"),
        pytest.param("wrong-kind", "invalid_position_kind", id="wrong-kind"),
        pytest.param("same-role", "positions_not_opposing", id="same-role"),
        pytest.param("same-msg", "positions_not_opposing", id="same-message"),
        pytest.param("wrong-phase", "wrong_phase", id="wrong-phase"),
    ],
)
async def test_prepare_rejections_change_nothing(desk, case, code):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_debate()
    if case != "wrong-phase":
        challenge = await v1.post("CON", "CHALLENGE", reply_to=pro)
        await v1.post("PRO", "REBUT", reply_to=challenge["msg_id"])
        await v1.post("CON", "CLAIM")
        await v1.post(
            "JUDGE", "VERIFY", reply_to=pro, payload_json=payload("ok", result="verified")
        )
    who, left, right = CONDUCTOR, pro, con
    if case == "participant":
        who = ALICE
    elif case == "star":
        who = STAR
    elif case == "unknown-msg":
        right = "00000000-0000-4000-8000-000000000000"
    elif case == "wrong-kind":
        right = challenge["msg_id"]
    elif case == "same-role":
        right = (await desk.call(BOB, "debate_read", topic_id=v1.topic, role="CON"))["messages"][
            -2
        ]["msg_id"]
        left = con
    elif case == "same-msg":
        right = pro
    before = await _counts(desk)
    body = await _prepare(desk, v1, left, right, who, refused=True)
    assert body["error"] == code, body
    assert await _counts(desk) == before


async def test_agreeing_verdicts_stop_the_debate(desk, judged):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    first = await _judge(desk, ab["projection_id"], pro)
    assert (first["complete"], first["stable"]) == (False, None)
    assert first["protocol_state"]["phase"] == "ADJUDICATE"
    # The reference client sends the verdict as a JSON string inside JSON.
    second = await _judge(desk, ba["projection_id"], None, verdict=json.dumps(_verdict(pro)))
    assert (second["complete"], second["stable"]) == (True, True)
    state = second["protocol_state"]
    assert (state["phase"], state["stalemate_reason"], state["phase_deadline_at"]) == (
        "STOPPED",
        None,
        None,
    )
    assert await v1.state() == state
    assert (await v1.refused("PRO", "CLAIM"))["error"] == "protocol_terminal"


async def test_judges_find_their_projections_and_everyone_reads_the_outcome(desk, judged):
    v1, pro, con = judged
    before = await v1.state(CAROL)
    assert (before["projections"], before["outcome"]) == ([], None)
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    # The judge learns the projection ids (and positions, in order) from the state.
    listed = (await v1.state(CAROL))["projections"]
    assert [(p["projection_id"], p["order_key"]) for p in listed] == [
        (ab["projection_id"], "AB"),
        (ba["projection_id"], "BA"),
    ]
    assert [p["positions"] for p in listed] == [ab["positions"], ba["positions"]]
    assert [(p["judged"], p["verdict"], p["judge_role"]) for p in listed] == [
        (False, None, None)
    ] * 2
    first = await _judge(desk, ab["projection_id"], pro, decision="adopt PRO")
    assert first["outcome"] is None
    # One order judged: its verdict stays hidden until the other order is judged too.
    half = (await v1.state(CAROL))["projections"]
    assert [(p["judged"], p["verdict"], p["judge_role"]) for p in half] == [
        (True, None, "JUDGE"),
        (False, None, None),
    ]
    second = await _judge(desk, ba["projection_id"], pro, decision="adopt PRO")
    outcome = {
        "round_no": 1,
        "winner_msg_id": pro,
        "winner_role": "PRO",
        "decision": "adopt PRO",
        "judge_role": "JUDGE",
        "decided_at": second["protocol_state"]["updated_at"],
        "closed_early": False,
    }
    assert second["outcome"] == outcome
    for who in (CONDUCTOR, ALICE, BOB, CAROL):
        state = await v1.state(who)
        assert (state["phase"], state["outcome"]) == ("STOPPED", outcome)
        verdict = {"winner_msg_id": pro, "decision": "adopt PRO"}
        assert [p["verdict"] for p in state["projections"]] == [verdict, verdict]


async def test_a_split_has_no_outcome_but_shows_both_verdicts(desk, judged):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    await _judge(desk, ab["projection_id"], pro)
    out = await _judge(desk, ba["projection_id"], con)
    assert out["outcome"] is None
    state = await v1.state(ALICE)
    assert (state["phase"], state["outcome"]) == ("STALEMATE", None)
    assert [p["verdict"]["winner_msg_id"] for p in state["projections"]] == [pro, con]


async def test_split_verdicts_are_a_stalemate(desk, judged):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    await _judge(desk, ab["projection_id"], pro)
    out = await _judge(desk, ba["projection_id"], con)
    assert (out["complete"], out["stable"]) == (True, False)
    assert out.guidance.startswith("The two verdicts name different winners: ")
    state = out["protocol_state"]
    assert (state["phase"], state["stalemate_reason"]) == (
        "STALEMATE",
        "judge_order_swap_disagreement",
    )
    await v1.post("PRO", "DISSENT")


async def test_same_winner_with_another_decision_is_a_split(desk, judged):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    await _judge(desk, ab["projection_id"], pro, decision="adopt")
    out = await _judge(desk, ba["projection_id"], pro, decision="adopt with changes")
    assert out["protocol_state"]["phase"] == "STALEMATE"
    # Newcomer finding: nothing told the judge why the same winner twice was a split.
    why, then = out.guidance.split("\n")
    assert why == (
        "The two verdicts name the same winner but different decisions ('adopt' and 'adopt"
        " with changes'): verdicts agree only when winner_msg_id and decision are both equal,"
        " so this pair moved the debate to STALEMATE (judge_order_swap_disagreement)."
    )
    assert then.startswith("The protocol is in STALEMATE (judge_order_swap_disagreement):")


async def test_verdict_rejections(desk, judged):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    second_judge = await desk.session(CONDUCTOR)
    await desk.call(
        CONDUCTOR, "debate_add_role", topic_id=v1.topic, role="JUDGE_TWO", session_id=second_judge
    )
    pid = ab["projection_id"]
    before = await _counts(desk)
    unowned = await _judge(desk, pid, pro, who=BOB, refused=True)
    unknown = await _judge(desk, "00000000-0000-4000-8000-000000000000", pro, refused=True)
    assert unowned == unknown
    assert unknown["error"] == "unknown_topic"
    assert "projection_id" in unknown["message"]  # the tool takes no topic_id to check
    for who, role in ((ALICE, "PRO"), (MALLORY, "HUMAN")):
        body = await _judge(desk, pid, pro, role=role, who=who, refused=True)
        assert body["error"] == "ineligible_judge"
        assert body["message"].startswith("the judge role must be")  # (it read "is": a fact)
    for bad in ("[]", "{]", json.dumps({"winner_msg_id": pro}), _verdict(ab["topic_id"])):
        body = await _judge(desk, pid, None, verdict=bad, refused=True)
        assert body["error"] == "invalid_verdict"
    assert await _counts(desk) == before
    await _judge(desk, pid, pro)
    again = await _judge(desk, pid, pro)
    assert again["complete"] is False
    conflict = await _judge(desk, pid, con, refused=True)
    assert conflict["error"] == "verdict_conflict"
    # Another judge role, even agreeing word for word: the pair already has its judge role.
    second = await _judge(desk, pid, pro, role="JUDGE_TWO", who=CONDUCTOR, refused=True)
    assert second["error"] == "judge_role_mismatch"
    assert "JUDGE" in second["message"]
    other = await _judge(
        desk, ba["projection_id"], pro, role="JUDGE_TWO", who=CONDUCTOR, refused=True
    )
    assert other["error"] == "judge_role_mismatch"
    assert (await v1.state())["phase"] == "ADJUDICATE"


@pytest.mark.parametrize(("split", "phase"), [(False, "STOPPED"), (True, "STALEMATE")])
async def test_concurrent_verdicts_apply_exactly_once(desk, judged, split, phase):
    v1, pro, con = judged
    ab, ba = (await _prepare(desk, v1, pro, con))["projections"]
    version = (await v1.state())["transition_version"]
    results = []

    async def give(pid, winner):
        results.append(await _judge(desk, pid, winner))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(give, ab["projection_id"], pro)
                nursery.start_soon(give, ba["projection_id"], con if split else pro)
    assert len(results) == 6
    state = await v1.state()
    assert state["phase"] == phase
    assert state["transition_version"] == version + 1
    assert (await _moves(desk, v1.topic)).count(phase) == 1
    decided = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT COUNT(*) FROM debate_history WHERE event = 'judge_verdict'"
        ).fetchone()[0]
    )
    assert decided == 2
