"""What a tool call uses to reach its client: `ClientChannel`, one per call.

Server-to-client requests (sampling, elicitation), progress, log messages, resource updates
and the end of the call's transport stream, all on the stream of the call they serve, through
the `agora.server.connection.Connection` the call arrived on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from agora.errors import InputRequired, RequestRefused
from agora.mcp import asks
from agora.mcp import jsonrpc as rpc
from agora.mcp.session import META_CAPABILITIES
from agora.toolsets.base import ToolCall

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.identity import Principal
    from agora.mcp.session import Invoke
    from agora.runtime.registry import Runtime
    from agora.server.connection import Connection


class ClientChannel:
    """One call's way back to its client, on the stream of the call it serves: server-to-client
    requests (sampling, elicitation), progress, log messages, resource updates.

    One object per call whose bound methods fill the call's `ToolCall` (closures would cost
    a parked call a function and cells each).
    """

    __slots__ = ("_conn", "_inv")

    def __init__(self, conn: Connection, inv: Invoke) -> None:
        self._conn = conn
        self._inv = inv

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the client declared: at initialize, or (2026-07-28) in this request's
        ``_meta`` (``io.modelcontextprotocol/clientCapabilities``)."""
        inv = self._inv
        if inv.modern:
            declared = inv.meta.get(META_CAPABILITIES)
            return declared if isinstance(declared, dict) else {}
        return self._conn.session.client_capabilities

    @property
    def modern(self) -> bool:
        """Whether the call came at 2026-07-28 (no handshake): `request` then answers from
        the call's ``inputResponses``, and refuses what the request's capabilities lack."""
        return self._inv.modern

    def missing(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The capabilities the client would have to declare to be asked ``method`` with
        ``params`` (`agora.mcp.asks.missing_capabilities`), or None when it declared them."""
        return asks.missing_capabilities(method, params, self.capabilities)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request to the client and return its result.

        At 2026-07-28 a server sends no request of its own (multi round-trip requests): the
        result is the one the client sent with this call in ``inputResponses`` under the key
        ``method``; without it this raises `InputRequired`, the call is answered
        ``input_required`` with the request under that key, and the client calls again with
        its answer. The handler then runs again from the start, so it must ask before it
        changes anything, and it gets only the answers of the latest round: one request per
        call at that revision. A request that needs a capability this call's ``_meta`` does
        not declare (`missing`) is refused first: the call is answered -32021 listing them;
        an answer that is not the method's result (`agora.mcp.asks.answer_problem`) is -32602.
        A handler for which the request is optional checks `capabilities` and does not ask.

        Raises:
            ProtocolError: the client answered with an error, or did not answer in time.
            InputRequired: a 2026-07-28 call whose client has not answered yet.
            RequestRefused: a 2026-07-28 call whose client lacks the capability (-32021), or
                answered with what is not the method's result (-32602).
        """
        inv = self._inv
        if inv.modern:
            needed = self.missing(method, params)
            if needed is not None:
                raise RequestRefused(
                    rpc.MISSING_CLIENT_CAPABILITY,
                    f"{method} needs a client capability this request does not declare: add "
                    f"data.requiredCapabilities to _meta[{META_CAPABILITIES!r}] and call again",
                    {"requiredCapabilities": needed},
                )
            answers = inv.input_responses
            if answers and method in answers:
                answer = answers[method]
                problem = asks.answer_problem(method, answer)
                if problem is not None:
                    message = f"inputResponses[{method!r}]{problem}"
                    raise RequestRefused(rpc.INVALID_PARAMS, message, {"method": method})
                return answer
            raise InputRequired({method: {"method": method, "params": params}})
        return await self._conn.request_client(method, params, inv.id)

    async def progress(self, done: float, total: float | None, message: str | None) -> None:
        """Send notifications/progress (only if the client asked with a progressToken)."""
        token = self._inv.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": done}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._conn._emit(rpc.notification("notifications/progress", params), self._inv.id)

    async def log(self, level: str, data: Any) -> None:
        """Send notifications/message if the session's (or the request's) level admits it."""
        inv = self._inv
        if self._conn.session.wants_log(level, inv.meta if inv.modern else None):
            params = {"level": level, "logger": inv.name, "data": data}
            await self._conn._emit(rpc.notification("notifications/message", params), inv.id)

    def close_stream(self) -> None:
        """End the transport stream of this call's messages (see `ToolCall.close_stream`)."""
        if self._conn._hangup is not None:
            self._conn._hangup(self._inv.id)

    async def resource_updated(self, uri: str) -> None:
        """Tell the session that ``uri`` changed, on this call's stream."""
        await self._conn.resource_updated(uri, self._inv.id)


#: What `ChannelCall` takes from its channel when a handler asks.
_FROM_CHANNEL = frozenset({"progress", "log", "close_stream", "resource_updated"})


class ChannelCall(ToolCall):
    """The `ToolCall` of a call that came through a connection: its ``client`` is a
    `ClientChannel` made when a handler first asks for it, and its ``progress``, ``log``,
    ``close_stream`` and ``resource_updated`` are that channel's, bound when a handler asks
    for one rather than when the call starts. Most handlers never ask, and a call parked on
    its commit (hundreds at once under a burst of calls) then keeps neither a channel nor
    bound methods for the cyclic collector to scan, and made none."""

    __slots__ = ("_inv",)

    def __init__(
        self,
        tool: str,
        args: dict[str, Any],
        principal: Principal,
        runtime: Runtime,
        endpoint: Mapping[str, str],
        meta: Mapping[str, Any],
        connection: Connection,
        inv: Invoke,
    ) -> None:
        # ``client`` and the four fields above stay unset: reading one lands in `__getattr__`.
        self.tool, self.args, self.principal, self.runtime = tool, args, principal, runtime
        self.endpoint, self.meta, self.connection, self._inv = endpoint, meta, connection, inv

    def __getattr__(self, name: str) -> Any:
        if name == "client":
            channel = self.client = ClientChannel(cast("Connection", self.connection), self._inv)
            return channel
        if name in _FROM_CHANNEL:
            return getattr(self.client, name)
        if name == "local_client":  # rarely asked: no store per call
            return cast("Connection", self.connection).local_client
        raise AttributeError(name)
