"""What the debate topic entity itself costs per post cycle: its three commands, pure, timed.

The post cycle of `debate_counts.py` without the runtime, the transport or the store: one
topic of ``--roles`` roles is set up through the handlers over a real SQLite file, loaded
the way its actor loads it (`TopicKind.load`), and then each cycle runs, straight on the
entity, one role's ``Post`` addressed to the next role, that role's ``CheckInbox`` (a
wait's look) and its ``AdvanceCursor`` past what the look returned; the writes are built
and dropped. Printed: the main thread's CPU (``time.thread_time``: the time the process
was not running does not count, so a busy machine skews it less than wall time) per cycle
and per command, the least of ``--repeats`` runs of ``--cycles`` cycles, collector off.

Compare two trees with ``PYTHONPATH=OTHER/src`` (the bench imports ``agora`` from there),
runs alternated. Usage: ``.venv/bin/python bench/debate_entity.py [--roles 5]
[--cycles 3000] [--repeats 7]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import debate_agent
import trio
from cli_args import positive_int
from debate_writer import AGENT, call

from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands.cursors import AdvanceCursor, CheckInbox
from agora.toolsets.debate.commands.messages import Post
from agora.toolsets.debate.handlers.common import new_msg_id
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.topic import KIND, Topic

COMMANDS = ("post", "check", "advance")


def cycles(topic: Topic, seats: list[tuple[str, str, str]], count: int, spent: list[int]) -> None:
    """``count`` post cycles on ``topic``; the thread CPU of each command adds to ``spent``."""
    clock, who, cpu = Clock(), Caller.of(AGENT), time.thread_time_ns
    for i in range(count):
        _, role, _ = seats[i % len(seats)]
        _, to, session = seats[(i + 1) % len(seats)]
        now = clock.now()
        extra: dict[str, Any] = {"payload": None, "body_mode": None, "protocol_version": None}
        command: Any = Post(
            who, new_msg_id(), role, "M", "STATUS", "x" * 40, addressed=True, recipients=(to,),
            extra=extra, tool="debate_post_with_recipients",
        )  # fmt: skip
        t0 = cpu()
        topic.handle(command, now)
        t1 = cpu()
        inbox = topic.handle(CheckInbox(who, session, to, 100, None, None, True, True), now).reply
        t2 = cpu()
        command = AdvanceCursor(who, session, to, inbox.pending[-1].msg_id)
        now = clock.now()
        t3 = cpu()
        topic.handle(command, now)
        t4 = cpu()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        spent[2] += t4 - t3


async def run(args: argparse.Namespace, directory: Path) -> None:
    async with (
        open_store(directory / "entity.db", MIGRATIONS, synchronous="OFF") as store,
        trio.open_nursery() as nursery,
    ):
        runtime = Runtime(store, nursery, clock=Clock())
        seats = await debate_agent.setup_topic(partial(call, runtime), args.roles, "entity")
        key, now = seats[0][0], runtime.clock.now()
        topic = await runtime.read(lambda conn: KIND.load(conn, key, now))
        runtime.begin_shutdown()
        nursery.cancel_scope.cancel()
    cycles(topic, seats, 500, [0, 0, 0])  # warm-up
    best: list[int] | None = None
    gc.disable()
    try:
        for _ in range(args.repeats):
            spent = [0, 0, 0]
            cycles(topic, seats, args.cycles, spent)
            if best is None or sum(spent) < sum(best):
                best = spent
    finally:
        gc.enable()
    assert best is not None
    per = [n / args.cycles / 1000 for n in best]
    split = ", ".join(f"{c} {p:.1f}" for c, p in zip(COMMANDS, per, strict=True))
    print(f"entity: {sum(per):.1f} us thread CPU per post cycle, {split} (least of {args.repeats}"
          f" x {args.cycles})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roles", type=positive_int, default=5)
    parser.add_argument("--cycles", type=positive_int, default=3000)
    parser.add_argument("--repeats", type=positive_int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="debate-entity-") as tmp:
        trio.run(run, args, Path(tmp))


if __name__ == "__main__":
    main()
