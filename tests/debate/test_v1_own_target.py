"""A CHALLENGE or REBUT answers the other side, and a stale read says how to answer at once.

PRO could CHALLENGE its own side's CLAIM, and that open CHALLENGE then held ADJUDICATE back
with no opponent involved; a REBUT of one's own CHALLENGE closed it the same way. Both are
refused ``invalid_target`` now. The ``stale_read`` refusal did not say that replying to the
unread message (reply_to) is accepted.
"""

from __future__ import annotations

from debate_support import v1_topic


async def test_a_challenge_or_rebut_of_ones_own_message_is_refused(desk):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_debate()
    before = await v1.state()
    body = await v1.refused("PRO", "CHALLENGE", reply_to=pro)
    assert body["error"] == "invalid_target"
    assert f"{pro} is PRO's own CLAIM" in body["message"]
    assert await v1.state() == before
    challenge = await v1.post("PRO", "CHALLENGE", to="CON", reply_to=con)
    body = await v1.refused("PRO", "REBUT", reply_to=challenge["msg_id"])
    assert body["error"] == "invalid_target"
    assert f"{challenge['msg_id']} is PRO's own CHALLENGE" in body["message"]
    await v1.post("CON", "REBUT", to="PRO", reply_to=challenge["msg_id"])


async def test_a_stale_read_says_a_reply_to_the_unread_message_is_accepted(desk):
    v1 = await v1_topic(desk)
    pro, _ = await v1.to_debate()
    challenge = await v1.post("CON", "CHALLENGE", to="PRO", priority="H", reply_to=pro)
    body = await v1.refused("PRO", "EVIDENCE", reply_to=pro)
    assert body["error"] == "stale_read"
    assert f"unread ({challenge['msg_id']})" in body["message"]
    assert (
        "or post your answer to it (reply_to that message), which is accepted" in (body["message"])
    )
    await v1.post("PRO", "REBUT", reply_to=challenge["msg_id"])


async def test_a_stale_read_says_how_many_urgent_messages_are_unread(desk):
    # It named only the newest unread H message, and read as if it were the only one.
    v1 = await v1_topic(desk)
    pro, con = await v1.to_debate()
    first = await v1.post("CON", "CHALLENGE", to="PRO", priority="H", reply_to=pro)
    second = await v1.post("CON", "EVIDENCE", to="PRO", priority="H", reply_to=first["msg_id"])
    body = await v1.refused("PRO", "CHALLENGE", reply_to=con)
    assert body["error"] == "stale_read"
    assert body["unread_count"] == 2
    assert body["unread_msg_id"] == second["msg_id"]
    assert "2 urgent (H) messages addressed to you are unread" in body["message"]
    assert f"debate_signal_advance to {second['msg_id']}, which passes them all" in body["message"]
