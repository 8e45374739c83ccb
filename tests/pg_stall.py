"""A TCP relay in front of the test PostgreSQL that can stop passing bytes: a stalled server.

An operator's PostgreSQL stopped with SIGSTOP (or a paused VM, a hung storage layer) keeps its
sockets: the kernel still accepts connections into the backlog and acknowledges every byte,
so TCP keepalives are answered and libpq waits on its socket for ever. `StallingRelay` gives
the tests that server without stopping the suite's cluster: agora connects to the relay's
port (`url`), and `stall` makes it stop accepting and stop relaying, both ways, until
`resume`; bytes already sent wait in the kernel's buffers, as they would at a stopped
server. Real sockets and the real PostgreSQL behind them; the relay is one thread. Not a
test module.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Iterator


class StallingRelay:
    """Relays every connection to ``upstream`` (a postgresql:// URL) until `stall`."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        port = self._listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{port}"
        #: The URL to give agora: ``upstream`` with this relay's address.
        self.url = urlunsplit(
            parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host)
        )
        self._running = threading.Event()
        self._running.set()
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._pairs: dict[socket.socket, socket.socket] = {}
        #: Connections accepted past `relay_only` and never relayed (`hold_after`).
        self.held: list[socket.socket] = []
        self._relay_only: int | None = None
        self._thread = threading.Thread(target=self._run, name="pg-stall-relay", daemon=True)
        self._thread.start()

    def stall(self) -> None:
        """Stop accepting and relaying (what is in flight stays in the kernels' buffers)."""
        self._running.clear()
        self._wake_w.send(b"x")

    def resume(self) -> None:
        """Accept and relay again, from where it stopped."""
        self._running.set()
        self._wake_w.send(b"x")

    def hold_after(self, count: int) -> None:
        """Relay only the next ``count`` new connections; accept the later ones and hold
        them (in `held`), unanswered: a server that takes a connection and never speaks."""
        self._relay_only = count

    def close(self) -> None:
        """Stop the thread and close every socket (agora's connections see them closed)."""
        self._closed = True
        self._running.set()
        self._wake_w.send(b"x")
        self._thread.join(10)
        for sock in [self._listener, self._wake_r, self._wake_w, *self._pairs, *self.held]:
            sock.close()

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._closed:
                watched = [self._listener, *self._pairs] if self._running.is_set() else []
                for sock in watched:
                    with contextlib.suppress(KeyError):
                        sel.register(sock, selectors.EVENT_READ)
                events = sel.select()
                for sock in watched:
                    with contextlib.suppress(KeyError):
                        sel.unregister(sock)
                for key, _ in events:
                    sock = key.fileobj  # type: ignore[assignment]
                    if sock is self._wake_r:
                        self._wake_r.recv(64)
                    elif not self._running.is_set() or self._closed:
                        continue
                    elif sock is self._listener:
                        self._accept()
                    elif sock in self._pairs:
                        self._pass(sock)  # type: ignore[arg-type]

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        if self._relay_only is not None:
            if self._relay_only <= 0:
                self.held.append(client)
                return
            self._relay_only -= 1
        try:
            server = socket.create_connection(self._target, timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        self._pairs[client], self._pairs[server] = server, client

    def _pass(self, sock: socket.socket) -> None:
        other = self._pairs[sock]
        try:
            data = sock.recv(65536)
            if data:
                other.sendall(data)
                return
        except OSError:
            pass
        for end in (sock, other):
            self._pairs.pop(end, None)
            end.close()


@contextlib.contextmanager
def stalling_relay(upstream: str) -> Iterator[StallingRelay]:
    """A `StallingRelay` to ``upstream`` for the block, closed (and so resumed) at its end."""
    relay = StallingRelay(upstream)
    try:
        yield relay
    finally:
        relay.close()
