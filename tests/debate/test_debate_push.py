"""Push delivery: the inbox resource (debate://inbox/{session_id}) with its updates after
commit, and debate_signal_wait across every topic a session holds a role in."""

from __future__ import annotations

import pytest
import trio
from debate_support import ALICE, BOB

from agora.toolsets.base import ToolCall
from agora.toolsets.debate.handlers.resources import read_inbox
from agora.toolsets.debate.rules import inbox_uri


class Ear:
    """A subscriber that records what it heard."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    def resource_changed(self, uri: str) -> None:
        self.heard.append(uri)


async def inbox(desk, who, session):
    call = ToolCall(
        tool=inbox_uri(session), args={"session_id": session}, principal=who, runtime=desk.runtime
    )
    return await read_inbox(call)


@pytest.fixture
async def two_topics(desk):
    a, b = await desk.session(ALICE), await desk.session(BOB)
    first = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)})
    second = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)})
    return {"a": a, "b": b, "topics": sorted([first, second])}


async def say(desk, topic, to, body="x"):
    return await desk.post(ALICE, topic, "CONDUCTOR", body, to=to)


async def test_inbox_resource_counts_unconsumed_messages_per_topic(desk, two_topics):
    t1, t2 = two_topics["topics"]
    sent = await say(desk, t1, "ADVOCATE")
    await say(desk, t2, two_topics["b"])
    view = await inbox(desk, BOB, two_topics["b"])
    assert view["pending"] == 2
    assert {(t["topic_id"], t["pending"]) for t in view["topics"]} == {(t1, 1), (t2, 1)}
    await desk.advance(BOB, t1, "ADVOCATE", two_topics["b"], sent["msg_id"])
    assert (await inbox(desk, BOB, two_topics["b"]))["pending"] == 1


async def test_inbox_resource_is_not_found_for_anyone_but_the_owner(desk, two_topics):
    with pytest.raises(LookupError):
        await inbox(desk, ALICE, two_topics["b"])
    with pytest.raises(LookupError):
        await inbox(desk, BOB, "00000000-0000-4000-8000-000000000000")


async def test_subscribers_hear_of_addressed_posts_and_advances_after_commit(desk, two_topics):
    t1, _ = two_topics["topics"]
    ear = Ear()
    desk.runtime.resources.watch(ear, {inbox_uri(two_topics["b"])})
    await desk.post(ALICE, t1, "CONDUCTOR", "broadcast")
    assert ear.heard == []
    sent = await say(desk, t1, "ADVOCATE")
    assert ear.heard == [inbox_uri(two_topics["b"])]
    await desk.advance(BOB, t1, "ADVOCATE", two_topics["b"], sent["msg_id"])
    assert len(ear.heard) == 2


async def test_wait_without_topic_answers_from_any_topic_of_the_session(
    desk, two_topics, autojump_clock
):
    _, t2 = two_topics["topics"]

    async def later():
        await trio.sleep(7)
        await say(desk, t2, "ADVOCATE", "over here")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        with trio.fail_after(60):
            start = trio.current_time()
            out = await desk.wait(BOB, None, "ADVOCATE", two_topics["b"], 20_000)
    assert trio.current_time() - start == pytest.approx(7)
    assert out["topic_id"] == t2
    assert [m["body"] for m in out["pending"]] == ["over here"]


async def test_wait_without_topic_refuses_a_session_holding_the_role_nowhere(desk, two_topics):
    b = two_topics["b"]
    foreign = await desk.wait(ALICE, None, "ADVOCATE", b, 1000, refused=True)
    # No topic was named, so no "unknown topic": the session holds the role nowhere the
    # caller can see, in the same words whosever the session is or whether it exists.
    assert foreign["error"] == "no_topic_for_role", foreign
    missing = "00000000-0000-4000-8000-000000000000"
    absent = await desk.wait(ALICE, None, "ADVOCATE", missing, 1000, refused=True)
    fresh = await desk.session(ALICE)
    idle = await desk.wait(ALICE, None, "ADVOCATE", fresh, 1000, refused=True)
    own_other_role = await desk.wait(BOB, None, "CONDUCTOR", b, 1000, refused=True)
    for body, session in ((absent, missing), (idle, fresh), (own_other_role, b)):
        assert body["error"] == "no_topic_for_role"
        assert (
            body["message"].replace(session, b).replace("CONDUCTOR", "ADVOCATE")
            == (foreign["message"])
        )
