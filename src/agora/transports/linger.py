"""Closing a connection so that the peer reads our last words: a lingering close.

When the server refuses a request it has not read to the end (a 413 body, a 431 head, a
WebSocket frame over the size limit), the peer is usually still sending. Closing the socket
with unread bytes in its receive buffer makes the kernel send a TCP reset, which can
destroy the answer before the peer reads it: the peer sees ECONNRESET, not the 413, 431
or 1009 it was sent. So: send the answer, stop writing (FIN), read and discard whatever
still arrives until the peer closes or a bounded time has passed, then close. Nothing here
parses what is discarded.
"""

from __future__ import annotations

import trio

#: Longest a closing connection keeps discarding what its peer still sends.
LINGER_SECONDS = 2.0
_DISCARD_BYTES = 65536


async def linger_close(stream: trio.SocketStream, seconds: float = LINGER_SECONDS) -> None:
    """Half-close ``stream``, discard input until the peer closes (or ``seconds``), close it.

    Runs shielded from cancellation (it is always bounded by ``seconds``), so it can be used
    in ``finally`` blocks of cancelled tasks. Never raises for a broken or closed stream.

    Args:
        stream: The connection; the answer must already be written.
        seconds: Most seconds to wait for the peer to close its side.
    """
    with trio.CancelScope(shield=True):
        with trio.move_on_after(seconds):
            try:
                await stream.send_eof()
                while await stream.receive_some(_DISCARD_BYTES):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError):
                pass
        await stream.aclose()
