"""The async driver of one MCP session: runs tool calls as tasks and routes what they emit.

A transport decodes a message and calls `Connection.feed`; replies, progress, log messages
and server-to-client requests go out through the transport's ``emit(message, related_id)``.
Each call runs in its own cancel scope so ``notifications/cancelled`` really stops it; the
number of calls in flight per connection is capped, and once shutdown began (`App.draining`)
a new call or session (``initialize``) is refused while what the session answers itself
(tools/list, ping, ...) is still answered. This is the only place that turns handler outcomes
into JSON-RPC replies.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from agora.errors import ProtocolError
from agora.mcp import batch, listen
from agora.mcp import jsonrpc as rpc
from agora.mcp.session import Answer, Cancel, Invoke, Send, Session
from agora.server.asking import Asking
from agora.server.batches import feed_batch
from agora.server.channel import ChannelCall
from agora.server.failed import reply_failed
from agora.server.outcome import outcome

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.app import App
    from agora.server.workers import Workers
    from agora.toolsets.base import ToolCall

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any], rpc.RequestId | None], Awaitable[None]]
#: Ends the transport stream of a request's messages so the client can resume it later.
Hangup = Callable[[rpc.RequestId], None]
#: Told of a request that ended without an answer (its call or listen stream was cancelled,
#: and a cancelled request gets none): the transport ends what waited for the answer.
Unanswered = Callable[[rpc.RequestId], None]

#: Requests after which the runtime's resource hub learns the session's subscriptions.
SUBSCRIPTION_METHODS = frozenset({"resources/subscribe", "resources/unsubscribe"})
#: What a session's listen streams are told when the server ends them (`end_listens`).
_ENDING = "listen streams ending"

#: What a call sent once shutdown began is told (JSON-RPC error -32011): it never ran.
SHUTTING_DOWN_MESSAGE = (
    "the server is shutting down: this call was not run; wait a few seconds and call again"
    " (your client or relay reconnects by itself if the server comes back)"
)
#: What an ``initialize`` sent once shutdown began is told (-32011): no session was opened.
SHUTTING_DOWN_INITIALIZE = (
    "the server is shutting down: no new session is opened now; connect again once it is back"
)
#: Stand in the table for a worker's call (never entered, so cancelling one changes nothing):
#: handed to a worker but cancelled before it began, and having its reply sent. A call
#: handed to a worker and not yet begun is None there, not a scope of its own made per call
#: only to be replaced by the worker's.
_CANCELLED = trio.CancelScope()
_REPLYING = trio.CancelScope()


class Connection:
    """One session's calls in flight, on one nursery.

    The nursery may outlive the connection (a WebSocket's calls run in the server's, so a
    parked one costs no nursery of its own): the transport then calls `cancel_all` and
    `wait_finished` before it lets go of its stream, and a reply that cannot be sent is
    answered with -32603 rather than raised into that nursery. With ``workers`` (a pool on
    that nursery, `agora.server.workers`), a call starts in an idle worker rather than a
    task of its own.
    """

    #: See `Unanswered`: the transport's, or that of the `BatchReplies` of `feed_batch`.
    _unanswered: Unanswered | None = None

    def __init__(
        self,
        app: App,
        session: Session,
        emit: Emit,
        nursery: trio.Nursery,
        *,
        principal: Principal,
        endpoint: Mapping[str, str],
        hangup: Hangup | None = None,
        unanswered: Unanswered | None = None,
        workers: Workers | None = None,
        local_client: bool = False,
    ) -> None:
        self.app = app
        #: `agora.toolsets.base.ToolCall.local_client` of every call of this session.
        self.local_client = local_client
        self.session = session
        self.principal = principal
        self.endpoint = endpoint
        self._emit = emit
        self._hangup = hangup
        if unanswered is not None:  # (else the class's None: no entry per connection)
            self._unanswered = unanswered
        self._nursery = nursery
        # Calls start in an idle worker of the nursery when the transport has a pool.
        self._workers = workers
        # A call's cancel scope; None while it waits for its worker to begin it.
        self._calls: dict[rpc.RequestId, trio.CancelScope | None] = {}
        # Made when first needed: most sessions never ask the client anything and subscribe
        # to nothing, and a parked agent's session should cost no empty containers.
        self._asking: Asking | None = None
        self._updates: dict[str, None] | None = None  # changed URIs not yet notified, in order
        self._notifying = False
        self._finished: trio.Event | None = None  # see `wait_finished`

    @property
    def in_flight(self) -> int:
        """Calls running now."""
        return len(self._calls)

    async def feed(self, msg: rpc.Message, *, inline: bool = False) -> None:
        """Handle one decoded message from the client.

        With ``inline``, a call the message starts runs in the caller's task, and this
        returns once it is answered: a transport that only waits for the answer saves a task
        and a wake-up. The call stays cancellable (``notifications/cancelled``, `cancel_all`)
        and counted in flight; what it emits still goes through ``emit``, so the transport
        must serve those messages from another task if it needs to send them meanwhile.
        """
        if self.app.draining and isinstance(msg, rpc.Request) and msg.method == "initialize":
            # A session opened now would be closed within the linger: refused, retryable.
            data = {"retryable": True}
            error = rpc.error(msg.id, rpc.SHUTTING_DOWN, SHUTTING_DOWN_INITIALIZE, data)
            await self._emit(error, msg.id)
            return
        actions = self.session.handle(msg)
        if isinstance(msg, rpc.Request) and msg.method in SUBSCRIPTION_METHODS:
            self.app.runtime.resources.watch(self, self.session.watched())
        for action in actions:
            match action:
                case Send(message, related):
                    await self._emit(message, related)
                case Invoke():
                    await self._start(action, inline)
                case Cancel(rid):
                    self._cancel(rid)
                case Answer(response):
                    if self._asking is not None:
                        self._asking.answer(response)

    async def feed_bytes(self, data: bytes | str) -> None:
        """Decode and handle one message (or a batch, in a 2025-03-26 session); answer a
        malformed one with a JSON-RPC error."""
        if self.session.protocol_version == batch.VERSION and batch.is_batch(data):
            await feed_batch(self, data)
            return
        try:
            msg = rpc.decode(data)
        except ProtocolError as exc:
            await self._emit(rpc.error(rpc.error_id(exc), exc.code, exc.message), None)
            return
        await self.feed(msg)

    async def resource_updated(self, uri: str, related: rpc.RequestId | None = None) -> None:
        """Send notifications/resources/updated for ``uri`` if this session subscribed to it.

        Args:
            uri: The resource that changed.
            related: The request whose stream should carry the notification, if any; the
                transport falls back to its session-wide stream.
        """
        message = self.session.resource_updated(uri)
        if message is not None:
            await self._emit(message, related)
        if self.session.listens:  # (a copy: a stream may end while one is sent)
            for rid, uris in list(self.session.listens.items()):
                if uri in uris:
                    await self._emit(listen.updated(rid, uri), rid)

    def resource_changed(self, uri: str) -> None:
        """Queue notifications/resources/updated for ``uri`` (called by the runtime's
        `ResourceHub` after a commit); one task per connection sends the queue in order."""
        if self._updates is None:
            self._updates = {}
        self._updates[uri] = None
        if not self._notifying:
            try:
                self._nursery.start_soon(self._send_updates)
            except RuntimeError:  # the connection's nursery closed: it is gone
                self.app.runtime.resources.forget(self)
                return
            self._notifying = True

    async def _send_updates(self) -> None:
        try:
            while updates := self._updates:
                uri = next(iter(updates))
                del updates[uri]
                await self.resource_updated(uri)
        except Exception:  # the transport broke under us: this session hears no more
            log.debug("resource notification failed; dropping the subscriptions", exc_info=True)
            self.app.runtime.resources.forget(self)
        finally:
            self._notifying = False

    async def _start(self, inv: Invoke, inline: bool = False) -> None:
        # The session refuses a request whose id is running, so ``inv.id`` is new here.
        if len(self._calls) >= self.app.config.max_in_flight or self.app.draining:
            self.session.ended(inv.id)
            await self._emit(self._refusal(inv), inv.id)
            return
        if self._workers is not None and not inline:
            self._calls[inv.id] = None  # the worker's own scope replaces it
            self._workers.start_soon((self, inv))
            return
        scope = self._calls[inv.id] = trio.CancelScope()
        if inline:
            await self._run(inv, scope)
        else:
            self._nursery.start_soon(self._run, inv, scope)

    def _refusal(self, inv: Invoke) -> dict[str, Any]:
        """The JSON-RPC error of a call that will not run: the server is shutting down
        (-32011), or the connection has ``max_in_flight`` calls running (-32010)."""
        if self.app.draining:
            data: dict[str, Any] = {"retryable": True}
            return rpc.error(inv.id, rpc.SHUTTING_DOWN, SHUTTING_DOWN_MESSAGE, data)
        limit = self.app.config.max_in_flight
        message = f"too many requests in flight (at most {limit}); retry when one finishes"
        data = {"max_in_flight": limit, "retryable": True}
        return rpc.error(inv.id, rpc.TOO_MANY_IN_FLIGHT, message, data)

    def cancel(self, rid: rpc.RequestId) -> None:
        """Cancel call ``rid`` as ``notifications/cancelled`` would: the transport saw its
        client give up on it (a 2026-07-28 client closing its HTTP connection)."""
        self._cancel(rid)

    def _cancel(self, rid: rpc.RequestId) -> None:
        """Cancel call ``rid`` if it is in flight (before its worker began it: it never does),
        or end listen stream ``rid`` (no result follows: the client ended it)."""
        listens = self.session.listens
        if listens and listens.pop(rid, None) is not None:
            self.app.runtime.resources.watch(self, self.session.watched())
            if self._unanswered is not None:
                self._unanswered(rid)
        elif rid in self._calls:
            scope = self._calls[rid]
            if scope is None:
                self._calls[rid] = _CANCELLED
            elif scope is not _CANCELLED and scope is not _REPLYING:
                scope.cancel()  # (a stand-in would keep the first canceller's task)

    async def _run(self, inv: Invoke, scope: trio.CancelScope) -> None:
        self.app.call_started(self, inv)
        try:
            reply: dict[str, Any] | None = None
            with scope:
                # The call awaits here, however long it is parked: `_outcome` is sync so
                # that a parked call keeps one coroutine frame fewer.
                try:
                    value = await inv.target(self._tool_call(inv))
                except Exception as exc:
                    reply = self._outcome(inv, None, exc)
                else:
                    reply = self._outcome(inv, value, None)
            # Not even a reply a handler returned after its cancellation was asked for: it
            # may have been past its last checkpoint (a shielded step, a wait cut short).
            if reply is not None and not scope.cancel_called:
                try:
                    await self._emit(reply, inv.id)
                except Exception as exc:  # (not raised into a nursery many connections share)
                    await self._unsent(inv, exc)
        finally:
            self._ended(inv)

    @staticmethod
    async def worker(workers: Workers, job: tuple[Connection, Invoke] | None) -> None:
        """A call worker's life (the ``body`` of `call_workers`): `_run`, call after call.

        Each call runs in this frame (a parked call keeps no frame more than in a task of its
        own) under the worker's cancel scope, which stands in the connection's table for the
        call from its start (a cancel that came before is marked there: the call then never
        begins) until its reply is being sent. A cancelled call uses the scope up: a fresh
        one follows.
        """
        prepared = job is None
        waiter = workers.waiter()
        while True:
            with trio.CancelScope() as scope:
                while True:
                    if job is not None:
                        conn, inv = job
                        job = value = reply = None
                        conn.app.call_started(conn, inv)
                        try:
                            if conn._calls[inv.id] is None:  # not cancelled before it began
                                conn._calls[inv.id] = scope
                                try:
                                    value = await inv.target(conn._tool_call(inv))
                                except Exception as exc:
                                    reply = conn._outcome(inv, None, exc)
                                else:
                                    reply = conn._outcome(inv, value, None)
                                conn._calls[inv.id] = _REPLYING  # as in `_run`: not cancelled
                                if not scope.cancel_called:  # else asked to be cancelled
                                    try:
                                        await conn._emit(reply, inv.id)
                                    except Exception as exc:
                                        await conn._unsent(inv, exc)
                        except Exception:  # not its cancellation: that ends in the scope
                            log.exception("%s %s failed after its outcome", inv.kind, inv.name)
                        finally:
                            conn._ended(inv)
                        # An idle worker keeps nothing of its last call.
                        del conn, inv, value, reply
                    job = await workers.next(prepared=prepared, waiter=waiter)
                    prepared = False
                    if job is None:
                        return

    def _ended(self, inv: Invoke) -> None:
        self.app.call_finished(self, inv)
        del self._calls[inv.id]
        # (A no-op after its answer; a listen stream it opened is answered when it ends.)
        listens = self.session.listens
        if self._unanswered is not None and not (listens and inv.id in listens):
            self._unanswered(inv.id)
        self.session.ended(inv.id)
        if not self._calls and self._finished is not None:
            self._finished.set()

    #: The reply to a call that returned a value or raised; never raises (`outcome`).
    _outcome = outcome

    async def _unsent(self, inv: Invoke, exc: Exception) -> None:
        """Sending the reply to ``inv`` raised ``exc`` (it holds a value no JSON can hold:
        the transport encodes as it sends): send -32603 instead (`reply_failed`)."""
        try:
            await self._emit(reply_failed(inv, exc), inv.id)
        except Exception:  # the transport itself broke: there is nobody left to answer
            log.warning("%s %s could not be answered", inv.kind, inv.name, exc_info=True)

    def _tool_call(self, inv: Invoke) -> ToolCall:
        return ChannelCall(
            inv.name, inv.args, self.principal, self.app.runtime, self.endpoint, inv.meta, self, inv
        )  # fmt: skip

    async def request_client(
        self, method: str, params: dict[str, Any], related: rpc.RequestId | None
    ) -> Any:
        """Send a request to the client; wait for its response (see `ClientChannel`)."""
        if self._asking is None:
            self._asking = Asking()
        return await self._asking.ask(self._emit, method, params, related)

    def cancel_all(self) -> None:
        """Cancel every call in flight and end every listen stream (the peer went away)."""
        self.app.runtime.resources.forget(self)
        self.session.listens = None
        self.app.listening.discard(self)
        for rid in list(self._calls):
            self._cancel(rid)

    def detach(self) -> None:
        """Forget the transport's callbacks (no call is in flight): a session that holds this
        connection and gave its own methods as them is a cycle, which `agora.server.heap`
        would leave frozen until its thaw; cut, both die by reference counting at once."""
        self._emit = _dropped
        self._hangup = None
        self._unanswered = None

    def end_listens(self) -> None:
        """End every listen stream gracefully (shutdown): each gets its result, from a task
        of the connection's nursery (a slow peer must not hold up the caller)."""
        listens, self.session.listens = self.session.listens, None
        self.app.listening.discard(self)
        if listens:
            self.app.runtime.resources.watch(self, self.session.watched())
            ended = [
                rpc.result(rid, self.session.finish(listen.ended(rid), True)) for rid in listens
            ]
            with contextlib.suppress(RuntimeError):  # the nursery closed: nobody to tell
                self._nursery.start_soon(self._send_all, ended, name=_ENDING)

    async def _send_all(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            await self._emit(message, message["id"])

    async def wait_finished(self) -> None:
        """Until no call of this connection runs (after `cancel_all`, promptly)."""
        while self._calls:
            self._finished = trio.Event()
            await self._finished.wait()


async def _dropped(message: dict[str, Any], related: rpc.RequestId | None) -> None:
    """The ``emit`` of a detached connection: nothing is listening."""
