"""`HangupWatch`: one task notices the clients that close their connection mid-request.

The HTTP front end's watch of a pending request's socket used to be a task per request (a
fifth of an HTTP call's server CPU); the sockets now sit in one epoll set. Real sockets on
loopback: a client's close is told once, a discarded watch is told nothing, and a watch is
only ended by the callback that made it (a closed socket's number may be reused at once).
"""

from __future__ import annotations

import select
import socket

import pytest
import trio

from agora.transports.hangup_watch import HangupWatch

pytestmark = pytest.mark.skipif(not hasattr(select, "epoll"), reason="needs: epoll (Linux)")

GUARD = 10


def pair() -> tuple[socket.socket, socket.socket]:
    """A connected TCP pair on loopback: (the server's side, the client's)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    return server, client


async def test_a_client_that_closes_is_told_once_and_pipelined_bytes_are_not():
    told: list[str] = []
    heard = trio.Event()
    server, client = pair()
    with server, trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            watch = HangupWatch(nursery)
            assert watch.add(server.fileno(), lambda: (told.append("gone"), heard.set()))
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")  # a next request, sent early
            await trio.sleep(0.2)
            assert told == []
            client.close()
            await heard.wait()
            await trio.sleep(0.1)
            assert told == ["gone"]
            nursery.cancel_scope.cancel()


async def test_a_discarded_watch_is_told_nothing_and_only_its_own_maker_discards():
    told: list[str] = []
    heard = trio.Event()
    first, first_client = pair()
    second, second_client = pair()
    with first, second, trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            watch = HangupWatch(nursery)

            def mine() -> None:
                told.append("first")

            watch.add(first.fileno(), mine)
            watch.discard(first.fileno(), mine)  # answered: no longer watched
            first_client.close()
            watch.add(second.fileno(), lambda: (told.append("second"), heard.set()))
            watch.discard(second.fileno(), mine)  # another watch's maker: ignored
            second_client.close()
            await heard.wait()
            await trio.sleep(0.1)
            assert told == ["second"]
            nursery.cancel_scope.cancel()
