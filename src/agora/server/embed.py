"""Running agora: `open_server` for embedding in a Trio program, `serve` for the CLI.

``async with open_server(config) as server:`` binds the listener on ``config.host:config.port``
(port 0 picks a free one) before it opens the store (a port in use leaves the database
untouched), starts the runtime, accepts, and yields a `Server` with ``url``, ``port`` and an
in-process client. Leaving the block shuts down gracefully: stop accepting, refuse new calls,
wake long-polls, give in-flight calls ``grace_seconds`` (within which the connections then
linger ``linger_seconds`` for what follows a reply, see `App.drain`), then cancel and close the
store. A cancelled call still waiting for its write waits at most ``commit_timeout`` more, and
closing the store does not wait for a stuck writer, so leaving takes at most ``grace_seconds +
commit_timeout`` (plus a second or two of close handshakes) whatever the database does.

``agora serve`` also applies the ``switch_interval_ms`` setting (`set_switch_interval`) and
raises its soft open-files limit to the hard one (`agora.server.descriptors`); an embedding
program keeps its interpreter's own and its own limit unless it calls those itself. Either
way the connection cap is ``max_connections`` or what the open-files limit leaves, if less.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from agora.config import SERVABLE, Config, config_problem
from agora.runtime.registry import Runtime
from agora.server.app import App, catalog_entries, load_toolsets
from agora.server.connection import Connection
from agora.server.descriptors import connection_cap
from agora.server.endpoints import served_endpoint
from agora.server.inprocess import InProcessClient as InProcessClient
from agora.store.db import open_store
from agora.toolsets.options import check_toolset_options
from agora.transports.accept import serve_listeners
from agora.transports.front import FrontEnd
from agora.transports.guard import WILDCARDS
from agora.transports.http_session import SHUTDOWN
from agora.transports.streamable import StreamableHTTP

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.identity import Principal
    from agora.mcp.catalog import ToolEntry
    from agora.runtime.clock import Clock
    from agora.toolsets.base import Toolset

log = logging.getLogger(__name__)

#: Seconds shutdown waits for HTTP responses to finish being written once sessions close.
CLOSE_FLUSH_SECONDS = 1.0


@dataclass
class Server:
    """A running agora server."""

    app: App
    runtime: Runtime
    host: str
    port: int
    _nursery: trio.Nursery
    #: The in-process clients open now (`client`), answered at shutdown like HTTP sessions.
    _clients: set[InProcessClient] = field(default_factory=set)

    @property
    def url(self) -> str:
        """Base URL a client on this machine can use, e.g. ``http://127.0.0.1:8765`` (a
        server bound to every interface, 0.0.0.0 or ::, is reached at loopback)."""
        return _url(self.host, self.port)

    @asynccontextmanager
    async def client(
        self, path: str = "/mcp", principal: Principal | None = None
    ) -> AsyncIterator[InProcessClient]:
        """An MCP client wired straight to a session, no sockets (for tests and embedding).

        Its calls run in this block's nursery (one given up on is cancelled there:
        `InProcessClient.request`); the server's shutdown ends them as a network client's:
        ``grace_seconds`` to answer, then cancelled and answered -32603 (shutting down),
        before the database closes.
        """
        endpoint = served_endpoint(self.app, path)  # or a ValueError naming those there are
        raised: BaseException | None = None  # what the caller's block raised, if anything
        try:
            async with trio.open_nursery() as nursery:
                client = InProcessClient()
                client.conn = Connection(
                    self.app,
                    self.app.new_session(endpoint),
                    client.receive,
                    nursery,
                    principal=principal or self.app.anonymous,
                    endpoint=endpoint.params,
                    local_client=True,
                )
                self._clients.add(client)
                try:
                    yield client
                except GeneratorExit:  # pragma: no cover - an abandoned generator
                    raise
                except BaseException as exc:  # raised as itself, not in this nursery's group
                    raised = exc
                finally:
                    self._clients.discard(client)
                    client.conn.cancel_all()
        except BaseExceptionGroup as group:
            # A cancellation of the caller's scope also cancels the calls in flight in this
            # nursery: their Cancelled come out grouped. It reaches the caller as itself.
            rest = group.split(trio.Cancelled)[1]
            if rest is not None:
                raise
            while raised is None or isinstance(raised, BaseExceptionGroup):  # the first leaf
                raised = (raised or group).exceptions[0]
        if raised is not None:
            raise raised

    def close_clients(self, reason: str) -> None:
        """End every in-process client's calls still running (shutdown), answering each
        with JSON-RPC -32603 ``reason``."""
        for client in list(self._clients):
            client.close(reason)


def set_switch_interval(ms: float) -> None:
    """Apply the ``switch_interval_ms`` setting to this interpreter (0: keep its own).

    Raises:
        ValueError: if ``ms`` is negative.
    """
    if ms < 0:
        raise ValueError(f"switch_interval_ms must be 0 or more, not {ms:g}")
    if ms:
        sys.setswitchinterval(ms / 1e3)


@asynccontextmanager
async def open_server(
    config: Config | None = None,
    *,
    clock: Clock | None = None,
    toolsets: list[Toolset] | None = None,
    listen: bool = True,
) -> AsyncIterator[Server]:
    """Run agora inside the caller's Trio program for the duration of the block.

    Args:
        config: Settings (defaults: 127.0.0.1:8765, ./agora.db, every implemented toolset).
        clock: An injected clock (tests use a FakeWall); defaults to the real one.
        toolsets: Prebuilt toolsets instead of those named in ``config``.
        listen: False to skip the TCP listener (in-process clients only).

    Raises:
        ValueError: a setting of ``config`` is out of range or a principal unusable (the
            checks `agora.config.load_config` makes, for a `Config` built in code), a
            toolset is not implemented or is wrong (see `catalog_entries`), the
            toolsets cannot be served together, or one's ``[options.<name>]`` table has a
            key it does not read or a value of the wrong type, or a table names neither a
            served toolset nor a built-in one (`agora.toolsets.options.OptionsError`);
            raised before anything opens.
        CannotListen: the port could not be bound; raised before the database is opened,
            which is then left as it was (neither created, migrated nor locked).
        StoreError: the database could not be opened or migrated.
    """
    config = config or Config()
    problem = config_problem(config)  # a Config built in code never met load_config's checks
    if problem is not None:
        raise ValueError(f"invalid configuration: {problem}")
    sets = (
        toolsets
        if toolsets is not None
        else load_toolsets(config.toolsets, conformance=config.conformance)
    )
    # Before anything opens, a plain ValueError, no group: a misspelt option key, or a table
    # naming no toolset (only here are an embedding program's toolsets known); then the tools.
    check_toolset_options(config.options, sets, SERVABLE)
    entries = catalog_entries(sets, config.options)  # described under the options checked
    raised: BaseException | None = None  # what start-up or the caller's block raised
    stop = trio.Event()
    async with trio.open_nursery() as host:
        # The server runs in a task of its own, shielded once it serves (`_run`): however
        # the block ends, by leaving it, by an exception, or by the host cancelling a scope
        # around it, the server stops the same graceful way, its calls in flight given
        # `grace_seconds`, rather than every connection cut at once by the cancellation.
        try:
            server: Server = await host.start(_run, config, sets, entries, clock, listen, stop)
        except BaseException as exc:  # CannotListen, StoreError, an on_start's: as themselves
            raised = exc
        else:
            try:
                yield server
            except GeneratorExit:  # pragma: no cover - an abandoned generator
                raise
            except BaseException as exc:  # the host's own (a Cancelled too): raised once shut down
                raised = exc
            finally:
                stop.set()
    if raised is not None:
        # Not wrapped in the nursery's group: `except ValueError` around the block works,
        # and a host's Cancelled reaches the host's cancel scope as itself.
        raise raised


async def _run(
    config: Config,
    sets: list[Toolset],
    entries: dict[str, list[ToolEntry]],
    clock: Clock | None,
    listen: bool,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`open_server`'s server: start it, hand `Server` over, serve until ``stop`` is set, then
    shut down gracefully and close the store.

    Starting can be cancelled by the host (a port bound, a database opened and closed again);
    once started, the task is shielded from the host's cancellation, which would otherwise
    cut every connection with nothing answered: only ``stop`` (or a crash inside the
    server) ends it, and the shutdown is bounded (``grace_seconds`` + ``commit_timeout``).
    """
    stopping: float | None = None  # when shutdown began (trio.current_time), for its last line
    failed: Exception | None = None  # what a toolset's on_start raised
    migrations = [m for t in sets for m in t.migrations]
    with trio.CancelScope() as lifetime:
        async with (
            # The port before the database: a port in use fails at once (a plain
            # CannotListen, no group), leaving the database as it was, neither created,
            # migrated nor locked.
            _listening(config.host, config.port, listen) as listeners,
            open_store(
                config.db,
                migrations,
                synchronous=config.synchronous,
                group_commit=config.group_commit,
                trace=config.trace_commits,
                commit_timeout=config.commit_timeout,
                shared=config.shared,
                writer_process=config.writer_process,
            ) as store,
            trio.open_nursery() as outer,
        ):
            async with trio.open_nursery() as actors:
                runtime = Runtime(
                    store,
                    actors,
                    clock=clock,
                    options=config.options,
                    idle_seconds=config.actor_idle_seconds,
                )
                app = App(config, runtime, sets, entries)
                async with trio.open_nursery() as work:
                    mcp = StreamableHTTP(app, work)
                    # Past what the open-files limit leaves, accept would fail: clients would
                    # wait unanswered instead of getting the 503 (said at start when lowered).
                    cap = connection_cap(config.max_connections) if listeners else None
                    front = FrontEnd(app, mcp, cap)
                    port = listeners[0].socket.getsockname()[1] if listeners else config.port
                    # Without a listener this process serves no page: no URL to hand out.
                    runtime.public_url = (
                        (config.public_url or _url(config.host, port)) if listen else ""
                    )
                    server = Server(app, runtime, config.host, port, outer)
                    accept = trio.CancelScope()
                    if listeners:
                        work.start_soon(_accept, listeners, front, accept, work)
                    work.start_soon(mcp.sweep)
                    failed = await _start_toolsets(sets, runtime)
                    if failed is None:
                        app.start_background(work)
                        lifetime.shield = True
                        task_status.started(server)
                        try:
                            await stop.wait()
                        finally:
                            with trio.CancelScope(shield=True):
                                stopping = trio.current_time()
                                accept.cancel()
                                await app.drain(config.grace_seconds, front.wait_closed)
                                await app.settle_commits()
                                mcp.close_all()
                                server.close_clients(SHUTDOWN)
                                with trio.move_on_after(CLOSE_FLUSH_SECONDS):
                                    await front.wait_quiet()  # close_all's errors written
                    app.watch_overdue(outer)
                    work.cancel_scope.cancel()
                actors.cancel_scope.cancel()
            outer.cancel_scope.cancel()
    if failed is not None:  # raised now that the store is closed, and not in a group
        raise failed
    if stopping is not None:  # the store is closed too: the server has stopped
        log.info("stopped; shutdown took %.2f s", trio.current_time() - stopping)


