"""The application: enabled toolsets, one catalog per endpoint, identity, web routes.

`App` is transport-free: transports ask it which catalog serves a path, who a bearer token
belongs to, and which route answers a plain HTTP request. It also counts calls in flight so
shutdown can wait for them, and says when shutdown began (`App.draining`) so that connections
refuse new calls.
"""

from __future__ import annotations

import importlib
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import trio

from agora import __version__
from agora.config import KNOWN_TOOLSETS
from agora.logsafe import loggable
from agora.mcp.catalog import Catalog
from agora.mcp.session import Session
from agora.runtime.background import readable, supervise
from agora.server.entries import catalog_entries, refuse_shadowed_tools, tool_entries, tool_names
from agora.store.episode import counted
from agora.toolsets.base import IGNORED_QUERY

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from agora.config import Config
    from agora.identity import Principal
    from agora.mcp.actions import Invoke
    from agora.mcp.catalog import ToolEntry
    from agora.runtime.registry import Runtime
    from agora.server.connection import Connection
    from agora.toolsets.base import Toolset
    from agora.web.http import Route

__all__ = [
    "IMPLEMENTED",
    "SERVER_INFO",
    "App",
    "Endpoint",
    "catalog_entries",
    "load_toolsets",
    "refuse_shadowed_tools",
    "tool_entries",
    "tool_names",
]

log = logging.getLogger(__name__)

SERVER_INFO = {"name": "agora", "title": "agora", "version": __version__}
#: At shutdown (`App.settle_commits`): how often the writes waiting for their commit are
#: counted, how far past `commit_timeout` they may still be failed by the store's watchdog
#: (it looks every quarter of it), and how long a call whose commit came has to answer.
COMMIT_POLL = 0.01
DEADLINE_SLACK = 1.3
ANSWER_SETTLE = 0.2
#: How long after their cancellation calls still running are said to hold up shutdown.
OVERDUE_SECONDS = 5.0
#: The most calls a shutdown's WARNING names one by one (the rest are counted).
NAMED_AT_MOST = 20

#: Toolsets implemented in this build, in listing order: the one list `agora.config` checks
#: ``toolsets`` against (a toolset added to the tree goes there, nowhere else).
IMPLEMENTED = KNOWN_TOOLSETS


def load_toolsets(names: Sequence[str], *, conformance: bool = False) -> list[Toolset]:
    """Import and build the named toolsets (all implemented ones when ``names`` is empty).

    Raises:
        ValueError: if a named toolset is not implemented in this build.
    """
    wanted = list(names) or list(IMPLEMENTED)
    if conformance and "conformance" not in wanted:
        wanted.append("conformance")
    out = []
    for name in wanted:
        if name not in (*IMPLEMENTED, "conformance"):
            raise ValueError(
                f"toolset {name!r} is not implemented in this build (a toolset of your own is"
                " passed built, not named: open_server(config, toolsets=[...]))"
            )
        module = importlib.import_module(f"agora.toolsets.{name}")
        out.append(module.toolset())
    return out


@dataclass
class Endpoint:
    """A resolved ``/mcp...`` path: its catalog and path parameters."""

    catalog: Catalog
    params: dict[str, str]


