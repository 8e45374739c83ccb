"""A parked debate_signal_wait reports progress when its request asked for it.

Agents (and the proxies between them and the server) took a long wait with a
``_meta.progressToken`` and no notification for a dead call. A wait with a token now sends
``notifications/progress`` every ``wait_progress_seconds`` (default 10) while it is parked,
and stops at its answer; a wait without one sends none. Exact times on Trio's autojump clock,
over an in-memory store.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from debate_support import ALICE, BOB, INPUT, OUTPUT

from agora.toolsets.base import ToolCall
from agora.toolsets.debate.handlers.inbox import progress_period
from agora.toolsets.debate.tools import HANDLERS
from agora.toolsets.options import OptionsError


@pytest.fixture
async def room(desk):
    """CONDUCTOR (alice) and ADVOCATE (bob) on one ACTIVE topic."""
    a, b = await desk.session(ALICE), await desk.session(BOB)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "ADVOCATE": (BOB, b)})
    return {"topic": topic, "b": b}


async def _wait(
    desk: Any, room: dict[str, str], sent: list[Any], *, named: bool = True, **meta: Any
) -> dict[str, Any]:
    """debate_signal_wait of ADVOCATE for 55 s (on the room's topic, or with ``named`` False
    on every topic of the session), each progress notification noted in ``sent`` with the
    time it was sent."""

    async def progress(done: float, total: float | None, message: str | None) -> None:
        sent.append((trio.current_time(), done, total, message))

    args = {"topic_id": room["topic"], "role": "ADVOCATE", "session_id": room["b"],
            "timeout_ms": 55_000}  # fmt: skip
    if not named:
        del args["topic_id"]
    assert not INPUT["debate_signal_wait"].errors(args)
    call = ToolCall("debate_signal_wait", args, BOB, desk.runtime, progress=progress, meta=meta)
    result = await HANDLERS["debate_signal_wait"](call)
    OUTPUT["debate_signal_wait"].validate(result)
    return result


@pytest.mark.parametrize("named", [True, False], ids=["on-a-topic", "on-every-topic"])
async def test_a_parked_wait_with_a_token_reports_progress_every_ten_seconds(
    desk, room, autojump_clock, named
):
    sent: list[Any] = []
    with trio.fail_after(120):
        start = trio.current_time()
        out = await _wait(desk, room, sent, named=named, progressToken="t")
    assert trio.current_time() - start == pytest.approx(55)
    assert out["timed_out"] is True
    assert [(at - start, done, total) for at, done, total, _ in sent] == [
        (pytest.approx(10 * n), 10 * n, 55) for n in range(1, 6)
    ]
    assert sent[0][3] == "waiting for messages addressed to ADVOCATE: 10 s of 55 s"


async def test_progress_stops_when_the_wait_answers(desk, room, autojump_clock):
    sent: list[Any] = []
    got: list[dict[str, Any]] = []

    async def wait() -> None:
        got.append(await _wait(desk, room, sent, progressToken=7))

    with trio.fail_after(120):
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.sleep(25)
            posted = await desk.post(ALICE, room["topic"], "CONDUCTOR", "now", to="ADVOCATE")
    assert trio.current_time() - start == pytest.approx(25)
    assert [m["msg_id"] for m in got[0]["pending"]] == [posted["msg_id"]]
    assert [done for _, done, _, _ in sent] == [10, 20]


async def test_a_wait_without_a_token_sends_no_progress(desk, room, autojump_clock):
    sent: list[Any] = []
    with trio.fail_after(120):
        out = await _wait(desk, room, sent)
    assert out["count"] == 0
    assert sent == []


def test_the_progress_period_is_an_option_more_than_zero():
    assert progress_period({}) == 10
    assert progress_period({"wait_progress_seconds": 2.5}) == 2.5
    with pytest.raises(OptionsError, match="wait_progress_seconds must be more than 0, not 0"):
        progress_period({"wait_progress_seconds": 0})
