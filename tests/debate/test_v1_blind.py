"""debate/v1 blind barrier: a blind CLAIM stays hidden in debate_read, debate_search and
debate_signal_check from every viewer but its author and conductors, until both claims are
committed; then both are released together."""

from __future__ import annotations

import json

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, MALLORY, STAR, payload, v1_topic

from agora.errors import ToolError

#: (principal, the role it views as, whether it may see PRO's pending claim)
VIEWERS = [
    pytest.param(ALICE, "PRO", True, id="author"),
    pytest.param(BOB, "CON", False, id="other-blind-role"),
    pytest.param(BOB, "PRO", False, id="other-blind-role-naming-the-author-role"),
    pytest.param(CAROL, "JUDGE", False, id="judge"),
    pytest.param(MALLORY, "HUMAN", False, id="human"),
    pytest.param(STAR, "PRO", False, id="star"),
    pytest.param(CONDUCTOR, "CONDUCTOR", True, id="conductor"),
]
#: Viewers PRO's pending claim is hidden from (the other blind role and the judge are among
#: its addressees, the human is not), for the paths that take a msg_id.
HIDDEN_FROM = pytest.mark.parametrize(
    ("who", "role"),
    [
        pytest.param(BOB, "CON", id="other-blind-role"),
        pytest.param(CAROL, "JUDGE", id="judge"),
        pytest.param(MALLORY, "HUMAN", id="human"),
    ],
)


async def _seen(desk, topic, who, role, needle="secret"):
    read = await desk.call(who, "debate_read", topic_id=topic, role=role)
    found = await desk.call(who, "debate_search", topic_id=topic, query=needle, viewer_role=role)
    return [m["msg_id"] for m in read["messages"]], [m["msg_id"] for m in found["messages"]]


@pytest.mark.parametrize(("who", "role", "sees"), VIEWERS)
async def test_a_pending_blind_claim_is_hidden_until_both_commit(desk, who, role, sees):
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM", body="secret pro", payload_json=payload("secret"))
    read, found = await _seen(desk, v1.topic, who, role)
    assert (pro["msg_id"] in read) is sees
    assert (pro["msg_id"] in found) is sees
    con = await v1.post("CON", "CLAIM", body="secret con", payload_json=payload("secret"))
    read, found = await _seen(desk, v1.topic, who, role)
    assert {pro["msg_id"], con["msg_id"]} <= set(read)
    assert {pro["msg_id"], con["msg_id"]} <= set(found)


async def test_search_without_viewer_role_hides_even_from_the_author(desk):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", body="secret pro")
    found = await desk.call(ALICE, "debate_search", topic_id=v1.topic, query="secret")
    assert found["count"] == 0


async def test_a_read_page_stays_full_around_a_hidden_claim(desk):
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM")
    for _ in range(2):
        await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "note", priority="INFO", kind="INFO")
    page = await desk.call(BOB, "debate_read", topic_id=v1.topic, role="CON", limit=2)
    assert page["count"] == 2
    assert pro["msg_id"] not in [m["msg_id"] for m in page["messages"]]


async def test_signal_check_holds_the_inbox_at_a_hidden_claim(desk):
    v1 = await v1_topic(desk)
    con_session = v1.sessions["CON"]
    pro = await v1.post("PRO", "CLAIM", to="CON")
    later = await desk.post(
        CONDUCTOR, v1.topic, "CONDUCTOR", "after the claim", to="CON", kind="PING"
    )
    check = {"session_id": con_session, "role": "CON", "topic_id": v1.topic}
    inbox = await desk.call(BOB, "debate_signal_check", **check)
    assert inbox["count"] == 0
    body = await desk.refused(
        BOB, "debate_signal_advance", **check, last_processed_msg_id=later["msg_id"]
    )
    assert body["error"] == "blind_barrier_pending"
    # The judge is not the addressee and sees nothing; the conductor is not blind.
    await v1.post("CON", "CLAIM")
    inbox = await desk.call(BOB, "debate_signal_check", **check)
    assert [m["msg_id"] for m in inbox["pending"]] == [pro["msg_id"], later["msg_id"]]
    await desk.call(BOB, "debate_signal_advance", **check, last_processed_msg_id=later["msg_id"])


