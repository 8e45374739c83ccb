"""debate/v1 blind barrier beyond read, search and the signal paths: the inbox resource, its
push notifications and the work queue tell nobody but the author and conductors that a blind
CLAIM came, until both are in; the release then reaches its recipients as a new delivery."""

from __future__ import annotations

from debate_support import ALICE, BOB, CAROL, CONDUCTOR, v1_topic
from test_debate_push import Ear, inbox

from agora.toolsets.debate.rules import inbox_uri


async def test_the_inbox_resource_neither_counts_nor_dates_a_held_claim(desk):
    v1 = await v1_topic(desk)
    con, judge = v1.sessions["CON"], v1.sessions["JUDGE"]
    pro = await v1.post("PRO", "CLAIM", to="CON,JUDGE")
    for who, session in ((BOB, con), (CAROL, judge)):
        view = await inbox(desk, who, session)
        assert view["pending"] == 0, view
        [topic] = view["topics"]
        assert (topic["pending"], topic["oldest_ts"], topic["newest_ts"]) == (0, None, None)
    await v1.post("CON", "CLAIM", to="PRO,JUDGE")
    view = await inbox(desk, BOB, con)
    [topic] = view["topics"]
    assert (topic["pending"], topic["oldest_ts"]) == (1, pro["ts"])
    assert (await inbox(desk, CAROL, judge))["pending"] == 2


async def test_inbox_subscribers_hear_of_a_held_claim_only_at_its_release(desk):
    v1 = await v1_topic(desk)
    ear = Ear()
    uris = {role: inbox_uri(v1.sessions[role]) for role in ("PRO", "CON", "JUDGE")}
    desk.runtime.resources.watch(ear, set(uris.values()))
    await v1.post("PRO", "CLAIM", to="CON,JUDGE")
    assert ear.heard == []
    # CON's CLAIM (to PRO and JUDGE) releases PRO's: CON hears of PRO's claim now.
    await v1.post("CON", "CLAIM", to="PRO,JUDGE")
    assert sorted(ear.heard) == sorted(uris.values())


async def test_the_work_queue_counts_no_held_claim(desk):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", to="CON,JUDGE", priority="H")

    async def item(who):
        queue = await desk.call(who, "debate_work_queue", topics_csv=v1.topic)
        [found] = queue["items"]
        return found

    for who in (ALICE, BOB, CAROL):
        found = await item(who)
        assert "pending_H" not in found["reason_codes"], found
        assert found["max_priority"] is None, found
    assert (await item(CONDUCTOR))["max_priority"] == "H"
    await v1.post("CON", "CLAIM", to="PRO,JUDGE")
    found = await item(BOB)
    assert (found["max_priority"], "pending_H" in found["reason_codes"]) == ("H", True)
