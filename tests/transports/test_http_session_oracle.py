"""What a Streamable HTTP session id tells a caller who does not own it: nothing.

A hostile client found that another principal's ``Mcp-Session-Id`` answered 403 "this session
belongs to another principal" where a made-up id answered 404: an oracle of which ids are
live. And a GET with a ``Last-Event-ID`` no stream of the session has answered 404, which an
MCP client reads as "the session is gone", dropping a session that was alive.
"""

from __future__ import annotations

import hashlib

import trio
from http_support import TOKEN, TOKEN_SHA256, RawHttp, open_session, serve

from agora.config import PrincipalConfig

TIMEOUT = 20
OTHER = "another-token-for-bob"
PRINCIPALS = [
    PrincipalConfig("alice", TOKEN_SHA256, []),
    PrincipalConfig("bob", hashlib.sha256(OTHER.encode()).hexdigest(), []),
]
PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


async def test_another_principals_session_answers_as_a_missing_one():
    async with serve(principals=PRINCIPALS) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                alice = await open_session(client, authorization=f"Bearer {TOKEN}")
            bob = {**alice, "authorization": f"Bearer {OTHER}"}
            made_up = {**bob, "mcp-session-id": "0" * 32}
            for method, body, extra in (
                ("POST", PING, {}),
                ("GET", None, {"accept": "text/event-stream"}),
                ("DELETE", None, {}),
            ):
                replies = []
                for headers in (bob, made_up):
                    async with RawHttp.open(server.port) as client:
                        replies.append(
                            await client.request(method, "/mcp/probe", body, {**headers, **extra})
                        )
                foreign, missing = replies
                assert (foreign.status, foreign.body) == (missing.status, missing.body), method
                assert foreign.status == 404, (method, foreign)
            async with RawHttp.open(server.port) as client:  # alice's session still serves her
                assert (await client.request("POST", "/mcp/probe", PING, alice)).status == 200


async def test_an_unknown_last_event_id_is_a_bad_request_not_a_lost_session():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
            for last in ("0", "abc", "9999-1"):
                headers = {**session, "accept": "text/event-stream", "last-event-id": last}
                async with RawHttp.open(server.port) as client:
                    reply = await client.request("GET", "/mcp/probe", None, headers)
                assert reply.status == 400, (last, reply)
                assert b"the session itself is alive" in reply.body
            async with RawHttp.open(server.port) as client:
                assert (await client.request("POST", "/mcp/probe", PING, session)).status == 200