async def test_signal_wait_wakes_on_the_release_not_on_the_hidden_claim(desk, autojump_clock):
    v1 = await v1_topic(desk)
    check = {"session_id": v1.sessions["CON"], "role": "CON", "topic_id": v1.topic}
    pro = await v1.post("PRO", "CLAIM", to="CON")

    async def release():
        await trio.sleep(9)
        await v1.post("CON", "CLAIM")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(release)
        with trio.fail_after(60):
            start = trio.current_time()
            out = await desk.call(BOB, "debate_signal_wait", **check, timeout_ms=30_000)
    assert trio.current_time() - start == pytest.approx(9)
    assert [m["msg_id"] for m in out["pending"]] == [pro["msg_id"]]


async def test_a_v1_cursor_moves_only_to_a_delivered_message(desk):
    v1 = await v1_topic(desk)
    check = {"session_id": v1.sessions["JUDGE"], "role": "JUDGE", "topic_id": v1.topic}
    sent = await desk.post(
        CONDUCTOR, v1.topic, "CONDUCTOR", "for the judge", to="JUDGE", kind="PING"
    )
    body = await desk.refused(
        CAROL, "debate_signal_advance", **check, last_processed_msg_id=sent["msg_id"]
    )
    assert body["error"] == "advance_before_delivery"
    await desk.call(CAROL, "debate_signal_check", **check)
    await desk.call(CAROL, "debate_signal_advance", **check, last_processed_msg_id=sent["msg_id"])


async def test_debate_escalate_keeps_its_ping_form_on_v1_topics(desk):
    v1 = await v1_topic(desk)
    out = await desk.call(
        ALICE, "debate_escalate", topic_id=v1.topic, role="PRO", reason="need a human"
    )
    assert "protocol_state" not in out
    state = await v1.state()
    assert (state["phase"], state["transition_version"]) == ("BLIND_CLAIM", 1)
    inbox = await desk.check(MALLORY, v1.topic, "HUMAN", v1.sessions["HUMAN"])
    [ping] = inbox["pending"]
    assert (ping["kind"], ping["priority"]) == ("PING", "H")


async def test_the_work_queue_never_names_a_pending_blind_claim(desk):
    v1 = await v1_topic(desk)
    note = await desk.post(
        CONDUCTOR, v1.topic, "CONDUCTOR", "before the claims", priority="INFO", kind="INFO"
    )
    pro = await v1.post("PRO", "CLAIM")

    async def latest(who):
        queue = await desk.call(who, "debate_work_queue", topics_csv=v1.topic)
        [item] = queue["items"]
        return item["latest_message"]["msg_id"]

    for who in (ALICE, BOB, CAROL, MALLORY, STAR):
        assert await latest(who) == note["msg_id"]
    assert await latest(CONDUCTOR) == pro["msg_id"]
    con = await v1.post("CON", "CLAIM")
    assert await latest(BOB) == con["msg_id"]


async def test_a_watermark_cannot_carry_the_cursor_past_an_undelivered_message(desk):
    # debate_advance_watermark moved the signal cursor without the v1 delivery rule: an
    # urgent challenge was skipped unread, and stale_read no longer held the poster back.
    v1 = await v1_topic(desk)
    pro, _ = await v1.to_debate()
    challenge = await v1.post("CON", "CHALLENGE", to="PRO", priority="H", reply_to=pro)
    mark = {"topic_id": v1.topic, "role": "PRO", "processed_up_to_msg_id": challenge["msg_id"]}
    body = await desk.refused(ALICE, "debate_advance_watermark", **mark)
    assert body["error"] == "advance_before_delivery"
    assert challenge["msg_id"] in body["message"]
    # The same through a WATERMARK post.
    body = await desk.post(ALICE, v1.topic, "PRO", challenge["msg_id"], priority="INFO",
                           kind="WATERMARK", refused=True)  # fmt: skip
    assert body["error"] == "advance_before_delivery"
    assert (await v1.refused("PRO", "EVIDENCE", reply_to=pro))["error"] == "stale_read"
    inbox = await desk.check(ALICE, v1.topic, "PRO", v1.sessions["PRO"])
    assert [m["msg_id"] for m in inbox["pending"]] == [challenge["msg_id"]]
    await desk.call(ALICE, "debate_advance_watermark", **mark)  # delivered now: it may pass


