"""A store thread's outcome that comes after the Trio run ended is said once, not raised.

A writer stopped past its deadline (its batch waited for another process's write lock) may
finish after the event loop: ``run_sync_soon`` then raises ``RunFinishedError`` in the
writer's thread, which logged 'could not report the outcome' with a traceback after test
runs (and would after an embedding program's run).
"""

from __future__ import annotations

import logging

import trio

from agora.store.opening import loop_delivery


def test_an_outcome_after_the_run_ended_is_one_info_line(caplog):
    ran: list[str] = []

    async def main():
        deliver = loop_delivery()
        deliver(lambda: ran.append("during"))
        await trio.lowlevel.checkpoint()
        return deliver

    deliver = trio.run(main)
    assert ran == ["during"]
    with caplog.at_level(logging.INFO, logger="agora.store.opening"):
        deliver(lambda: ran.append("after"))  # raised RunFinishedError into the thread
    assert ran == ["during"]
    [record] = caplog.records
    assert record.levelno == logging.INFO
    assert "after the event loop ended" in record.getMessage()
    assert record.exc_info is None
