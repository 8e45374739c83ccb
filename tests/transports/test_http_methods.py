"""HEAD and the methods a page is not served by (RFC 9110, 9.1, 9.3.2 and 15.5.6).

A HEAD gets what a GET would, head only: the same status and header fields, Content-Length
included, and no body, so the next response on the connection is read from its first byte. A
page that is there but not served by the method asked gets 405 with ``Allow``. Real loopback
sockets against an in-process server (see `http_support`); h11 reads the responses, and it
knows a response to a HEAD has no body.
"""

from __future__ import annotations

import pytest
import trio
from http_support import RawHttp, serve

TIMEOUT = 30

PAGES = [
    "/play",
    "/play/default",
    "/play/default/pgn",
    "/cards?date=2026-01-01",
    "/chamber/keys",
    "/board",
    "/healthz",
    "/readyz",
    "/nope",  # a 404's head has no body either
]


@pytest.mark.parametrize("path", PAGES)
async def test_head_answers_what_get_does_without_the_body(path):
    async with serve(toolsets=["chess", "chamber"]) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                got = await client.request("GET", path)
                head = await client.request("HEAD", path)
                assert head.status == got.status, (head, got)
                assert head.body == b""
                assert head.headers["content-type"] == got.headers["content-type"]
                if path not in ("/healthz", "/readyz"):  # (their bodies count live things)
                    assert head.headers["content-length"] == str(len(got.body))
                again = await client.request("GET", path)  # the same connection, in step
                assert again.status == got.status, again


async def test_head_of_an_event_stream_is_its_head_alone():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                head = await client.request("HEAD", "/flood")  # GET: an endless SSE stream
                assert head.status == 200, head
                assert head.headers["content-type"] == "text/event-stream"
                assert head.body == b""
                assert (await client.request("GET", "/healthz")).status == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/play", "GET, HEAD"),
        ("DELETE", "/board", "GET, HEAD"),
        ("GET", "/play/default/side", "POST"),
        ("POST", "/healthz", "GET, HEAD"),
        ("PATCH", "/play/default/move", "POST"),
    ],
)
async def test_a_page_asked_by_a_method_it_does_not_serve_gets_405_and_allow(method, path, allow):
    async with serve(toolsets=["chess", "chamber"]) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                reply = await client.request(method, path, headers={"accept": "*/*"})
                assert reply.status == 405, reply
                assert reply.headers["allow"] == allow
                assert method in reply.json()["error"]


@pytest.mark.parametrize("method", ["HEAD", "PUT", "PATCH"])
async def test_an_mcp_endpoint_refuses_other_methods_with_405(method):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                for path in ("/mcp", "/mcp/probe"):
                    reply = await client.request(method, path, headers={"mcp-session-id": "x"})
                    assert reply.status == 405, reply
                    assert reply.headers["allow"] == "GET, POST, DELETE"
                    if method == "HEAD":
                        assert reply.body == b""
                    else:
                        assert method in reply.json()["error"]["message"]