async def _start_toolsets(sets: list[Toolset], runtime: Runtime) -> Exception | None:
    """Run each toolset's ``on_start``; the first one's exception, if one raised (the rest
    are not run), noted with the toolset's name."""
    for t in sets:
        if t.on_start is None:
            continue
        try:
            await t.on_start(runtime)
        except Exception as exc:
            exc.add_note(f"raised by the on_start of toolset {t.name!r}: agora did not start")
            return exc
    return None


class CannotListen(OSError):
    """The listener could not open on the configured host and port; ``strerror`` says where,
    why, and what to change."""


#: What the operator can do about each reason a listener cannot open.
_LISTEN_HINTS = {
    errno.EADDRINUSE: "another process has that port: stop it, or choose another port (--port N,"
    " port = N in agora.toml, Config(port=N) in a program; 0 picks a free one)",
    errno.EACCES: "ports below 1024 need privileges: choose a port of 1024 or above",
    errno.EADDRNOTAVAIL: "no interface of this machine has that address: check the host",
}


@asynccontextmanager
async def _listening(
    host: str, port: int, listen: bool
) -> AsyncIterator[list[trio.SocketListener]]:
    """The listeners on ``host:port`` (none without ``listen``), closed on the way out (if
    serving them has not closed them already).

    Raises:
        CannotListen: the port could not be bound.
    """
    listeners = await _listen(host, port) if listen else []
    try:
        yield listeners
    finally:
        for listener in listeners:
            listener.socket.close()


