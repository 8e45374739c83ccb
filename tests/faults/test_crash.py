"""SIGKILL under the mixed load of all four toolsets: nothing acknowledged lost, nothing half done.

``agora serve`` (chess, chamber, router, debate; ``synchronous=FULL``) runs as a subprocess on
one SQLite file. The mixed load (``bench/mixed.py``: debate posters and parked long-polls,
router agents, chamber agents, readers of every toolset) runs against it, logging every
acknowledged write; after a random number (seeded) of further acknowledgements the server
gets SIGKILL, with calls of every kind in flight. The file is then
checked (`crash_checks.check_database`): every acknowledged write present, no half-applied
multi-row change, sealed cards and debate messages byte-identical to what earlier rounds saw.
The server restarts on the same file and the same actors resume from their last
acknowledged state. ``AGORA_CRASH_ROUNDS`` kills (3 by default; 20 for a local run), then
one last round without a kill in which every kind of writer must make progress.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
from collections import Counter

import mixed
import pytest
import trio
from crash_checks import Frozen, check_database, resumed_problems
from faults_support import TIMEOUT, drain, start

pytestmark = pytest.mark.sqlite_only(
    "checks a copy of the SQLite file; PostgreSQL's kill -9: tests/nodes"
)

ROUNDS = int(os.environ.get("AGORA_CRASH_ROUNDS", "3"))
SESSIONS = int(os.environ.get("AGORA_CRASH_SESSIONS", "40"))


async def _round(mix: mixed.Mix, process: trio.Process, kill_at: int | None) -> None:
    """Run the load; SIGKILL the server once ``kill_at`` more writes were acknowledged."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, process)
        if kill_at is None:
            await mixed.run(mix, 3.0)
            process.terminate()
        else:
            nursery.start_soon(mixed.run, mix, TIMEOUT)
            with trio.fail_after(TIMEOUT):
                await mix.acks.reached(len(mix.acks.records) + kill_at).wait()
            process.send_signal(signal.SIGKILL)
        with trio.fail_after(TIMEOUT):
            await process.wait()


async def test_sigkill_under_mixed_load_loses_nothing_acknowledged(tmp_path):
    rng = random.Random(int(os.environ.get("AGORA_CRASH_SEED", "14")))
    db, config = tmp_path / "crash.db", mixed.write_config(tmp_path)
    acks = mixed.Acks(tmp_path / "acks.jsonl")
    frozen = Frozen()
    mix = mixed.Mix("", mixed.plan_actors(SESSIONS), acks)
    kills = 0
    for n in range(ROUNDS + 1):
        process, mix.url = await start(db, config)
        if n == 0:
            with trio.fail_after(TIMEOUT):
                await mixed.setup_topics(mix, 4)
        before = Counter(a["kind"] for a in acks.records)
        last = n == ROUNDS
        await _round(mix, process, None if last else rng.randrange(20, 400))
        if last:
            assert process.returncode == 0
        else:
            assert process.returncode == -signal.SIGKILL
            kills += 1
        problems = check_database(db, acks.records, frozen)
        assert not problems, f"after kill {kills}: " + "\n".join(problems[:20])
    problems = resumed_problems(acks.records, before, mix.stats.refusals, mix.stats.last_refusal)
    assert not problems, f"after {kills} kills: " + "; ".join(problems)
    assert len(acks.records) > 50 * (ROUNDS + 1) // 4
    _the_checker_can_fail(db, tmp_path / "copy.db", frozen)


def _the_checker_can_fail(db, copy, frozen: Frozen) -> None:
    """The checker itself: a lost ack, a half-applied run and a changed message are seen."""
    lost = {"kind": "debate_message", "msg_id": "never-written", "topic_id": "t", "body": "b"}
    assert check_database(db, [lost], frozen)
    copy.write_bytes(db.read_bytes())
    conn = sqlite3.connect(copy)
    with conn:
        conn.execute(
            "DELETE FROM router_events WHERE rowid = (SELECT max(rowid) FROM router_events)"
        )
        conn.execute("UPDATE debate_messages SET ts = ts || ' ' WHERE rowid = 1")
    conn.close()
    problems = check_database(copy, [], frozen)
    assert any("half applied" in p for p in problems), problems
    assert any("changed after it was written" in p for p in problems), problems
