"""Who may use which route: Host/Origin everywhere, no cross-site state changes, MCP's rules.

Real loopback sockets against an in-process server (see `http_support`).
"""

from __future__ import annotations

import json

import pytest
import trio
from http_support import INITIALIZE, TOKEN, TOKEN_SHA256, RawHttp, open_session, serve

from agora.config import PrincipalConfig
from agora.errors import StoreError
from agora.server.failed import page_failure
from agora.web.http import Request

TIMEOUT = 30

#: Foreign names (403), and Host values that name no host at all (400: RFC 9112 3.2).
FOREIGN = [
    pytest.param({"host": "evil.example@127.0.0.1"}, 400, id="user-info-host"),
    pytest.param({"host": "evil.example"}, 403, id="foreign-host"),
    pytest.param({"host": "127.0.0.1 evil.example"}, 400, id="two-names"),
    pytest.param({"origin": "http://evil.example"}, 403, id="foreign-origin"),
    pytest.param({"origin": "http://evil.example@127.0.0.1"}, 403, id="user-info-origin"),
    pytest.param({"origin": "null"}, 403, id="null-origin"),
]
ROUTES = ["/healthz", "/cards?date=2026-01-01", "/play/default", "/play/default/state", "/mcp"]


@pytest.mark.parametrize(("headers", "status"), FOREIGN)
@pytest.mark.parametrize("path", ROUTES)
async def test_every_route_checks_host_and_origin(headers, status, path):
    async with serve(toolsets=["chess", "chamber"]) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                reply = await client.request("GET", path, headers=headers)
                assert reply.status == status, reply


#: Cross-site state changes (403), and bodies a form or a "simple" cross-site request can send
#: (415: JSON is what the pages send, and what no other site can without a preflight).
CROSS_SITE = [
    pytest.param({"origin": "http://evil.example"}, 403, id="foreign-origin"),
    pytest.param({"content-type": "text/plain"}, 415, id="simple-content-type"),
    pytest.param({"content-type": "application/x-www-form-urlencoded"}, 415, id="form"),
    pytest.param({"content-type": ""}, 415, id="no-content-type"),
    pytest.param({"sec-fetch-site": "cross-site"}, 403, id="sec-fetch-site-cross-site"),
    pytest.param({"sec-fetch-site": "same-site"}, 403, id="sec-fetch-site-same-site"),
]


@pytest.mark.parametrize(("headers", "status"), CROSS_SITE)
async def test_a_cross_site_table_creation_is_refused_and_creates_nothing(headers, status):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                made = await client.request("POST", "/play/tables", {"name": "x1"}, headers)
                assert made.status == status, made
            async with RawHttp.open(server.port) as client:
                assert (await client.request("GET", "/play/x1/state")).status == 404


async def test_the_page_s_own_requests_still_create_tables():
    page = {
        "origin": "http://127.0.0.1",
        "sec-fetch-site": "same-origin",
        "content-type": "application/json",
    }
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                made = await client.request("POST", "/play/tables", {"name": "x1"}, page)
                assert made.status == 201, made
                assert (await client.request("GET", "/play/x1/state")).status == 200


async def test_with_principals_table_creation_needs_a_token():
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    async with serve(principals=principals) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                anonymous = await client.request("POST", "/play/tables", {"name": "x1"})
                assert anonymous.status == 401, anonymous
                assert "bearer" in anonymous.headers["www-authenticate"].lower()
            wrong = {"authorization": "Bearer nope"}
            async with RawHttp.open(server.port) as client:
                assert (await client.request("POST", "/play/tables", {}, wrong)).status == 401
            async with RawHttp.open(server.port) as client:
                bearer = {"authorization": f"Bearer {TOKEN}"}
                made = await client.request("POST", "/play/tables", {"name": "x1"}, bearer)
                assert made.status == 201, made
                # Reading stays open to anyone: the page, its state, its stream.
                assert (await client.request("GET", "/play/x1/state")).status == 200


MCP_POSTS = [
    pytest.param({"content-type": "text/plain"}, 415, id="text-plain"),
    pytest.param({"content-type": ""}, 415, id="no-content-type"),
    pytest.param({"accept": "application/json"}, 406, id="accept-json-only"),
    pytest.param({"accept": "text/event-stream"}, 406, id="accept-sse-only"),
    pytest.param({"accept": ""}, 406, id="no-accept"),
    pytest.param({"accept": "application/json, text/event-stream;q=0"}, 406, id="sse-q0"),
    # the most specific range decides (RFC 9110 12.5.1): q=0 is not undone by */*
    pytest.param({"accept": "text/event-stream;q=0, */*"}, 406, id="sse-q0-beats-any"),
    pytest.param({"accept": "application/json;Q=0, */*"}, 406, id="json-Q0-beats-any"),
]


@pytest.mark.parametrize(("headers", "status"), MCP_POSTS)
async def test_an_mcp_post_needs_a_json_body_and_both_accept_types(headers, status):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                reply = await client.request("POST", "/mcp/probe", INITIALIZE, headers)
                assert reply.status == status, reply
                assert reply.json()["error"]["code"] == -32600
                assert "mcp-session-id" not in reply.headers


@pytest.mark.parametrize(
    "accept", ["application/json, text/event-stream", "*/*", "application/*, text/*"]
)
async def test_an_mcp_post_with_an_acceptable_accept_is_served(accept):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                reply = await client.request("POST", "/mcp/probe", INITIALIZE, {"accept": accept})
                assert reply.status == 200, reply


