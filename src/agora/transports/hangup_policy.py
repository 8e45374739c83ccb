"""What a client's hang-up does to its call on Streamable HTTP, per revision.

A client that closes its TCP connection before its answer has come: the front end closes the
socket at once (`agora.transports.http`, ``watch_hangup``); this module decides what becomes
of the call. At 2026-07-28 closing the connection is the revision's cancellation signal
(basic/patterns/cancellation): the call, or the listen stream, is cancelled. In a handshake
session (2025-03-26 to 2025-11-25) a call whose SSE stream has begun goes on, for its events
carry ids and its client may resume it with Last-Event-ID; one still to be answered with plain
JSON is cancelled, for that answer has no stream and no id and could never reach anyone; so
are the calls of a 2025-03-26 batch still to be answered with one JSON array. Nothing here
touches a socket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.mcp.listen import LISTEN
from agora.mcp.session import INVOKED

if TYPE_CHECKING:
    from agora.mcp import jsonrpc as rpc
    from agora.transports.http_session import HttpSession
    from agora.transports.sse import EventBuffer
    from agora.transports.streamable import Link


def watch(link: Link, session: HttpSession, msg: rpc.Request) -> None:
    """Have ``link`` tell ``session`` if the client of request ``msg`` hangs up before its
    answer: for a call (and a 2026-07-28 listen stream); anything else is answered at once."""
    rid = msg.id
    if session.modern:
        if msg.method in INVOKED or msg.method == LISTEN:
            link.watch_hangup(lambda: session.conn.cancel(rid))
    elif msg.method in INVOKED:
        link.watch_hangup(lambda: _dropped(session, rid))


def _dropped(session: HttpSession, rid: rpc.RequestId) -> None:
    """The client of handshake-session request ``rid`` hung up. Until the call streams, its
    POST waits to answer with plain JSON (``session.early`` holds it): the call is cancelled,
    as by ``notifications/cancelled`` (a parked long-poll leaves at once).
    Once its stream has begun, the response reading it ends and the call goes on."""
    if rid in session.early:
        session.conn.cancel(rid)
    else:
        session.hangup(rid)


def watch_batch(
    link: Link, session: HttpSession, buf: EventBuffer, rids: list[rpc.RequestId]
) -> None:
    """As `watch`, for a 2025-03-26 batch whose requests ``rids`` answer into ``buf``: while
    nothing but answers came, its POST waits to answer with one JSON array, and its calls
    still running are cancelled; once its stream has begun, the response reading it ends."""

    def dropped() -> None:
        if len(buf.events) > len(buf.answers or ()):
            buf.hangup()
        else:
            for rid in rids:
                session.conn.cancel(rid)

    link.watch_hangup(dropped)
