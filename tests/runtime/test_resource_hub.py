"""The resource hub: who hears of which URI, told only after a commit, held weakly."""

from __future__ import annotations

import gc

import pytest
import trio
from _counter import Add, Explode

from agora.runtime.actor import InternalError
from agora.runtime.entity import Effects
from agora.runtime.resources import ResourceHub


class Ear:
    def __init__(self) -> None:
        self.heard: list[str] = []

    def resource_changed(self, uri: str) -> None:
        self.heard.append(uri)


def test_subscribers_hear_only_the_uris_they_watch():
    hub = ResourceHub()
    one, two = Ear(), Ear()
    hub.watch(one, {"r://a", "r://b"})
    hub.watch(two, {"r://b"})
    hub.updated("r://a", "r://b", "r://c")
    assert (one.heard, two.heard) == (["r://a", "r://b"], ["r://b"])
    hub.watch(one, {"r://c"})  # replaces the last set
    hub.updated("r://a", "r://c")
    assert one.heard[2:] == ["r://c"]
    hub.forget(two)
    hub.updated("r://b")
    assert two.heard == ["r://b"]
    assert (hub.subscribers("r://b"), hub.subscribers("r://c")) == (0, 1)


def test_a_subscriber_that_goes_away_is_dropped_without_unsubscribing():
    hub = ResourceHub()
    ear = Ear()
    hub.watch(ear, {"r://a"})
    del ear
    gc.collect()
    assert hub.subscribers("r://a") == 0
    hub.updated("r://a")


@pytest.fixture
def ear(runtime):
    ear = Ear()
    runtime.resources.watch(ear, {"counter://a", "counter://b"})
    return ear


def _with_uri(kind):
    """Wrap the counter kind so every Add names ``counter://<key>`` in Effects.updated."""

    class Kind:
        kind = "noisy"

        def load(self, conn, key, now):
            counter = kind.load(conn, key, now)

            class Entity:
                def handle(self, command, now):
                    effects = counter.handle(command, now)
                    return Effects(
                        effects.reply, effects.writes, effects.changed, [f"counter://{key}"]
                    )

            return Entity()

    return Kind()


async def test_an_actor_tells_subscribers_after_its_commit_and_not_after_a_failure(
    runtime, kind, ear
):
    noisy = _with_uri(kind)
    with trio.fail_after(10):
        await runtime.call(noisy, "a", Add(1))
        assert ear.heard == ["counter://a"]
        with pytest.raises(InternalError):
            await runtime.call(noisy, "a", Add(-5))  # the commit fails (CHECK)
        with pytest.raises(InternalError):
            await runtime.call(noisy, "b", Explode())
        assert ear.heard == ["counter://a"]
        await runtime.call_atomic([(noisy, "b", Add(1)), (noisy, "a", Add(1))])
    assert sorted(ear.heard) == ["counter://a", "counter://a", "counter://b"]
    runtime.resources_updated("counter://b")
    assert ear.heard[-1] == "counter://b"
