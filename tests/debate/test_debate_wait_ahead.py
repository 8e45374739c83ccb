"""A check or wait whose since_ts is later than the server's clock says that the cursor is
ahead of every message (a stale or clock-skewed cursor), instead of only "nothing came: wait
again", which kept the agent waiting for messages that could never come after it."""

from __future__ import annotations

import trio
from debate_support import BOB, crew

AHEAD = "2099-01-01T00:00:00Z"


async def test_a_wait_with_a_since_ts_ahead_of_every_message_says_so(desk, autojump_clock):
    room = await crew(desk)
    with trio.fail_after(60):
        out = await desk.wait(BOB, room["topic"], "EXECUTOR_1", room["exec"], 1000, since_ts=AHEAD)
    assert out["timed_out"] is True
    assert f"Your since_ts {AHEAD} is later than the server's clock" in out.guidance
    assert "ahead of every message" in out.guidance
    with trio.fail_after(60):
        plain = await desk.wait(BOB, room["topic"], "EXECUTOR_1", room["exec"], 1000)
    assert "since_ts" not in plain.guidance


async def test_a_check_with_a_since_ts_ahead_of_every_message_says_so(desk):
    room = await crew(desk)
    out = await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"], since_ts=AHEAD)
    assert out["count"] == 0
    assert "ahead of every message" in out.guidance
    plain = await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"])
    assert not hasattr(plain, "guidance")