async def _listen(host: str, port: int) -> list[trio.SocketListener]:
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if isinstance(exc, socket.gaierror):
            hint = "the host name does not resolve: check --host"
        else:
            hint = _LISTEN_HINTS.get(exc.errno or 0, "")
        why = f"{exc.strerror} ({hint})" if hint else str(exc.strerror)
        raise CannotListen(exc.errno, f"cannot listen on {where}: {why}") from exc


async def _accept(
    listeners: list[trio.SocketListener],
    front: FrontEnd,
    scope: trio.CancelScope,
    connections: trio.Nursery,
) -> None:
    # Connections live in `connections`, not under `scope`: cancelling `scope` stops
    # accepting while the calls already in flight get their grace period.
    async def handler(stream: trio.SocketStream) -> None:
        # The supervisor's top level: a bug in one connection must not end the server.
        try:
            await front.handle(stream)
        except Exception:
            log.exception("connection handler failed")

    with scope:  # agora's accept loop: trio's logged a traceback 10 times a second at EMFILE
        await serve_listeners(handler, listeners, handler_nursery=connections)


def _url(host: str, port: int) -> str:
    # 0.0.0.0 is no address to connect to, and the Host/Origin check accepts loopback names
    # only (unless allowed_hosts says more): the wildcard's URL is loopback's.
    if host in WILDCARDS:
        host = "::1" if ":" in host else "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def serve(
    config: Config,
    *,
    toolsets: list[Toolset] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled (``await nursery.start(serve, config)`` gives the `Server`); the
    cancellation then shuts the server down gracefully, as leaving `open_server`'s block does
    (calls in flight get ``grace_seconds``). ``toolsets``: as `open_server`'s."""
    async with open_server(config, toolsets=toolsets) as server:
        task_status.started(server)
        await trio.sleep_forever()
