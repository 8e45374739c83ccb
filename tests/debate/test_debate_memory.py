"""What a live topic keeps in memory per message: one shared copy of the repeated fields.

A topic entity keeps every message's `MsgMeta` while it is live, so a busy topic holds one
per message posted (the soak's RSS growth: issue 14). The fields messages repeat (role,
kind, priority, the recipient keys, a reply's parent id) must be shared, not copied per
message, both for messages posted to the live topic and for a topic loaded from the store
(where SQLite hands out a fresh string per row); and the collector need not track them.
"""

from __future__ import annotations

import gc

from debate_support import ALICE, BOB

from agora.toolsets.debate.topic import KIND, KIND_NAME, Topic


async def _three_posts(desk):
    a, b = await desk.session(ALICE), await desk.session(BOB)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)})
    first = await desk.post(ALICE, topic, "CONDUCTOR", "one", to="ADVOCATE", kind="Q")
    for n in range(2):
        # Equal strings built at run time, as a JSON decoder hands them out per call.
        role, kind = "".join(["CONDUC", "TOR"]), "".join(["STA", "TUS"])
        await desk.post(
            ALICE, topic, role, f"two {n}", to="".join(["ADVO", "CATE"]), kind=kind,
            reply_to=first["msg_id"],
        )  # fmt: skip
    return topic


def _shared(topic: Topic) -> None:
    metas = [m for m in topic.data.messages.values() if m.kind in ("Q", "STATUS")]
    assert len(metas) == 3
    q, one, two = metas
    assert one.role is two.role is q.role
    assert one.kind is two.kind
    assert one.priority is two.priority
    assert one.recipients == ("role:ADVOCATE",)
    assert one.recipients is two.recipients is q.recipients
    assert one.reply_to == two.reply_to == q.msg_id
    assert one.reply_to is q.msg_id
    assert two.reply_to is q.msg_id
    # The inbox indexes the same shared objects.
    assert all(m is topic.data.messages[m.msg_id] for m in topic.data.inbox["role:ADVOCATE"])
    # And the cyclic collector never scans them (each was one more object per message to
    # scan once, and to rescan in every whole-heap collection).
    assert not any(gc.is_tracked(m) for m in topic.data.messages.values())


async def test_a_live_topic_shares_the_fields_its_messages_repeat(desk):
    key = await _three_posts(desk)
    actor = desk.runtime.registry.named(KIND_NAME, key)
    assert actor is not None
    entity = actor._entity
    assert isinstance(entity, Topic)
    _shared(entity)


async def test_a_topic_loaded_from_the_store_shares_them_too(desk):
    key = await _three_posts(desk)
    now = desk.runtime.clock.now()
    loaded = await desk.runtime.read(lambda conn: KIND.load(conn, key, now))
    _shared(loaded)
    assert loaded.data.messages == desk.runtime.registry.named(KIND_NAME, key)._entity.data.messages
