"""`agora.store.episode.Episode`: the one account behind every trouble told once per episode."""

from __future__ import annotations

from agora.store.episode import Episode


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
