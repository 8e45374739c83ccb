"""The requests a server sends its client (sampling, elicitation, ``roots/list``): one
`Asking` per connection that ever asks, holding those that wait for their answers.

A call asks through `agora.server.channel.ClientChannel.request`; the client's responses
come back through `agora.server.connection.Connection.feed`. A request the server gives up
on (no answer within `CLIENT_REQUEST_TIMEOUT`, a handler's own shorter wait running out as
the router's for ``roots/list`` does, the call that asked cancelled or ended) is withdrawn
with ``notifications/cancelled``, as the side that abandons a request should send, so that
the client stops working on it (a user stops being asked). Nothing here knows about tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc

if TYPE_CHECKING:
    from agora.server.connection import Emit

__all__ = ["CLIENT_REQUEST_TIMEOUT", "Asking"]

#: How long a server-to-client request (sampling, elicitation) may wait for its answer.
CLIENT_REQUEST_TIMEOUT = 120.0
#: How long the ``notifications/cancelled`` of an abandoned request may take to send (the
#: call that asked may be ending: its task waits, shielded, for no longer than this).
WITHDRAW_SECONDS = 5.0


class Asking:
    """One connection's requests to its client that wait for their answers."""

    __slots__ = ("_asked", "_pending")

    def __init__(self) -> None:
        self._asked = 0  # requests sent to the client so far
        self._pending: dict[rpc.RequestId, tuple[trio.Event, list[rpc.Response]]] = {}

    def answer(self, response: rpc.Response) -> None:
        """Hand the client's ``response`` to the request that waits for it, if one does."""
        waiting = self._pending.get(response.id)
        if waiting is not None:
            waiting[1].append(response)
            waiting[0].set()

    async def ask(
        self,
        emit: Emit,
        method: str,
        params: dict[str, Any],
        related: rpc.RequestId | None,
    ) -> Any:
        """Send a request to the client with ``emit``, on the stream of call ``related``;
        return its result.

        Raises:
            ProtocolError: the client answered with an error, or not within
                `CLIENT_REQUEST_TIMEOUT`.
        """
        self._asked += 1
        rid = f"agora-{self._asked}"
        done = trio.Event()
        box: list[rpc.Response] = []
        self._pending[rid] = (done, box)
        sent = False
        try:
            await emit(rpc.request(rid, method, params), related)
            sent = True
            with trio.move_on_after(CLIENT_REQUEST_TIMEOUT):
                await done.wait()
        finally:
            del self._pending[rid]
            if sent and not box:
                await _withdraw(emit, rid, method, related)
        if not box:
            raise ProtocolError(rpc.INTERNAL_ERROR, f"the client did not answer {method}")
        if box[0].error is not None:
            err = box[0].error
            raise ProtocolError(int(err.get("code", rpc.INTERNAL_ERROR)), str(err.get("message")))
        return box[0].result


async def _withdraw(
    emit: Emit,
    rid: rpc.RequestId,
    method: str,
    related: rpc.RequestId | None,
) -> None:
    """Tell the client that the server no longer waits for its answer to request ``rid``."""
    reason = f"the server stopped waiting for the answer to {method}"
    notice = rpc.notification("notifications/cancelled", {"requestId": rid, "reason": reason})
    with trio.CancelScope(shield=True), trio.move_on_after(WITHDRAW_SECONDS):
        await emit(notice, related)
