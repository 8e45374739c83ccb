"""The bridge's memory of one MCP session, so that it outlives a WebSocket (sans-io).

``agora stdio --connect URL`` relays JSON-RPC lines between a stdio client and a running
server, every message both ways, untouched. `Relay` watches them go by and keeps what a
reconnection needs: the client's ``initialize`` (once the server accepted it), whether the
client sent ``notifications/initialized``, its ``logging/setLevel`` and resource
subscriptions, its requests still waiting for an answer, and the server's own requests that
the client may answer. When the connection drops, every request in flight gets a JSON-RPC
error at once (the client never hangs); on the next connection the bridge replays the
handshake under its own request ids and swallows the answers, so the client's session stays
valid. Answers to server requests of a previous connection are dropped: that server is gone.
When the client's input has ended and the bridge's grace is over, `Relay.closing` gives up on
the requests still in flight: each gets a JSON-RPC error and the server a cancellation, and
an answer that comes after is dropped (the client has had its one answer).

No I/O and no trio here: the bridge (`agora.bridge`) feeds lines in and writes what comes out.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from agora.mcp import jsonrpc as rpc

#: Code of the error a request in flight gets when the connection drops (-32000..-32099 is
#: the implementation-defined server error range).
CONNECTION_LOST = -32000
#: How long a request that could not be sent is told to wait before it is sent again: the
#: bridge retries the server at least every 2 s, and a restart takes a few seconds.
RETRY_SECONDS = 5

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class Relay:
    """Tracks one session across connections.

    Attributes:
        in_flight: The client's requests (id -> method) that have no answer yet.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.in_flight: dict[Any, str] = {}
        self._initialize: dict[str, Any] | None = None
        self._initialize_sent: dict[Any, dict[str, Any]] = {}
        self._initialized = False
        self._log_level: dict[str, Any] | None = None
        self._subscriptions: set[str] = set()
        self._server_requests: set[Any] = set()
        self._own_ids: set[str] = set()
        self._replay_init: str | None = None
        self._ids = itertools.count(1)
        self._abandoned: set[Any] = set()  # given up by `closing`: their answers are dropped
        self._barrier: str | None = None  # the id of the `barrier` ping still unanswered

    # -- client -> server --------------------------------------------------------------------

    def from_client(self, line: bytes) -> str | None:
        """Note one line from the client; the text to send on, or None to drop it.

        Raises:
            UnicodeDecodeError: the line is not UTF-8 (it cannot travel in a text frame).
        """
        text = line.decode()
        msg = _parse(line)
        if msg is None:
            return text  # the server answers malformed messages itself
        method, rid = msg.get("method"), msg.get("id")
        if isinstance(method, str):
            params = msg.get("params")
            params = params if isinstance(params, dict) else {}
            if rid is not None:
                self.in_flight[_key(rid)] = method
                self._note_request(method, _key(rid), params)
            elif method == "notifications/initialized":
                self._initialized = True
            elif method == "notifications/cancelled":
                self.in_flight.pop(_key(params.get("requestId")), None)
            return text
        if _key(rid) in self._server_requests:
            self._server_requests.discard(_key(rid))
            return text
        return None  # an answer to a request of a server that is gone

    def _note_request(self, method: str, rid: Any, params: dict[str, Any]) -> None:
        if method == "initialize":
            self._initialize_sent[rid] = params
        elif method == "logging/setLevel":
            self._log_level = params
        elif method == "resources/subscribe" and isinstance(params.get("uri"), str):
            self._subscriptions.add(params["uri"])
        elif method == "resources/unsubscribe":
            self._subscriptions.discard(params.get("uri"))

    def unsent(self, line: bytes) -> bytes | None:
        """The error line for a request that could not be sent, if it is still unanswered."""
        msg = _parse(line)
        if msg is None or "method" not in msg or msg.get("id") is None:
            return None
        rid = msg["id"]
        if self.in_flight.pop(_key(rid), None) is None:
            return None
        why = f"not sent: the agora server at {self.url} cannot be reached"
        retry = f"this bridge reconnects by itself: wait {RETRY_SECONDS} seconds, then try again"
        return _encode(rpc.error(rid, CONNECTION_LOST, f"{why}; {retry}"))

    # -- server -> client --------------------------------------------------------------------

    def from_server(self, text: str) -> bytes | None:
        """Note one message from the server; the line to write to the client, or None."""
        data = text.encode()
        msg = _parse(data)
        if msg is None:
            return data
        rid = msg.get("id")
        if "method" in msg:
            if rid is not None:
                self._server_requests.add(_key(rid))
            return data
        key = _key(rid)
        if key in self._abandoned:
            self._abandoned.discard(key)
            return None
        if key in self._own_ids:
            self._own_ids.discard(key)
            if key == self._barrier:
                self._barrier = None
            if key == self._replay_init and "error" in msg:
                raise ReplayRefused(msg["error"].get("message", "initialize refused"))
            return None
        self.in_flight.pop(key, None)
        params = self._initialize_sent.pop(key, None)
        if params is not None and "result" in msg:
            self._initialize = params
        return data

    @property
    def owing(self) -> bool:
        """Whether the server may still send the client something it is owed: an answer to
        a request in flight, or, before the `barrier` ping is answered, one to a line the
        relay cannot follow (not JSON, a batch: answered with id null, or not at all)."""
        return bool(self.in_flight) or self._barrier is not None

    def barrier(self) -> str:
        """A ping to send once the client's input has ended. The server answers the lines of
        a connection in order, a malformed one at once: by the time this ping is answered,
        the error for every malformed line sent before it has come (and been written)."""
        self._barrier = self._own_id()
        return _text(rpc.request(self._barrier, "ping"))

    # -- connections ---------------------------------------------------------------------------

    def lost(self) -> list[bytes]:
        """The connection dropped: an error line for every request in flight."""
        lines = [
            _lost(rid, f"the connection to the agora server at {self.url} was lost")
            for rid in self.in_flight
        ]
        self.in_flight.clear()
        self._initialize_sent.clear()
        self._server_requests.clear()
        self._own_ids.clear()
        self._abandoned.clear()
        self._barrier = None  # what the server owed is lost with the connection
        return lines

    def closing(self, why: str) -> tuple[list[str], list[bytes]]:
        """The bridge is closing with requests still in flight (its input ended and the
        server did not answer them in time): the cancellations to send the server, and an
        error line for the client for each, saying ``why`` and that the call may or may not
        have taken effect. An answer the server sends later is dropped."""
        cancels = [
            _text(rpc.notification("notifications/cancelled", {"requestId": rid, "reason": why}))
            for rid, method in self.in_flight.items()
            if method != "initialize"  # (MCP: an initialize is never cancelled)
        ]
        lines = [_lost(rid, why) for rid in self.in_flight]
        self._abandoned.update(self.in_flight)
        self.in_flight.clear()
        return cancels, lines

    def handshake(self) -> str | None:
        """The initialize request to send first on a new connection, if the client had one."""
        if self._initialize is None:
            return None
        self._replay_init = self._own_id()
        return _text(rpc.request(self._replay_init, "initialize", self._initialize))

    def is_handshake_answer(self, text: str) -> bool:
        """Whether ``text`` (already passed to `from_server`) answered `handshake`."""
        msg = _parse(text.encode())
        return msg is not None and "method" not in msg and msg.get("id") == self._replay_init

    def session_state(self) -> list[str]:
        """What to send after the replayed handshake was answered: the rest of the state."""
        out: list[str] = []
        if self._initialized:
            out.append(_text(rpc.notification("notifications/initialized")))
        if self._log_level is not None:
            out.append(_text(rpc.request(self._own_id(), "logging/setLevel", self._log_level)))
        out.extend(
            _text(rpc.request(self._own_id(), "resources/subscribe", {"uri": uri}))
            for uri in sorted(self._subscriptions)
        )
        return out

    def _own_id(self) -> str:
        rid = f"agora-bridge-{next(self._ids)}"
        self._own_ids.add(rid)
        return rid


class ReplayRefused(Exception):
    """The server refused the client's initialize when the bridge replayed it."""


def _parse(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, or None when it is not one: not JSON, another value, or
    nested too deep to decode (the server answers such a line itself, with its id)."""
    try:
        msg = _decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return msg if isinstance(msg, dict) else None


def _key(rid: Any) -> Any:
    # JSON ids are strings or numbers; 1 and 1.0 are the same id, "1" is another.
    if isinstance(rid, float) and rid.is_integer():
        return int(rid)
    return rid if isinstance(rid, str | int) else repr(rid)


def _lost(rid: Any, why: str) -> bytes:
    message = f"{why}; the call may or may not have taken effect: check before repeating it"
    return _encode(rpc.error(rid, CONNECTION_LOST, message))


def _text(message: dict[str, Any]) -> str:
    return _encode(message).decode()
