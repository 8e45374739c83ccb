"""A participant finds a topic someone else opened by the topic_id handed to it.

The instructions said to bind a role on a topic someone else opened, but not how to find
it: debate_work_queue does not list a topic the caller holds no role in, and reads refuse
it, while debate_bind_role with its topic_id works. They say so now, and it holds.
"""

from __future__ import annotations

from debate_support import BOB, CONDUCTOR

from agora.toolsets.debate import INSTRUCTIONS


async def test_a_topic_someone_else_opened_is_found_by_its_topic_id(desk):
    told = " ".join(INSTRUCTIONS.split())
    assert "get its topic_id from whoever opened it (out of band:" in told
    assert "debate_work_queue does not list a topic you hold no role in" in told
    assert "debate_bind_role with that topic_id and the role left for you" in told
    roles = {"CONDUCTOR": await desk.session(CONDUCTOR), "CON": None}
    topic = await desk.topic(CONDUCTOR, roles, state="INIT")
    listed = await desk.call(BOB, "debate_work_queue")
    assert topic not in [item["topic_id"] for item in listed["items"]]
    read = await desk.refused(BOB, "debate_read", topic_id=topic, role="CON")
    assert read["error"] == "unknown_topic"
    await desk.bind(BOB, topic, "CON", await desk.session(BOB))
    listed = await desk.call(BOB, "debate_work_queue")
    assert topic in [item["topic_id"] for item in listed["items"]]