async def test_a_watermark_cannot_carry_a_blind_role_past_the_hidden_claim(desk):
    # CON marked its own INFO as processed: its cursor passed PRO's hidden CLAIM, which then
    # never reached CON's inbox once the barrier released.
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM", to="CON")
    own = await desk.post(BOB, v1.topic, "CON", "thinking", priority="INFO", kind="INFO")
    mark = {"topic_id": v1.topic, "role": "CON", "processed_up_to_msg_id": own["msg_id"]}
    body = await desk.refused(BOB, "debate_advance_watermark", **mark)
    assert body["error"] == "blind_barrier_pending"
    await v1.post("CON", "CLAIM")
    inbox = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
    assert [m["msg_id"] for m in inbox["pending"]] == [pro["msg_id"]]


UNKNOWN = "00000000-0000-4000-8000-000000000000"


@HIDDEN_FROM
async def test_a_pending_blind_claims_id_answers_as_an_unknown_one(desk, who, role):
    # Naming the held CLAIM's id to the wake dry run or as a receipt target must not tell a
    # viewer the barrier hides it from that it exists: the same bytes as an id that does not.
    v1 = await v1_topic(desk)
    pro = (await v1.post("PRO", "CLAIM", to="CON,JUDGE"))["msg_id"]

    async def dry(msg_id, caller=who, schema="debate.trigger/v1"):
        text = json.dumps({"schema_version": schema, "topic_id": v1.topic, "msg_id": msg_id})
        return await desk.call(caller, "debate_trigger_dry_run", tool_response_json=text)

    async def mismatch(msg_id):  # a mismatch answer echoes only a trigger that exists
        return await dry(msg_id, schema="debate.trigger/v0")

    async def advance(msg_id):
        args = {"session_id": v1.sessions[role], "role": role, "topic_id": v1.topic}
        return await desk.refused(
            who, "debate_signal_advance", **args, last_processed_msg_id=msg_id
        )

    answers = {
        use.__name__: (json.dumps(await use(pro)), json.dumps(await use(UNKNOWN)))
        for use in (dry, mismatch, advance)
    }
    assert answers == {name: (unknown, unknown) for name, (_, unknown) in answers.items()}
    assert json.loads(answers["advance"][1])["error"] == "unknown_msg_id"
    assert json.loads(answers["dry"][1])["result"] == "unknown_trigger"
    # Its author and conductors may see it: for them it waits for the barrier. Star may not.
    for caller in (ALICE, CONDUCTOR):
        assert (await dry(pro, caller))["result"] == "blind_barrier_wait"
    assert await dry(pro, STAR) == await dry(UNKNOWN, STAR)
    await v1.post("CON", "CLAIM")
    assert [t["role"] for t in (await dry(pro))["targets"]] == ["CON", "JUDGE"]


async def _answer(desk, who, tool, **args):
    """The reply of a call, or its error body when it is refused."""
    try:
        return await desk.call(who, tool, **args)
    except ToolError as refused:
        return refused.body


