"""`agora.store.episode.Episode`: the one account behind every trouble told once per episode."""

from __future__ import annotations

import logging

from agora.store.episode import Episode
from agora.store.lockwait import LockWaits


def test_an_episode_begins_at_its_first_strike_and_counts_the_rest_until_it_ends():
    now = [100.0]
    episode = Episode(lambda: now[0])
    assert not episode.under_way
    assert episode.end() is None  # none under way: nothing to tell
    assert episode.strike() is True  # the first: its line is due
    now[0] = 103.5
    assert episode.strike(4) is False  # counted, not told
    assert episode.under_way
    assert (episode.since, episode.count) == (100.0, 5)
    assert episode.end() == 3.5
    assert not episode.under_way
    assert episode.count == 5  # kept for the closing line
    assert episode.end() is None  # told once
    now[0] = 200.0
    assert episode.strike(0) is True  # a new one, from a strike that counts none
    assert (episode.since, episode.count) == (200.0, 0)


def test_an_episode_can_begin_before_its_first_strike_was_seen_and_counts_in_words():
    now = [100.0]
    episode = Episode(lambda: now[0])
    assert episode.strike(ago=10.0) is True  # a write that waited 10 s, then was dropped
    assert episode.told("write") == "1 write"
    now[0] = 102.0
    assert episode.end() == 12.0


def test_the_lock_wait_episode_is_timed_from_the_first_write_that_waited(caplog):
    """An operator's finding: the write lock was held 13 s, and the log said "after 2.3 s
    waiting for the write lock": it timed the episode from the first dropped write, which
    had already waited commit_timeout. And "1 writes" is now "1 write"."""
    caplog.set_level(logging.INFO, logger="agora.store.sqlite")
    waits = LockWaits("agora.db")
    waits.dropped(10.0)
    waits.committed()
    [_, again] = [r.getMessage() for r in caplog.records]
    length = float(again.split("after ")[1].split(" s")[0])
    assert length >= 10.0, again
    assert again.endswith(": 1 write dropped meanwhile"), again
