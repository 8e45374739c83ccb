"""What readers learn of the conductor acting under an override.

A post the conductor makes as another role (``conductor_override_msg_id``), or through a
binding an override installed (``replace_active`` onto its own session), carries the cited
DECISION as ``conductor_override_msg_id`` wherever a message is shown (read, search, check,
wait), also after a restart; the participant it displaced is refused with the uniform
``unknown_topic``, whose words now say a conductor may have rebound the role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from debate_support import ALICE, BOB, CONDUCTOR, Desk

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS

if TYPE_CHECKING:
    from pathlib import Path


def _marks(messages: list[dict[str, Any]]) -> dict[str, str | None]:
    """body -> the override a shown message carries (None: a participant's own), for the
    posts that speak."""
    return {
        m["body"]: m.get("conductor_override_msg_id") for m in messages if "speaks" in m["body"]
    }


async def _seen(desk: Desk, topic: str, bob: str) -> list[dict[str, str | None]]:
    """The marks as CON (bob) sees them in a read, a search, a check and a wait."""
    read = await desk.call(BOB, "debate_read", topic_id=topic, role="CON")
    found = await desk.call(BOB, "debate_search", topic_id=topic, query="speaks")
    check = await desk.check(BOB, topic, "CON", bob)
    wait = await desk.wait(BOB, topic, "CON", bob, 1000)
    return [
        _marks(x) for x in (read["messages"], found["messages"], check["pending"], wait["pending"])
    ]


async def test_posts_under_an_override_say_so_and_the_displaced_holder_hears_why(
    tmp_path: Path, nursery: Any
) -> None:
    path, wall = tmp_path / "debate.db", FakeWall()
    async with open_store(path, MIGRATIONS) as store:
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        cora, alice, bob = [await desk.session(w) for w in (CONDUCTOR, ALICE, BOB)]
        topic = await desk.topic(
            CONDUCTOR, {"CONDUCTOR": cora, "PRO": (ALICE, alice), "CON": (BOB, bob)}
        )
        dec = (await desk.post(CONDUCTOR, topic, "CONDUCTOR", "replace PRO", kind="DECISION"))[
            "msg_id"
        ]
        await desk.post(ALICE, topic, "PRO", "PRO speaks itself", to="CON")
        # As a role it does not hold, citing the DECISION.
        await desk.post(
            CONDUCTOR,
            topic,
            "PRO",
            "conductor speaks as PRO",
            to="CON",
            conductor_override_msg_id=dec,
        )
        # Through a binding the override installed on a session of its own.
        took = await desk.session(CONDUCTOR)
        await desk.bind(
            CONDUCTOR, topic, "PRO", took, replace_active=True, conductor_override_msg_id=dec
        )
        await desk.post(CONDUCTOR, topic, "PRO", "conductor speaks through the binding", to="CON")
        expected = {
            "PRO speaks itself": None,
            "conductor speaks as PRO": dec,
            "conductor speaks through the binding": dec,
        }
        for marks in await _seen(desk, topic, bob):
            assert marks == expected
        displaced = await desk.post(ALICE, topic, "PRO", "still mine?", refused=True)
        assert displaced["error"] == "unknown_topic"
        assert "rebound to another session by the conductor" in displaced["message"]
        rt.begin_shutdown()
    async with open_store(path, MIGRATIONS) as store:  # the marks are stored, not remembered
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        await desk.post(CONDUCTOR, topic, "PRO", "conductor speaks after a restart", to="CON")
        expected["conductor speaks after a restart"] = dec
        for marks in await _seen(desk, topic, bob):
            assert marks == expected
        rt.begin_shutdown()
