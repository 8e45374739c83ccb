"""The room pool: server-seeded entries take a room built ahead, off the event loop.

A background task keeps ``room_pool_size`` rooms per suite ready, building them in worker
threads; an entry without a seed takes one (the same room its seed always gives); an entry
with a chosen seed, or one that finds the pool empty, builds its room as before.
"""

from __future__ import annotations

import gc
import secrets

import pytest
import trio

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber import service
from agora.toolsets.chamber.generate import build_room
from agora.toolsets.chamber.pool import RoomPool, pool_size

SUITES = [("chambre-chrono-v0", "chamber"), ("chambre-atelier-v0", "atelier")]


async def test_the_pool_fills_every_suite_and_tops_up_after_a_take(runtime, options, nursery):
    options["chamber"]["room_pool_size"] = 3
    pool = RoomPool(SUITES)
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    assert pool.status() == {s: {"ready": 3, "size": 3} for s, _ in SUITES}
    seed, room = pool.take("chambre-atelier-v0")
    assert pool.status()["chambre-atelier-v0"]["ready"] == 2
    # A pooled room is exactly the room its seed gives.
    assert rooms.every_text(room) == rooms.every_text(
        build_room.__wrapped__("chambre-atelier-v0", "atelier", seed)
    )
    with trio.fail_after(30):
        await pool.wait_full()
    assert pool.status()["chambre-atelier-v0"]["ready"] == 3


def test_an_empty_pool_gives_nothing_and_sizes_are_checked():
    pool = RoomPool(SUITES)
    assert pool.take("chambre-chrono-v0") is None
    assert pool.take("no-such-suite") is None
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
    ready = [seed for seed, _ in pool._ready["chambre-chrono-v0"]]
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
    remaining = [seed for seed, _ in pool._ready["chambre-chrono-v0"]]
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


async def test_a_pooled_entry_draws_no_seed_of_its_own(
    agent, chamber, runtime, options, nursery, monkeypatch
):
    options["chamber"]["room_pool_size"] = 1
    pool = chamber[1].pool
    nursery.start_soon(pool.refill, runtime)
    with trio.fail_after(30):
        await pool.wait_full()
    drawn: list[int] = []
    token_hex = secrets.token_hex

    def counted(nbytes=None):
        drawn.append(nbytes)
        return token_hex(nbytes)

    monkeypatch.setattr(service.secrets, "token_hex", counted)
    entered = await agent.enter()
    assert entered["seed_source"] == "server"
    assert drawn == [8, 16]  # the handle and the seed's salt; the pooled room brought its seed
