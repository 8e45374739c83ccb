"""The room pool: server-seeded entries take a room built ahead, off the event loop.

A background task keeps ``room_pool_size`` rooms per suite ready, building them in worker
threads; an entry without a seed takes one (the same room its seed always gives); an entry
with a chosen seed, or one that finds the pool empty, builds its room as before.
"""

from __future__ import annotations

import datetime as dt
import gc
import secrets

import pytest
import trio
import trio.testing
from harness import START

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber import service
from agora.toolsets.chamber.attempt import Attempt, Rules, seed_commitment
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.generate import build_room
from agora.toolsets.chamber.opening import entry_reply, opening
from agora.toolsets.chamber.pool import QUIET_SECONDS, RoomPool, pool_size
from agora.toolsets.chamber.transcript import genesis

SUITES = [("chambre-chrono-v0", "chamber"), ("chambre-atelier-v0", "atelier")]


async def test_the_pool_fills_every_suite_and_tops_up_after_a_take(runtime, options, nursery):
    options["chamber"]["room_pool_size"] = 3
    pool = RoomPool(SUITES)
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    assert pool.status() == {s: {"ready": 3, "size": 3} for s, _ in SUITES}
    ready = pool.take("chambre-atelier-v0", 0.0)
    assert ready is not None
    assert pool.status()["chambre-atelier-v0"]["ready"] == 2
    # A pooled room is exactly the room its seed gives, and its head the genesis of its seed
    # commitment.
    assert rooms.every_text(ready.room) == rooms.every_text(
        build_room.__wrapped__("chambre-atelier-v0", "atelier", ready.seed)
    )
    assert ready.head == genesis(seed_commitment(ready.salt, "chambre-atelier-v0", ready.seed))
    with trio.fail_after(30):
        await pool.wait_full()
    assert pool.status()["chambre-atelier-v0"]["ready"] == 3


def test_an_empty_pool_gives_nothing_and_sizes_are_checked():
    pool = RoomPool(SUITES)
    assert pool.take("chambre-chrono-v0", 0.0) is None
    assert pool.take("no-such-suite", 0.0) is None
    assert pool_size({}) == 128
    with pytest.raises(ValueError, match="room_pool_size"):
        pool_size({"room_pool_size": -1})


async def test_server_seeded_entries_take_pooled_rooms_chosen_seeds_do_not(
    agent, chamber, runtime, options, nursery
):
    options["chamber"]["room_pool_size"] = 2
    pool = chamber[1].pool
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    ready = [r.seed for r in pool._ready["chambre-chrono-v0"]]
    entered = await agent.enter()
    handle = entered["attempt_handle"]

    def seed_of(conn):
        return conn.execute(
            "SELECT seed FROM chamber_attempts WHERE handle = ?", (handle,)
        ).fetchone()[0]

    assert await runtime.read(seed_of) == ready[0]
    assert entered["room"] == build_room("chambre-chrono-v0", "chamber", ready[0]).title
    assert entered["seed_source"] == "server"
    chosen = await agent.enter(seed="mine")
    assert chosen["seed_source"] == "participant"
    remaining = [r.seed for r in pool._ready["chambre-chrono-v0"]]
    assert ready[1] in remaining
    assert ready[0] not in remaining


async def test_with_the_pool_off_entries_still_build_their_rooms(agent, options):
    options["chamber"]["room_pool_size"] = 0
    entered = await agent.enter()
    assert entered["ok"] is True


async def test_a_full_pool_leaves_no_young_objects_for_the_next_burst(runtime, options, nursery):
    # The server collects rarely (a high young-generation threshold): without the refill's own
    # pass, the rooms just built stay young and the next burst of entries pays for scanning them.
    options["chamber"]["room_pool_size"] = 3
    before = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1_000_000, 20, 10)
    try:
        pool = RoomPool(SUITES)
        nursery.start_soon(pool.refill, runtime)
        with trio.fail_after(30):
            await pool.wait_full()
        young = gc.get_count()[0]
    finally:
        gc.set_threshold(*before)
    assert young < 500  # six rooms are over 2,000 container objects