MCP_GETS = [
    pytest.param("text/event-stream;q=0, application/json", 406, id="sse-q0"),
    pytest.param("application/json, Text/Event-Stream; Q=0", 406, id="sse-Q0"),
    pytest.param("text/event-stream;q=0, */*", 406, id="sse-q0-beats-any"),
    pytest.param("text/event-stream;q=bad", 406, id="sse-malformed-q"),
    pytest.param("application/json", 406, id="json-only"),
    pytest.param("text/event-stream;q=0.5", 200, id="sse-q-half"),
    pytest.param("*/*", 200, id="any"),
]


@pytest.mark.parametrize(("accept", "status"), MCP_GETS)
async def test_an_mcp_get_needs_accept_to_take_an_event_stream(accept, status):
    """q=0 means "not acceptable" (RFC 9110 §12.4.2): such a GET used to open a stream."""
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream:
                fields = "".join(f"{k}: {v}\r\n" for k, v in session.items())
                get = f"GET /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}Accept: {accept}"
                await stream.send_all(f"{get}\r\n\r\n".encode())
                head = await stream.receive_some(65536)
                assert head.startswith(f"HTTP/1.1 {status} ".encode()), head


#: What a browser sends with a form posted from another site.
FORM_POST = {
    "accept": "text/html,application/xhtml+xml,*/*;q=0.8",
    "content-type": "application/x-www-form-urlencoded",
    "sec-fetch-site": "cross-site",
}


async def test_a_refused_state_change_answers_a_browser_html_and_the_page_s_fetch_json():
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    async with serve(principals=principals) as server:
        with trio.fail_after(TIMEOUT):
            for headers, status in ((FORM_POST, 403), ({"accept": "text/html"}, 401)):
                async with RawHttp.open(server.port) as client:
                    page = await client.request("POST", "/play/tables", {"name": "x1"}, headers)
                assert page.status == status, page
                assert page.headers["content-type"].startswith("text/html"), page
                fetched = {**headers, "accept": "*/*"}
                async with RawHttp.open(server.port) as client:
                    data = await client.request("POST", "/play/tables", {"name": "x1"}, fetched)
                assert data.status == status, data
                assert data.headers["content-type"] == "application/json", data
            assert "bearer" in data.headers["www-authenticate"].lower()


@pytest.mark.parametrize(
    ("exc", "status", "said"),
    [
        pytest.param(RuntimeError("a bug"), 500, "internal error", id="bug"),
        pytest.param(StoreError("disk full", cause="disk_full"), 503, "disk is full", id="store"),
    ],
)
def test_a_page_route_that_failed_answers_a_browser_html(exc, status, said):
    def request(accept: str) -> Request:
        return Request("POST", "/play/tables", {}, {"accept": accept})

    page = page_failure(request("text/html"), exc)
    assert page.status == status
    text = page.body.decode()
    assert said in text, text
    assert "correlation id corr-" in text, text
    assert "a bug" not in text  # the exception's own words stay in the log
    data = page_failure(request("*/*"), exc)
    assert data.status == status
    assert said in json.loads(data.body)["error"]


async def test_allow_anonymous_false_serves_mcp_only_to_callers_with_a_token():
    """An operator securing a server found no way to refuse tokenless MCP callers: with
    principals configured they were still served (as the anonymous principal)."""
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    bearer = {"authorization": f"Bearer {TOKEN}"}
    upgrade = {
        "upgrade": "websocket", "connection": "Upgrade", "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-protocol": "mcp",
    }  # fmt: skip
    async with serve(principals=principals, allow_anonymous=False) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                refused = await client.request("POST", "/mcp/chess", INITIALIZE)
            assert refused.status == 401, refused
            assert "bearer" in refused.headers["www-authenticate"].lower()
            assert "allow_anonymous = false" in refused.json()["error"]["message"]
            async with RawHttp.open(server.port) as client:
                served = await client.request("POST", "/mcp/chess", INITIALIZE, bearer)
            assert served.status == 200, served
            async with RawHttp.open(server.port) as client:
                socket_less = await client.request("GET", "/mcp/chess", None, upgrade)
            assert socket_less.status == 401, socket_less  # no WebSocket either
            # A reviewer's finding: the endpoints skip empty segments, and the gate did not.
            for path in ("//mcp", "//mcp/chess", "/mcp//chess"):
                async with RawHttp.open(server.port) as client:
                    doubled = await client.request("POST", path, INITIALIZE)
                assert doubled.status == 401, (path, doubled)
            async with RawHttp.open(server.port) as client:
                doubled = await client.request("GET", "//mcp/chess", None, upgrade)
            assert doubled.status == 401, doubled
            async with RawHttp.open(server.port) as client:  # probes and pages as before
                assert (await client.request("GET", "/readyz")).status == 200
                assert (await client.request("GET", "/play/default/state")).status == 200


async def test_a_path_a_route_names_literally_answers_by_that_routes_methods():
    # GET /play/tables matched the page route /play/{table} and answered 404 "no such
    # table", while PUT there got 405 with Allow: POST (a hostile client's finding).
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            for method in ("GET", "HEAD", "PUT"):
                async with RawHttp.open(server.port) as client:
                    reply = await client.request(method, "/play/tables")
                assert reply.status == 405, (method, reply)
                assert reply.headers["allow"] == "POST", reply
            async with RawHttp.open(server.port) as client:
                assert (await client.request("GET", "/play/default")).status == 200
