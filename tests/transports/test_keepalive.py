"""The shared WebSocket keepalive: one task pings every peer once per interval.

The schedule is tested on Trio's autojump clock with scripted peers; a real peer's ping
round (`Peer.keepalive_round`) on a real socket pair: a ping the socket cannot take counts
as sent and unanswered, a ping cut short is finished before the next frame.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio
import trio.testing

from agora.transports import frames
from agora.transports.keepalive import BATCH, SLOTS, Keepalive
from agora.transports.ws_peer import PING_TIMEOUT, Peer

if TYPE_CHECKING:
    from collections.abc import Iterator

PING = frames.control_frame(frames.PING, b"agora")


class Scripted:
    """A peer that records when it was visited and says it is alive ``lives`` times."""

    def __init__(self, lives: int = 1000) -> None:
        self.slot = 0
        self.visits: list[float] = []
        self.lives = lives
        self.visited = trio.Event()

    def keepalive_round(self) -> bool:
        self.visits.append(trio.current_time())
        self.visited.set()
        self.lives -= 1
        return self.lives > 0


async def test_each_peer_is_visited_once_per_interval_from_one_interval_after_it_joined(
    autojump_clock: trio.testing.MockClock,
):
    async with trio.open_nursery() as nursery:
        keepalive = Keepalive(16.0, nursery)
        first = Scripted()
        keepalive.add(first)
        await trio.sleep(5.5)
        second = Scripted()
        keepalive.add(second)
        await trio.sleep(60)
        assert first.visits == [16.0, 32.0, 48.0, 64.0]
        assert second.visits == [21.0, 37.0, 53.0]
        keepalive.discard(first)
        keepalive.discard(second)
        assert len(keepalive) == 0
    assert trio.current_time() <= 66.5  # the task ended with the last peer


async def test_a_peer_that_fails_its_round_is_dropped(autojump_clock: trio.testing.MockClock):
    async with trio.open_nursery() as nursery:
        keepalive = Keepalive(1.6, nursery)
        dying, living = Scripted(lives=2), Scripted()
        keepalive.add(dying)
        keepalive.add(living)
        await trio.sleep(10)
        assert len(dying.visits) == 2
        assert len(living.visits) == 6
        assert len(keepalive) == 1
        keepalive.discard(living)


async def test_a_large_bucket_is_visited_in_batches_with_checkpoints(
    autojump_clock: trio.testing.MockClock,
):
    seen: list[int] = []
    async with trio.open_nursery() as nursery:
        keepalive = Keepalive(SLOTS * 1.0, nursery)
        peers = [Scripted() for _ in range(BATCH * 3)]
        for peer in peers:
            keepalive.add(peer)

        async def watch() -> None:  # runs between the batches of one visit
            await peers[0].visited.wait()
            while True:
                seen.append(sum(len(p.visits) for p in peers))
                if seen[-1] == len(peers):
                    return
                await trio.lowlevel.checkpoint()

        nursery.start_soon(watch)
        await trio.sleep(SLOTS + 0.5)
        assert all(len(p.visits) == 1 for p in peers)
        # Others ran while the bucket was visited, always between two whole batches.
        assert any(0 < n < len(peers) for n in seen)
        assert all(n % BATCH == 0 for n in seen)
        for peer in peers:
            keepalive.discard(peer)


async def test_no_interval_means_no_keepalive(autojump_clock: trio.testing.MockClock):
    async with trio.open_nursery() as nursery:
        keepalive = Keepalive(0, nursery)
        peer = Scripted()
        keepalive.add(peer)
        await trio.sleep(100)
        assert peer.visits == []
        keepalive.discard(peer)


@contextmanager
def paired() -> Iterator[tuple[Peer, socket.socket]]:
    """A `Peer` on one end of a socket pair, and the other end (blocking)."""
    ours, theirs = trio.socket.socketpair()
    other = socket.socket(fileno=theirs.detach())
    with ours, other:
        yield Peer(trio.SocketStream(ours), send_timeout=1.0), other


async def test_a_peer_pinged_twice_without_a_pong_is_cancelled_with_1011():
    with paired() as (peer, other):
        peer.scope = scope = trio.CancelScope()  # the session's (cancelled, not entered here)
        assert peer.keepalive_round()
        assert other.recv(64) == PING
        peer.pongs += 1  # answered
        assert peer.keepalive_round()
        assert peer.missed == 0
        assert other.recv(64) == PING
        assert peer.keepalive_round()  # not answered: one missed
        assert peer.missed == 1
        assert not scope.cancel_called
        assert not peer.keepalive_round()  # two missed in a row
        assert scope.cancel_called
        assert peer.close_code == PING_TIMEOUT


async def test_a_ping_the_socket_cannot_take_counts_as_unanswered():
    with paired() as (peer, _):
        peer.scope = scope = trio.CancelScope()
        filler = b"x" * 65536
        while True:  # fill the socket: the peer does not read
            try:
                os.write(peer.fd, filler)
            except BlockingIOError:
                break
        assert peer.keepalive_round()
        assert peer.keepalive_round()
        assert not peer.keepalive_round()
        assert scope.cancel_called


async def test_a_ping_cut_short_is_finished_before_the_next_frame():
    with paired() as (peer, other):
        peer._rest = memoryview(PING)[3:]  # as if the socket had taken 3 bytes of the ping
        text = frames.frame(b'{"jsonrpc":"2.0"}')
        assert await peer.send(text)
        assert other.recv(4096) == PING[3:] + text


async def test_no_ping_while_another_frame_is_being_sent():
    with paired() as (peer, other):
        peer._sending = True  # as while a call's reply is being written
        assert peer.keepalive_round()
        assert not peer.pinged
        peer._sending = False
        other.setblocking(False)
        try:
            assert other.recv(64) == b""
        except BlockingIOError:
            pass  # nothing was written
        else:
            raise AssertionError("the ping was written while the lock was held")


async def test_senders_that_wait_go_in_turn_and_one_cancelled_drops_out():
    with paired() as (peer, other):
        first = frames.frame(b"1" * 300_000)  # more than the socket pair holds
        second, third = frames.frame(b'"2"'), frames.frame(b'"3"')
        dropped = trio.CancelScope()

        async def send_second() -> None:
            with dropped:
                await peer.send(second)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.send, first)
            await trio.testing.wait_all_tasks_blocked()  # part written, waiting for room
            nursery.start_soon(send_second)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(peer.send, third)
            await trio.testing.wait_all_tasks_blocked()
            assert peer._queue is not None
            assert len(peer._queue) == 2
            dropped.cancel()  # the second sender gives up its place
            received = bytearray()
            while len(received) < len(first) + len(third):
                received += await trio.to_thread.run_sync(other.recv, 1 << 16)
        assert received == first + third
        assert not peer._sending
