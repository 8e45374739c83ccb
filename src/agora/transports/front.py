"""The server's front end: every accepted TCP connection, counted against the connection cap.

`FrontEnd.handle` serves one accepted connection: a 503 past ``max_connections`` (a
liveness or readiness probe gets its answer, `agora.transports.overflow`), else its
requests (`agora.transports.http.HttpConnection`), then, if it upgraded, its WebSocket
session. It also holds what all connections share: the resolved ``/mcp`` endpoints, one
`Sweeper` for read deadlines, one `Keepalive` for WebSocket pings, the call workers, and
the counts shutdown waits on (`wait_quiet`, `wait_closed`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from agora.server.connection import Connection
from agora.server.workers import Workers
from agora.transports.deadlines import Sweeper
from agora.transports.episodes import Episode, Refusals
from agora.transports.hangup_watch import HangupWatch
from agora.transports.http import HttpConnection
from agora.transports.keepalive import Keepalive
from agora.transports.overflow import Overflow
from agora.transports.websocket import serve_websocket
from agora.web.prefix import base_path

if TYPE_CHECKING:
    from agora.server.app import App, Endpoint
    from agora.transports.streamable import StreamableHTTP

log = logging.getLogger(__name__)


class FrontEnd:
    """All connections of the server's listeners: counts them against its connection cap."""

    def __init__(self, app: App, mcp: StreamableHTTP, max_connections: int | None = None) -> None:
        self.app = app
        self.mcp = mcp
        self.connections = 0
        #: Open connections past which a new one gets 503: ``max_connections``, or less
        #: when the open-files limit allows fewer (`agora.server.descriptors`).
        self.max_connections = (
            app.config.max_connections if max_connections is None else max_connections
        )
        #: The path prefix of ``public_url`` the pages link under (`agora.web.prefix`).
        self.base = base_path(app.config.public_url)
        #: Resolved ``/mcp...`` paths (a handful in practice; bounded all the same).
        self._endpoints: dict[str, Endpoint | None] = {}
        #: Requests between head and the end of their response.
        self.busy = 0
        #: Set once `busy` drops to 0, for `wait_quiet` (made only when someone waits).
        self._quiet: trio.Event | None = None
        #: Set once `connections` drops to 0, for `wait_closed` (likewise).
        self._closed: trio.Event | None = None
        #: Pings every WebSocket peer from one task.
        self.keepalive = Keepalive(app.config.ping_interval, mcp.nursery)
        #: Ends the connections that wait too long for their peer, from one task.
        self.sweeper = Sweeper(mcp.nursery)
        #: Clients that hang up while their request is pending (one task for all).
        self.hangups = HangupWatch(mcp.nursery)
        #: The connections past the cap being refused (`agora.transports.overflow`).
        self.overflow = Overflow()
        #: Refusals at the cap, logged once per episode.
        self.full = Episode(log, "connections")
        #: Requests refused for their token, Host or Origin, logged once a minute per cause
        #: (its task ends with the nursery, at shutdown).
        self.refusals = Refusals(log, mcp.nursery)
        #: Run the WebSocket sessions' calls (their nursery is cancelled at shutdown).
        self.workers = Workers(mcp.nursery, Connection.worker)

    async def handle(self, stream: trio.SocketStream) -> None:
        """Serve one accepted connection until it ends."""
        self.connections += 1
        gone = False  # (counted out already: `left`)
        try:
            conn = HttpConnection(self, stream)
            if self.connections > self.max_connections:
                self.full.refuse(self.max_connections)
                await self.overflow.refuse(conn)
                return
            self.full.accept()
            self.sweeper.add(conn)
            try:
                await conn.serve()
            finally:
                self.sweeper.discard(conn)
                gone = conn.gone
            upgrade = conn.upgrade
            # A WebSocket may stay parked for hours: nothing of its HTTP exchange stays with it.
            del conn
            if upgrade is not None:
                await serve_websocket(
                    self.app,
                    stream,
                    *upgrade,
                    nursery=self.mcp.nursery,
                    keepalive=self.keepalive,
                    workers=self.workers,
                )
        finally:
            if not gone:
                self.left()

    def left(self) -> None:
        """Count a connection out: when it ends, or at once when its client closed it while
        its request's task still runs (`HttpConnection.gone`: that task may go on with a
        resumable call, but the socket is closed)."""
        self.connections -= 1
        if not self.connections and self._closed is not None:
            self._closed.set()
            self._closed = None

    def endpoint(self, path: str) -> Endpoint | None:
        """The MCP endpoint at ``path`` with no query, if any (`App.endpoint`, remembered)."""
        try:
            return self._endpoints[path]
        except KeyError:
            found = self.app.endpoint(path)
            if len(self._endpoints) >= 1024:
                self._endpoints.clear()
            self._endpoints[path] = found
            return found

    def started(self) -> None:
        """A request is being answered."""
        self.busy += 1

    def finished(self) -> None:
        """A request's answer is written (or abandoned)."""
        self.busy -= 1
        if self.busy == 0 and self._quiet is not None:
            self._quiet.set()
            self._quiet = None

    async def wait_closed(self) -> None:
        """Until no connection is open: every client has closed (shutdown's linger, see
        `App.drain`, ends then)."""
        if self.connections:
            if self._closed is None:
                self._closed = trio.Event()
            await self._closed.wait()

    async def wait_quiet(self) -> None:
        """Until no response is being written (shutdown lets them finish)."""
        if self.busy:
            if self._quiet is None:
                self._quiet = trio.Event()
            await self._quiet.wait()
