"""`InProcessClient`: an MCP client wired straight to a session, no sockets (`Server.client`).

It reads every message through the JSON encoder the transports use, so what it gets is what a
network client would read, never the server's own objects. A request whose waiting is cancelled
(the caller's cancel scope) is cancelled at the server, as an SDK client's
``notifications/cancelled`` cancels it; a reply nobody waits for any more is dropped. It answers
no request of the server's (elicitation, sampling, roots) by itself: those land in
``notifications``, for the host to answer with `InProcessClient.respond`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import trio

from agora.mcp import jsonrpc as rpc

if TYPE_CHECKING:
    from agora.server.connection import Connection

_decode = msgspec.json.Decoder(dict[str, Any]).decode


class InProcessClient:
    """Sends requests to a `Connection` and matches replies; keeps notifications (and the
    server's own requests, which it does not answer)."""

    conn: Connection

    def __init__(self) -> None:
        self._next = 0
        self._waiting: dict[rpc.RequestId, tuple[trio.Event, list[dict[str, Any]]]] = {}
        self.notifications: list[dict[str, Any]] = []

    async def receive(self, message: dict[str, Any], related: rpc.RequestId | None) -> None:
        # What a network client would read: JSON's values (a datetime as its string, NaN as
        # null), and objects of the client's own, never the server's (a handler's state).
        message = _decode(rpc.encode(message))
        rid = message.get("id")
        if "method" not in message and rid is not None:  # a reply
            if rid in self._waiting:
                event, box = self._waiting[rid]
                box.append(message)
                event.set()
            # Else its caller gave up on it (and cancelled it): nobody reads it, and a
            # long-lived client with timeouts must not pile such replies up.
        else:
            self.notifications.append(message)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: rpc.RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request; return the whole response message (``result`` or ``error``).

        ``request_id``: the request's JSON-RPC id, of the caller's choosing (a string such as
        ``"slow-1"`` never meets the client's own ids, 1, 2, 3...), for a
        ``notifications/cancelled`` of the caller's to name (`notify`); by default the next
        of the client's own. Cancelling the wait (a cancel scope of the caller's: a timeout,
        say) cancels the call at the server, as ``notifications/cancelled`` does: its handler
        is cancelled, its in-flight slot freed, and its reply, if one still comes, dropped.

        Raises:
            CallCancelled: this client sent ``notifications/cancelled`` for the request
                (`notify`) before its reply came: the server sends none (MCP).
            ValueError: ``request_id`` is that of a request of this client still waiting.
        """
        if request_id is None:
            self._next += 1
            while self._next in self._waiting:  # a caller's id: never two calls on one id
                self._next += 1
            rid: rpc.RequestId = self._next
        elif isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
            raise TypeError(f"request_id must be a string or an integer, not {request_id!r}")
        elif request_id in self._waiting:
            raise ValueError(f"request_id {request_id!r} is that of a call still waiting")
        else:
            rid = request_id
        event: trio.Event = trio.Event()
        box: list[dict[str, Any]] = []
        self._waiting[rid] = (event, box)
        try:
            await self.conn.feed(rpc.parse(rpc.request(rid, method, params or {})))
            await event.wait()
        finally:
            del self._waiting[rid]
            if not box:  # given up on (cancelled): so is the call, as an SDK client's is
                self.conn.cancel(rid)
        reply: dict[str, Any] = box[0]
        if reply is _CANCELLED:
            raise CallCancelled(rid)
        return reply

    def close(self, reason: str) -> None:
        """Cancel every call in flight and answer each one still waiting with -32603
        ``reason`` (what a network client of a closing server gets)."""
        self.conn.cancel_all()
        for rid, (event, box) in self._waiting.items():
            if not box:
                box.append(rpc.error(rid, rpc.INTERNAL_ERROR, reason))
                event.set()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification. ``notifications/cancelled`` for a request still waiting (its
        ``requestId``: the ``request_id`` given to `request` or `call_tool`) ends that wait at
        once: its `request` (`call_tool`) raises `CallCancelled`."""
        await self.conn.feed(rpc.parse(rpc.notification(method, params or {})))
        if method == "notifications/cancelled" and params:
            waiting = self._waiting.get(params.get("requestId"))  # type: ignore[arg-type]
            if waiting is not None and not waiting[1]:
                waiting[1].append(_CANCELLED)
                waiting[0].set()

    async def respond(self, rid: rpc.RequestId, result: Any) -> None:
        """Answer request ``rid`` of the server's (one in ``notifications``, its ``id``):
        ``result`` is its result (an elicitation's ``{"action": "accept", ...}``, say)."""
        await self.conn.feed(rpc.parse(rpc.result(rid, result)))

    async def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run the handshake; return the initialize result. ``capabilities``: the client's
        (none by default: a tool then finds ``call.client.missing`` every request it would
        send; declare one only if the host answers such requests, `respond`)."""
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "in-process", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        return reply["result"]  # type: ignore[no-any-return]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        request_id: rpc.RequestId | None = None,
    ) -> dict[str, Any]:
        """tools/call; return the result (a dict: ``structuredContent``, ``content``,
        ``isError`` for a refusal), or raise on a JSON-RPC error. ``request_id``: the call's
        id, of the caller's choosing, for a ``notifications/cancelled`` to name (`request`).

        Raises:
            CallError: the server answered with a JSON-RPC error (its code, message and
                data, such as the ``correlation_id`` of an internal error's log line).
            CallCancelled: this client cancelled the call (`notify`
                ``notifications/cancelled``) before it was answered.
        """
        params = {"name": name, "arguments": arguments or {}}
        reply = await self.request("tools/call", params, request_id=request_id)
        if "error" in reply:
            error = reply["error"]
            raise CallError(error["code"], error["message"], error.get("data"))
        return reply["result"]  # type: ignore[no-any-return]


class CallError(RuntimeError):
    """A JSON-RPC error answering an in-process call: ``code``, ``message``, ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        shown = f"{code}: {message}" if data is None else f"{code}: {message} ({data})"
        super().__init__(shown)
        self.code, self.message, self.data = code, message, data


class CallCancelled(CallError):
    """The in-process call was cancelled by this client's ``notifications/cancelled``
    before its reply came: the server sends none (MCP), so the wait ends here. ``code``
    -32800 (request cancelled, as JSON-RPC peers name it); ``data`` the request's id."""

    def __init__(self, rid: rpc.RequestId) -> None:
        super().__init__(rpc.REQUEST_CANCELLED, "cancelled by this client", {"requestId": rid})


#: What a cancelled request's box holds in place of a reply (`InProcessClient.notify`).
_CANCELLED: dict[str, Any] = {}