@HIDDEN_FROM
async def test_a_watermark_at_a_pending_blind_claim_answers_as_at_an_unknown_id(desk, who, role):
    # A watermark naming the held CLAIM answered blind_barrier_pending to an addressee and was
    # posted for anyone else (its marker's body the id), where an id that does not exist
    # answers unknown_msg_id: both told a viewer the barrier hides it from that it exists.
    v1 = await v1_topic(desk)
    pro = (await v1.post("PRO", "CLAIM", to="CON,JUDGE"))["msg_id"]

    async def advance(msg_id, caller=who, as_role=role):
        mark = {"topic_id": v1.topic, "role": as_role, "processed_up_to_msg_id": msg_id}
        return await _answer(desk, caller, "debate_advance_watermark", **mark)

    async def marker(msg_id):
        args = {"topic_id": v1.topic, "role": role, "priority": "INFO", "kind": "WATERMARK"}
        return await _answer(desk, who, "debate_post", body=msg_id, **args)

    answers = {
        use.__name__: (json.dumps(await use(pro)), json.dumps(await use(UNKNOWN)))
        for use in (advance, marker)
    }
    assert answers == {name: (unknown, unknown) for name, (_, unknown) in answers.items()}
    assert {json.loads(unknown)["error"] for _, unknown in answers.values()} == {"unknown_msg_id"}
    read = await desk.call(CONDUCTOR, "debate_read", topic_id=v1.topic, role="CONDUCTOR")
    assert "WATERMARK" not in [m["kind"] for m in read["messages"]]  # no marker was posted
    # Its author and conductors may see it: their watermarks pass it as before.
    for caller, as_role in ((ALICE, "PRO"), (CONDUCTOR, "CONDUCTOR")):
        assert "msg_id" in await advance(pro, caller, as_role)
    await v1.post("CON", "CLAIM")
    assert (await advance(pro)).get("error") != "unknown_msg_id"


@HIDDEN_FROM
async def test_a_reply_to_a_pending_blind_claim_answers_as_to_an_unknown_id(desk, who, role):
    # A reply naming the held CLAIM passed the reply check (the post went in, its reply_to
    # the id), where an id that does not exist answers bad_reply_to.
    v1 = await v1_topic(desk)
    pro = (await v1.post("PRO", "CLAIM", to="CON,JUDGE"))["msg_id"]

    async def reply(msg_id, caller=who, as_role=role):
        args = {"topic_id": v1.topic, "role": as_role, "priority": "INFO", "kind": "INFO"}
        return await _answer(desk, caller, "debate_post", body="re", reply_to=msg_id, **args)

    hidden, unknown = json.dumps(await reply(pro)), json.dumps(await reply(UNKNOWN))
    assert hidden == unknown
    assert json.loads(unknown)["error"] == "bad_reply_to"
    # Its author and conductors may see it and reply to it; so may everyone once released.
    for caller, as_role in ((ALICE, "PRO"), (CONDUCTOR, "CONDUCTOR")):
        assert "msg_id" in await reply(pro, caller, as_role)
    await v1.post("CON", "CLAIM")
    assert "msg_id" in await reply(pro)


@HIDDEN_FROM
async def test_a_cursor_at_a_pending_blind_claim_answers_as_at_an_unknown_id(
    desk, autojump_clock, who, role
):
    # since_msg_id naming the held CLAIM paged on from it (debate_signal_check and _wait,
    # debate_read), where an id that does not exist answers unknown_cursor.
    v1 = await v1_topic(desk)
    pro = (await v1.post("PRO", "CLAIM", to="CON,JUDGE"))["msg_id"]
    inbox = {"topic_id": v1.topic, "session_id": v1.sessions[role], "role": role}

    async def check(msg_id, caller=who):
        return await _answer(desk, caller, "debate_signal_check", **inbox, since_msg_id=msg_id)

    async def wait(msg_id):
        with trio.fail_after(60):
            return await _answer(
                desk, who, "debate_signal_wait", **inbox, since_msg_id=msg_id, timeout_ms=1000
            )

    async def read(msg_id, caller=who, as_role=role):
        page = {"topic_id": v1.topic, "role": as_role}
        return await _answer(desk, caller, "debate_read", **page, since_msg_id=msg_id)

    answers = {
        use.__name__: (json.dumps(await use(pro)), json.dumps(await use(UNKNOWN)))
        for use in (check, wait, read)
    }
    assert answers == {name: (unknown, unknown) for name, (_, unknown) in answers.items()}
    assert {json.loads(unknown)["error"] for _, unknown in answers.values()} == {"unknown_cursor"}
    # Its author and conductors may see it and page on from it; so may everyone once released.
    inbox.update(session_id=v1.sessions["PRO"], role="PRO")
    assert (await check(pro, ALICE))["count"] == 0
    assert (await read(pro, ALICE, "PRO"))["count"] == 0
    assert (await read(pro, CONDUCTOR, "CONDUCTOR"))["count"] == 0
    await v1.post("CON", "CLAIM")
    assert [m["kind"] for m in (await read(pro))["messages"]] == ["CLAIM"]