async def test_a_pooled_entry_draws_nothing_and_keeps_what_the_pool_drew(
    agent, chamber, runtime, options, nursery, monkeypatch
):
    options["chamber"]["room_pool_size"] = 1
    pool = chamber[1].pool
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    ready = pool._ready["chambre-chrono-v0"][0]
    drawn: list[int] = []
    token_hex = secrets.token_hex

    def counted(nbytes=None):
        drawn.append(nbytes)
        return token_hex(nbytes)

    monkeypatch.setattr(service.secrets, "token_hex", counted)
    entered = await agent.enter()
    assert drawn == []  # handle, seed and salt all came with the pooled room
    monkeypatch.undo()
    assert entered["seed_source"] == "server"
    assert entered["attempt_handle"] == ready.handle

    def row(conn):
        return conn.execute(
            "SELECT seed, seed_salt, head FROM chamber_attempts WHERE handle = ?", (ready.handle,)
        ).fetchone()

    seed, salt, head = await runtime.read(row)
    assert (seed, salt) == (ready.seed, ready.salt)
    assert head == genesis(seed_commitment(salt, "chambre-chrono-v0", seed))
    # The chain goes on from that head: an action's record links to it.
    acted = await agent.tool(
        "chamber_action", challenge_handle=ready.handle, op="look", expected_action_index=0
    )
    assert acted["action_index"] == 1


async def test_an_entry_the_pool_cannot_serve_draws_its_own_handle_seed_and_salt(
    agent, options, monkeypatch
):
    options["chamber"]["room_pool_size"] = 0
    drawn: list[int] = []
    token_hex = secrets.token_hex

    def counted(nbytes=None):
        drawn.append(nbytes)
        return token_hex(nbytes)

    monkeypatch.setattr(service.secrets, "token_hex", counted)
    entered = await agent.enter()
    monkeypatch.undo()
    assert entered["seed_source"] == "server"
    assert sorted(drawn) == [8, 8, 16]  # the handle, the seed and its salt


async def test_the_refill_waits_until_no_entry_came_for_the_quiet_period(
    runtime, options, nursery, mock_clock
):
    # A burst of takes must not wake the refill once per take: it notes the time of the
    # last one and resumes building only QUIET_SECONDS after it.
    options["chamber"]["room_pool_size"] = 3
    pool = RoomPool(SUITES[:1])
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    suite = SUITES[0][0]
    for _ in range(2):
        assert pool.take(suite, trio.current_time()) is not None
        mock_clock.jump(QUIET_SECONDS * 0.8)
        await trio.testing.wait_all_tasks_blocked()
    assert pool.status()[suite]["ready"] == 1  # a take came within the quiet period
    mock_clock.jump(QUIET_SECONDS * 0.3)  # now none came for QUIET_SECONDS
    with trio.fail_after(30):
        await pool.wait_full()
    assert pool.status()[suite]["ready"] == 3


@pytest.mark.parametrize(("suite", "engine"), SUITES)
def test_a_pre_rendered_entry_reply_is_the_one_the_room_gives(suite, engine):
    # The pool renders the room's part of the entry reply in its worker thread; the reply
    # built from it must be the long way's, key for key and in the same order (the text
    # mirror of structuredContent is its JSON), for every room and whatever the attempt.
    rules = Rules.from_contract(default_contract())
    for n in range(60):
        seed = f"pre-{n}"
        room = build_room(suite, engine, seed)
        wall = START + dt.timedelta(seconds=n)
        attempt = Attempt(
            rules=rules, handle=f"chl-{n:016x}", suite_id=suite, generation="001",
            engine=engine, seed=seed, seed_salt="00" * 16, identity={}, assurance="a",
            preflight=None, principal="anonymous", created_at=wall,
            expires_at=wall + rules.ttl,
        )  # fmt: skip
        attempt._room = room
        pre = opening(room)
        fast, slow = entry_reply(attempt, wall, pre), entry_reply(attempt, wall, None)
        assert list(fast.items()) == list(slow.items())
        # Past its expiry, or once played, the opening is not trusted: the long way answers.
        late = wall + rules.ttl
        assert list(entry_reply(attempt, late, pre).items()) == list(
            entry_reply(attempt, late, None).items()
        )
        attempt.action_index = 1
        assert entry_reply(attempt, wall, pre) == entry_reply(attempt, wall, None)
