"""debate/v1: init, the micro-state, the phase machine and every post gate."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from debate_support import (
    ALICE,
    BOB,
    CAROL,
    CONDUCTOR,
    LANE,
    MALLORY,
    OUTSIDER,
    SEATS,
    STAR,
    payload,
    v1_topic,
)

from agora.toolsets.debate.protocol.gates import JUDGING_STEPS

STATE_FIELDS = {
    "topic_id",
    "protocol_version",
    "phase",
    "round_no",
    "max_rounds",
    "blind_roles",
    "blind_barrier_state",
    "stalemate_reason",
    "transition_version",
    "phase_deadline_at",
    "phase_timeout_seconds",
    "updated_at",
    "projections",
    "outcome",
}


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _snapshot(desk, topic):
    """Everything a rejected post could have changed."""

    def read(conn):
        return (
            conn.execute("SELECT COUNT(*) FROM debate_messages").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM debate_history").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM debate_deliveries").fetchone()[0],
            conn.execute("SELECT * FROM debate_protocol WHERE topic_id = ?", (topic,)).fetchall(),
        )

    return await desk.runtime.read(read)


async def test_v1_init_creates_the_micro_state(desk):
    s = await desk.session(CONDUCTOR)
    out = await desk.call(
        CONDUCTOR,
        "debate_init",
        title="v1",
        created_by_role="CONDUCTOR",
        roles_json=json.dumps(
            [{"role": r, "session_id": s if r == "CONDUCTOR" else None} for r in SEATS]
        ),
        metadata_json=LANE,
        protocol_version="debate/v1",
        blind_roles_csv="PRO, CON",
    )
    state = out["protocol_state"]
    assert set(state) == STATE_FIELDS
    assert state["phase"] == "BLIND_CLAIM"
    assert (state["round_no"], state["max_rounds"], state["transition_version"]) == (1, 3, 1)
    assert state["blind_roles"] == ["PRO", "CON"]
    assert state["blind_barrier_state"] == "waiting"
    assert state["stalemate_reason"] is None
    assert state["phase_timeout_seconds"] == 300
    assert (state["projections"], state["outcome"]) == ([], None)
    assert state["phase_deadline_at"] is None  # the phase clock starts at ACTIVE
    assert await desk.call(CONDUCTOR, "debate_protocol_state", topic_id=out["topic_id"]) == state
    desk.wall.advance(200)
    moved = await desk.call(
        CONDUCTOR, "debate_state", topic_id=out["topic_id"], role="CONDUCTOR", new_state="ACTIVE"
    )
    active = await desk.call(CONDUCTOR, "debate_protocol_state", topic_id=out["topic_id"])
    assert _at(active["phase_deadline_at"]) - _at(moved["ts"]) == dt.timedelta(seconds=300)
    assert (active["phase"], active["transition_version"]) == ("BLIND_CLAIM", 1)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param({"blind_roles_csv": "PRO"}, "invalid_blind_roles", id="one-blind-role"),
        pytest.param({"blind_roles_csv": "PRO,CON,JUDGE"}, "invalid_blind_roles", id="three"),
        pytest.param({"blind_roles_csv": "PRO,PRO"}, "invalid_blind_roles", id="same-twice"),
        pytest.param({"blind_roles_csv": "PRO,NOBODY"}, "invalid_blind_roles", id="undeclared"),
        pytest.param({"max_rounds": 0}, "invalid_arguments", id="rounds-low"),
        pytest.param({"max_rounds": 11}, "invalid_arguments", id="rounds-high"),
        pytest.param({"phase_timeout_seconds": 29}, "invalid_arguments", id="timeout-floor"),
        pytest.param(
            {"protocol_version": "", "max_rounds": 2},
            "protocol_fields_require_debate_v1",
            id="fields-without-v1",
        ),
    ],
)
async def test_v1_init_validation_creates_nothing(desk, args, code):
    base = {
        "title": "v1",
        "created_by_role": "CONDUCTOR",
        "roles_json": json.dumps([{"role": r} for r in SEATS]),
        "metadata_json": LANE,
        "protocol_version": "debate/v1",
        "blind_roles_csv": "PRO,CON",
    }
    body = await desk.refused(CONDUCTOR, "debate_init", **{**base, **args})
    assert body["error"] == code
    count = await desk.runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM debate_topics").fetchone()[0]
    )
    assert count == 0


async def test_v1_options_are_kept(desk):
    v1 = await v1_topic(desk, max_rounds=1, phase_timeout_seconds=30)
    state = await v1.state()
    assert (state["max_rounds"], state["phase_timeout_seconds"]) == (1, 30)


async def test_protocol_state_denials_are_the_not_configured_shape(desk):
    v1 = await v1_topic(desk)
    legacy = await desk.topic(ALICE, {"CONDUCTOR": await desk.session(ALICE)})
    expected = await desk.refused(ALICE, "debate_protocol_state", topic_id=legacy)
    assert expected["error"] == "protocol_not_configured"
    unknown = "00000000-0000-4000-8000-000000000000"
    for who, topic in [(OUTSIDER, v1.topic), (ALICE, unknown), (CONDUCTOR, legacy)]:
        assert await desk.refused(who, "debate_protocol_state", topic_id=topic) == expected
    await desk.bind(
        ALICE, v1.topic, "PRO", v1.sessions["PRO"], state="retired", replace_active=False
    )
    assert await desk.refused(ALICE, "debate_protocol_state", topic_id=v1.topic) == expected
    for who in (BOB, CAROL, MALLORY, STAR, CONDUCTOR):
        assert (await v1.state(who))["phase"] == "BLIND_CLAIM"


async def test_the_phase_machine_runs_to_adjudicate(desk):
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM")
    assert pro["protocol_version"] == "debate/v1"
    assert (pro["round_no"], pro["body_mode"]) == (1, "structured")
    assert pro["protocol_state"]["phase"] == "BLIND_CLAIM"
    assert pro["protocol_state"]["transition_version"] == 1
    con = await v1.post("CON", "CLAIM")
    state = con["protocol_state"]
    assert (state["phase"], state["blind_barrier_state"]) == ("DEBATE", "released")
    assert state["transition_version"] == 2
    assert _at(state["phase_deadline_at"]) - _at(con["ts"]) == dt.timedelta(seconds=300)
    challenge = await v1.post(
        "CON", "CHALLENGE", reply_to=pro["msg_id"], payload_json=payload("why?")
    )
    await v1.post("PRO", "EVIDENCE", reply_to=challenge["msg_id"])
    # An unanswered CHALLENGE keeps a verified VERIFY from closing the debate.
    verify = await v1.post(
        "JUDGE", "VERIFY", reply_to=pro["msg_id"], payload_json=payload("ok", result="verified")
    )
    assert verify["protocol_state"]["phase"] == "DEBATE"
    assert verify["protocol_state"]["round_no"] == 2
    # The judge is told why (it saw round_no 2 and nothing more): the open CHALLENGE, and
    # that an EVIDENCE supports one without closing it.
    # (after the line every broadcast's reply begins with, and before whose move it is)
    _, why, then = verify.guidance.split("\n")
    assert why == (
        "The VERIFY is verified, but 1 CHALLENGE(s) are still open, so round 2 begins. A"
        " CHALLENGE closes with a REBUT or CONCEDE replying to it (an EVIDENCE supports it"
        f" without closing it); open: {challenge['msg_id']}."
    )
    assert then.startswith("Next: DEBATE, round 2 of 3: PRO and CON answer each other")
    await v1.post("PRO", "REBUT", reply_to=challenge["msg_id"])
    verify = await v1.post(
        "JUDGE", "VERIFY", reply_to=pro["msg_id"], payload_json=payload("ok", result="verified")
    )
    # Closed as it should: nothing to explain but whose move it is.
    adjudicate = f"Next: ADJUDICATE takes no semantic posts. {JUDGING_STEPS}"
    assert verify.guidance.split("\n")[1:] == [adjudicate]
    assert verify["round_no"] == 2
    assert verify["protocol_state"]["phase"] == "ADJUDICATE"
    assert verify["protocol_state"]["transition_version"] == 4
    assert await v1.state() == verify["protocol_state"]
    moves = await desk.runtime.read(
        lambda c: c.execute(
            "SELECT detail FROM debate_history WHERE topic_id = ? AND event = 'protocol_moved' "
            "ORDER BY seq",
            (v1.topic,),
        ).fetchall()
    )
    phases = [json.loads(r[0])["new_phase"] for r in moves]
    assert phases == ["DEBATE", "DEBATE", "ADJUDICATE"]


async def test_round_cap_dissent_once_and_escalate(desk):
    v1 = await v1_topic(desk, max_rounds=2)
    pro, _ = await v1.to_debate()
    for round_no in (1, 2):
        out = await v1.post(
            "JUDGE", "VERIFY", reply_to=pro, payload_json=payload("no", result="contested")
        )
        assert out["round_no"] == round_no
    state = out["protocol_state"]
    assert (state["phase"], state["stalemate_reason"]) == ("STALEMATE", "round_cap_unresolved")
    assert state["phase_deadline_at"] is None
    assert (await v1.refused("CON", "CHALLENGE", reply_to=pro))["error"] == "round_cap_reached"
    await v1.post("PRO", "DISSENT")
    assert (await v1.refused("PRO", "DISSENT"))["error"] == "dissent_duplicate"
    await v1.post("CON", "DISSENT")
    no_human = await v1.refused("CON", "ESCALATE")
    assert no_human["error"] == "human_recipient_required"
    out = await v1.post("CONDUCTOR", "ESCALATE", to="HUMAN", priority="H")
    assert out["protocol_state"]["phase"] == "ESCALATED"
    assert (await v1.refused("JUDGE", "DISSENT"))["error"] == "protocol_terminal"


@pytest.mark.parametrize("human", ["HUMAN", "OPERATOR"])
async def test_escalate_reaches_an_undeclared_human(desk, human):
    """HUMAN and OPERATOR need no declared role: humans read the whole topic, and an
    ESCALATE to them is how a STALEMATE ends (debate_escalate takes them undeclared too)."""
    v1 = await v1_topic(desk, max_rounds=1, without=("HUMAN",))
    pro, _ = await v1.to_debate()
    out = await v1.post(
        "JUDGE", "VERIFY", reply_to=pro, payload_json=payload("no", result="contested")
    )
    assert out["protocol_state"]["phase"] == "STALEMATE"
    out = await v1.post("CON", "ESCALATE", to=human, priority="H")
    assert out["protocol_state"]["phase"] == "ESCALATED"
    unknown = await v1.desk.refused(
        ALICE, "debate_post_with_recipients", topic_id=v1.topic, role="PRO", priority="M",
        kind="DISSENT", body="x", payload_json=payload(), addressed_to_csv="AUDITOR",
    )  # fmt: skip
    assert unknown["error"] == "unknown_recipient"
    assert "HUMAN or OPERATOR" in unknown["message"]
    # Only an ESCALATE: any other post to an undeclared human would reach no inbox.
    not_escalate = await v1.desk.refused(
        ALICE, "debate_post_with_recipients", topic_id=v1.topic, role="PRO", priority="M",
        kind="DISSENT", body="x", payload_json=payload(), addressed_to_csv=human,
    )  # fmt: skip
    assert not_escalate["error"] == "unknown_recipient"


async def _stage(v1, stage):
    ids = {}
    if stage in ("DEBATE", "ADJUDICATE"):
        ids["pro"], ids["con"] = await v1.to_debate()
    if stage == "ADJUDICATE":
        await v1.post(
            "JUDGE",
            "VERIFY",
            reply_to=ids["pro"],
            payload_json=payload("ok", result="verified"),
        )
    return ids


@pytest.mark.parametrize(
    ("stage", "role", "kind", "args", "code"),
    [
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "CLAIM",
            {"payload_json": None},
            "invalid_payload",
            id="payload-missing",
        ),
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "CLAIM",
            {"payload_json": json.dumps({"summary": " ", "assumptions": [], "evidence_refs": []})},
            "invalid_payload",
            id="summary-blank",
        ),
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "CLAIM",
            {
                "payload_json": json.dumps(
                    {"summary": "s", "assumptions": "none", "evidence_refs": []}
                )
            },
            "invalid_payload",
            id="assumptions-not-array",
        ),
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "CLAIM",
            {"payload_json": json.dumps({"summary": "s", "assumptions": []})},
            "invalid_payload",
            id="evidence-refs-missing",
        ),
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "CLAIM",
            {"body_mode": "poetry"},
            "invalid_body_mode",
            id="body-mode",
        ),
        pytest.param("BLIND_CLAIM", "PRO", "Q", {}, "legacy_kind_on_v1", id="legacy-kind"),
        pytest.param("BLIND_CLAIM", "PRO", "EVIDENCE", {}, "blind_claim_only", id="blind-kind"),
        pytest.param("BLIND_CLAIM", "JUDGE", "CLAIM", {}, "blind_claim_only", id="blind-role"),
        pytest.param(
            "BLIND_CLAIM",
            "PRO",
            "VERIFY",
            {"payload_json": payload(result="verified")},
            "verify_requires_non_blind_role",
            id="verify-blind",
        ),
        pytest.param("DEBATE", "CON", "CHALLENGE", {}, "invalid_target", id="target-missing"),
        pytest.param(
            "DEBATE",
            "JUDGE",
            "VERIFY",
            {"payload_json": payload(result="maybe")},
            "invalid_payload",
            id="verify-result",
        ),
        pytest.param("DEBATE", "PRO", "DISSENT", {}, "wrong_phase", id="dissent-in-debate"),
        pytest.param("DEBATE", "CONDUCTOR", "ESCALATE", {}, "wrong_phase", id="escalate-early"),
        pytest.param("ADJUDICATE", "PRO", "CLAIM", {}, "wrong_phase", id="claim-in-adjudicate"),
        pytest.param("ADJUDICATE", "PRO", "STATUS", {}, "legacy_kind_on_v1", id="status"),
    ],
)
async def test_each_gate_names_its_rule_and_changes_nothing(desk, stage, role, kind, args, code):
    v1 = await v1_topic(desk)
    await _stage(v1, stage)
    if args.get("payload_json", "") is None:
        args = {k: v for k, v in args.items() if k != "payload_json"}
        before = await _snapshot(desk, v1.topic)
        body = await desk.post(SEATS[role], v1.topic, role, "x", kind=kind, refused=True)
    else:
        before = await _snapshot(desk, v1.topic)
        body = await v1.refused(role, kind, **args)
    assert body["error"] == code, body
    assert await _snapshot(desk, v1.topic) == before


async def test_a_second_blind_claim_is_refused(desk):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM")
    before = await _snapshot(desk, v1.topic)
    assert (await v1.refused("PRO", "CLAIM"))["error"] == "blind_claim_duplicate"
    assert await _snapshot(desk, v1.topic) == before


async def test_semantic_kinds_need_a_v1_topic(desk):
    legacy = await desk.topic(ALICE, {"CONDUCTOR": await desk.session(ALICE)})
    body = await desk.post(
        ALICE, legacy, "CONDUCTOR", "x", kind="CLAIM", payload_json=payload(), refused=True
    )
    assert body["error"] == "protocol_not_configured"
    # It did not say which kinds such a topic takes.
    assert body["message"].endswith(
        "takes the legacy and control kinds (Q A STATUS DECISION PING WATERMARK STATE "
        "COMPACTION INFO)"
    ), body


async def test_control_kinds_pass_on_v1_topics(desk):
    v1 = await v1_topic(desk)
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "note", priority="INFO", kind="INFO")
    assert "protocol_state" not in out
    assert (await v1.state())["transition_version"] == 1


async def test_stale_read_while_an_urgent_message_is_unread(desk):
    v1 = await v1_topic(desk)
    urgent = await v1.desk.post(
        CONDUCTOR, v1.topic, "CONDUCTOR", "read this first", to="PRO", priority="H", kind="PING"
    )
    # Not urgent for CON: CON posts freely.
    await v1.post("CON", "CLAIM")
    before = await _snapshot(desk, v1.topic)
    body = await v1.refused("PRO", "CLAIM")
    assert (body["error"], body["unread_msg_id"]) == ("stale_read", urgent["msg_id"])
    assert await _snapshot(desk, v1.topic) == before
    inbox = await desk.check(ALICE, v1.topic, "PRO", v1.sessions["PRO"])
    assert [m["msg_id"] for m in inbox["pending"]] == [urgent["msg_id"]]
    # Checking is not reading to the end: still stale until the receipt.
    assert (await v1.refused("PRO", "CLAIM"))["error"] == "stale_read"
    await desk.advance(ALICE, v1.topic, "PRO", v1.sessions["PRO"], urgent["msg_id"])
    assert (await v1.post("PRO", "CLAIM"))["protocol_state"]["phase"] == "DEBATE"


async def test_answering_the_urgent_message_itself_is_not_a_stale_read(desk):
    v1 = await v1_topic(desk)
    pro, _ = await v1.to_debate()
    challenge = await v1.post("CON", "CHALLENGE", to="PRO", priority="H", reply_to=pro)
    body = await v1.refused("PRO", "EVIDENCE", reply_to=pro)
    assert (body["error"], body["unread_msg_id"]) == ("stale_read", challenge["msg_id"])
    await v1.post("PRO", "REBUT", reply_to=challenge["msg_id"])


async def test_a_v1_init_repeat_is_idempotent_and_a_different_config_conflicts(desk):
    args = {
        "title": "v1",
        "created_by_role": "CONDUCTOR",
        "roles_json": json.dumps([{"role": r, "session_id": None} for r in SEATS]),
        "metadata_json": LANE,
        "protocol_version": "debate/v1",
        "blind_roles_csv": "PRO,CON",
        "max_rounds": 4,
    }
    first = await desk.call(CONDUCTOR, "debate_init", **args)
    again = await desk.call(CONDUCTOR, "debate_init", topic_id=first["topic_id"], **args)
    assert again["protocol_state"] == first["protocol_state"]
    body = await desk.refused(
        CONDUCTOR, "debate_init", topic_id=first["topic_id"], **{**args, "max_rounds": 5}
    )
    assert body["error"] == "init_conflict"
    state = await desk.call(CONDUCTOR, "debate_protocol_state", topic_id=first["topic_id"])
    assert state["max_rounds"] == 4