@pytest.mark.parametrize(
    ("who", "role"),
    [
        pytest.param(BOB, "CON", id="other-blind-role"),
        pytest.param(CAROL, "JUDGE", id="judge"),
        pytest.param(MALLORY, "HUMAN", id="human"),
        pytest.param(STAR, "SCRIBE", id="star-adding-a-role"),
    ],
)
async def test_a_sanction_citing_a_pending_blind_claim_answers_as_an_unknown_id(desk, who, role):
    # bound_by_msg_id naming the held CLAIM was accepted as the binding's sanction (and shown
    # in the roster), where an id that does not exist answers unknown_msg_id.
    v1 = await v1_topic(desk)
    pro = (await v1.post("PRO", "CLAIM", to="CON,JUDGE"))["msg_id"]
    held = v1.sessions.get(role) or await desk.session(who)

    async def bind(msg_id, caller=who, as_role=role, session=held):
        tool = "debate_bind_role" if as_role in v1.sessions else "debate_add_role"
        args = {"topic_id": v1.topic, "role": as_role, "session_id": session}
        return await _answer(desk, caller, tool, **args, bound_by_msg_id=msg_id)

    async def rotate(msg_id):
        args = {"topic_id": v1.topic, "role": role, "old_session_id": held, "cursor_mode": "copy"}
        args.update(new_session_id=await desk.session(who), bound_by_msg_id=msg_id)
        return await _answer(desk, who, "debate_rotate_session", **args)

    uses = (bind, rotate) if role in v1.sessions else (bind,)
    answers = {
        use.__name__: (json.dumps(await use(pro)), json.dumps(await use(UNKNOWN))) for use in uses
    }
    assert answers == {name: (unknown, unknown) for name, (_, unknown) in answers.items()}
    assert {json.loads(unknown)["error"] for _, unknown in answers.values()} == {"unknown_msg_id"}
    # Its author and conductors may see it and cite it; so may everyone once released.
    assert (await bind(pro, ALICE, "PRO", v1.sessions["PRO"]))["role"] == "PRO"
    assert (await bind(pro, CONDUCTOR, "CLERK", await desk.session(CONDUCTOR)))["role"] == "CLERK"
    await v1.post("CON", "CLAIM")
    assert (await bind(pro))["role"] == role


async def test_a_broadcast_blind_claim_is_told_it_is_committed_not_to_post_again(desk):
    """A tester's finding: a blind CLAIM posted with debate_post was told to post again with
    debate_post_with_recipients, which answers blind_claim_duplicate."""
    v1 = await v1_topic(desk)
    first = await v1.post("PRO", "CLAIM")
    second = await v1.post("CON", "CLAIM")
    committed = "This CLAIM was broadcast: it is in no inbox, but it is committed as"
    assert first.guidance.startswith(f"{committed} PRO's blind CLAIM and cannot be posted again")
    assert "see it with debate_read once both blind CLAIMs are in" in first.guidance
    assert second.guidance.startswith(f"{committed} CON's blind CLAIM")
    assert "see it with debate_read now that both blind CLAIMs are in" in second.guidance
    assert second["protocol_state"]["phase"] == "DEBATE"