class App:
    """Everything a transport needs to serve a request (``entries``: each toolset's catalog
    entries, checked and built by `catalog_entries` before anything opened)."""

    def __init__(
        self,
        config: Config,
        runtime: Runtime,
        toolsets: Sequence[Toolset],
        entries: Mapping[str, list[ToolEntry]],
    ) -> None:
        self.config = config
        self.runtime = runtime
        self.toolsets = {t.name: t for t in toolsets}
        #: Every tokenless request shares one principal (built once, off the request path).
        self.anonymous = config.anonymous()
        self._in_flight = 0
        #: The calls in flight that `running` names, by connection and request id.
        self._running: dict[tuple[Connection | None, Any], Invoke] = {}
        #: Shutdown began (`drain`): a new call is refused with JSON-RPC error -32011.
        self.draining = False
        #: The grace's scope while `drain` waits; `end_grace` was called (a second SIGINT).
        self._grace: trio.CancelScope | None = None
        self._grace_ended = False
        #: Connections with listen streams open (``subscriptions/listen``): `drain` ends them.
        self.listening: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._idle = trio.Event()
        self._idle.set()
        self.routes: list[Route] = [r for t in toolsets for r in t.routes]
        per: dict[str, Catalog] = {}
        everything: list[ToolEntry] = []
        resources: list[Any] = []
        prompts: list[Any] = []
        completion = None
        for t in toolsets:
            everything.extend(entries[t.name])
            resources.extend(t.resources)
            prompts.extend(t.prompts)
            completion = completion or t.completion
            per[t.name] = Catalog(
                tools=entries[t.name],
                resources=t.resources,
                prompts=t.prompts,
                completion=t.completion,
                page_size=config.page_size,
                instructions=t.instructions,
                elsewhere={
                    tool.name: other.name
                    for other in toolsets
                    if other is not t
                    for tool in entries[other.name]
                    if tool.alias_of is None
                },
            )
        self._per_toolset = per
        told = [f"{t.name}: {t.instructions}" for t in toolsets if t.instructions]
        self._all = Catalog(
            tools=everything,
            resources=resources,
            prompts=prompts,
            completion=completion,
            page_size=config.page_size,
            instructions="\n\n".join(told) or None,
        )

    @property
    def in_flight(self) -> int:
        """Calls running now, over every connection."""
        return self._in_flight

    def call_started(self, conn: Connection | None = None, inv: Invoke | None = None) -> None:
        """Count one more call in flight: ``inv`` of ``conn``, which a shutdown that cancels
        it names (`running`), or one it counts only (a page request)."""
        if self._in_flight == 0:
            self._idle = trio.Event()
        self._in_flight += 1
        if inv is not None:
            self._running[conn, inv.id] = inv

    def call_finished(self, conn: Connection | None = None, inv: Invoke | None = None) -> None:
        """Count one call less (as `call_started` counted it); wake `wait_idle` at zero."""
        self._in_flight -= 1
        if inv is not None:
            self._running.pop((conn, inv.id), None)
        if self._in_flight == 0:
            self._idle.set()

    def running(self) -> list[str]:
        """The calls in flight now, each as the log names it: what it runs, its principal,
        its correlation id when its arguments carry one (the router's), and its request id
        (JSON-RPC's); then the requests counted only (``2 page requests``)."""
        named = [_named(conn, inv) for (conn, _), inv in list(self._running.items())]
        if (others := self._in_flight - len(named)) > 0:
            named.append(counted(others, "page request"))
        return named

    async def wait_idle(self) -> None:
        """Until no call is in flight."""
        await self._idle.wait()

    async def drain(
        self, grace: float, until_closed: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """The graceful end of serving, within ``grace`` seconds.

        From now on a new call is refused (`draining`), every long-poll answers
        (`Runtime.begin_shutdown`) and every listen stream ends with its result; the calls in
        flight get to answer. Then, if any was in
        flight, the connections stay open ``linger_seconds`` more, or until ``until_closed``
        returns (every client has closed): a client that has just been answered may still
        send the requests that change nothing and need no actor (the official SDK's client
        lists the tools after a result, to check it against its outputSchema), which the
        sessions answer as usual. Without ``until_closed`` (no listener) there is no linger.

        Logs (INFO) what there was to drain, and the calls the grace did not see answered
        (the caller cancels them next): an operator reading a slow or lossy shutdown. A call
        waiting for its commit outlives the cancellation, up to ``commit_timeout`` more: the
        line counts those writes apart, so it does not say "cancelled" of calls that answer
        later.
        """
        deadline = trio.current_time() + grace
        log.info(
            "shutting down: %d calls in flight (%d long-polls parked, %d listen streams);"
            " up to %g s (grace_seconds) for them to answer",
            self._in_flight,
            self.runtime.registry.parked(),
            len(self.listening),
            grace,
        )
        self.draining = True
        answering = self._in_flight > 0
        self.runtime.begin_shutdown()
        for conn in list(self.listening):  # each stream gets its result and ends
            conn.end_listens()
        with trio.move_on_at(deadline) as self._grace:
            if self._grace_ended:
                self._grace.cancel()
            await self.wait_idle()
            if answering and until_closed is not None:
                with trio.move_on_after(self.config.linger_seconds):
                    await until_closed()
        if self._in_flight:
            committing = self.committing()
            running = self.running()
            shown = "; ".join(running[:NAMED_AT_MOST])
            if len(running) > NAMED_AT_MOST:
                shown += f"; and {len(running) - NAMED_AT_MOST} more"
            # WARNING: each may or may not have made its change, and its client was told so.
            log.warning(
                "%s still running %s, cancelled: %s. A change each made may or may not have"
                " been saved: check before repeating it%s",
                counted(self._in_flight, "call"),
                "when the grace was ended early (end_grace: agora serve's SIGINT)"
                if self._grace_ended
                else f"after {grace:g} s (grace_seconds)",
                shown,
                f"; {committing} writes still wait for their commit, and the calls that"
                f" made them answer once it comes or within {self.config.commit_timeout:g} s"
                " more (commit_timeout)"
                if committing
                else "",
            )

    def end_grace(self) -> None:
        """End the shutdown's grace now, or make it none if `drain` has not begun: the calls
        still running are cancelled as when it runs out (``agora serve``: a SIGINT during the
        shutdown)."""
        self._grace_ended = True
        if self._grace is not None:
            self._grace.cancel()

    def committing(self) -> int:
        """Writes waiting for their commit now (0 for a store that does not count them)."""
        return int(getattr(self.runtime.store, "committing", 0))

    async def settle_commits(self) -> None:
        """After the grace: wait for the writes still waiting for their commit (up to the
        commit's own deadline, `commit_timeout`), then give their calls `ANSWER_SETTLE` to
        answer, before the transports close on the calls still running. A call whose write
        was saved gets its result, not an error that asks for the write again."""
        if not self.committing():
            return
        with trio.move_on_after(self.config.commit_timeout * DEADLINE_SLACK):
            while self.committing():  # noqa: ASYNC110 - at shutdown only, and bounded
                await trio.sleep(COMMIT_POLL)
            with trio.move_on_after(ANSWER_SETTLE):
                await self.wait_idle()

    def watch_overdue(self, nursery: trio.Nursery) -> None:
        """As the calls still running are cancelled (the last step before the store closes):
        in `OVERDUE_SECONDS`, say (WARNING) if some have not ended, so that a shutdown held
        by a handler that ignores its cancellation (blocking in a thread) does not look like
        a hang. ``nursery`` must be cancelled once the store is closed."""
        nursery.start_soon(self._overdue)

    async def _overdue(self) -> None:
        await trio.sleep(OVERDUE_SECONDS)
        if self._in_flight:
            log.warning(
                "shutdown waits for %s that did not end %g s after it was cancelled: a"
                " handler blocking in a thread (trio.to_thread.run_sync without"
                " abandon_on_cancel) or another wait that ignores its cancellation; the server"
                " stops when it ends",
                counted(self._in_flight, "call"),
                OVERDUE_SECONDS,
            )

    def start_background(self, nursery: trio.Nursery) -> None:
        """Start every toolset's background tasks in ``nursery`` (cancelled at shutdown)."""
        for toolset in self.toolsets.values():
            for task in toolset.background:
                label = f"{toolset.name}: {readable(task)}"
                nursery.start_soon(supervise, task, self.runtime, label, name=label)

    def endpoint(self, path: str, query: Mapping[str, str] | None = None) -> Endpoint | None:
        """The catalog for ``/mcp``, ``/mcp/<toolset>`` or ``/mcp/<toolset>/<param>``.

        Args:
            path: The request path; a ``?query`` on it is read when ``query`` is None.
            query: The URL's query parameters; those the toolset names in its
                ``endpoint_query`` join the endpoint's parameters.
        """
        if query is None and "?" in path:
            path, _, raw = path.partition("?")
            query = dict(parse_qsl(raw))
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] != "mcp" or len(parts) > 3:
            return None
        if len(parts) == 1:
            return Endpoint(self._all, self._ignored({}, query, ()))
        toolset = self.toolsets.get(parts[1])
        if toolset is None:
            return None
        params: dict[str, str] = {}
        if toolset.endpoint_param:
            params[toolset.endpoint_param] = parts[2] if len(parts) == 3 else "default"
        elif len(parts) == 3:
            return None
        for name in toolset.endpoint_query:
            if query and name in query:
                params[name] = query[name]
        return Endpoint(
            self._per_toolset[toolset.name], self._ignored(params, query, toolset.endpoint_query)
        )

    def _ignored(
        self, params: dict[str, str], query: Mapping[str, str] | None, read: Sequence[str]
    ) -> dict[str, str]:
        """``params``, with `IGNORED_QUERY` naming the query parameters that some toolset's
        endpoint reads but this one does not (``read``): ``/mcp?token=...`` keeps no token,
        and the chess tools say so rather than seat nobody in silence."""
        if not query:
            return params
        ignored = sorted(
            {
                name
                for toolset in self.toolsets.values()
                for name in toolset.endpoint_query
                if name in query and name not in read
            }
        )
        if ignored:
            params[IGNORED_QUERY] = ",".join(ignored)
        return params

    def new_session(self, endpoint: Endpoint) -> Session:
        """A fresh protocol session on ``endpoint``."""
        return Session(endpoint.catalog, SERVER_INFO)

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The principal of an ``Authorization`` header; None means: answer 401."""
        if not authorization:
            return self.anonymous
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.config.principal_for(token.strip())


def _named(conn: Connection | None, inv: Invoke) -> str:
    """Call ``inv`` as `App.running` names it: ``tool run_model_evaluation (principal ops,
    correlation id c1, request id 3)``; caller-chosen values escaped (`loggable`)."""
    what = f"{'tool' if inv.kind == 'tool' else inv.kind} {loggable(inv.name, 80)}"
    ids = [] if conn is None else [f"principal {conn.principal.name}"]
    correlation = inv.args.get("correlation_id") if isinstance(inv.args, dict) else None
    if isinstance(correlation, str) and correlation:
        ids.append(f"correlation id {loggable(correlation, 80)}")
    ids.append(f"request id {loggable(repr(inv.id), 80)}")
    return f"{what} ({', '.join(ids)})"
