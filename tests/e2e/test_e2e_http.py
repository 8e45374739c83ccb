"""Streamable HTTP against a real server: bad input, Host/Origin checks, the session's owner.

Each bad request gets the right HTTP status and JSON-RPC error; afterwards a new session on
the same server still works. Bytes are sent with a raw h11 client so nothing is tidied up.
"""

from __future__ import annotations

import html
import json

import pytest
import trio
from e2e_http import http, raw_exchange
from e2e_mcp import INITIALIZE, INITIALIZED, nested
from e2e_websocket import RawWebSocket

from agora.mcp.jsonrpc import MAX_MESSAGE_BYTES

TIMEOUT = 15
VERSION = "2025-11-25"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def open_session(port: int, path: str = "/mcp/chess", **headers: str) -> dict[str, str]:
    """Initialize a handshake session; the headers that address it."""
    reply = await http(port, "POST", path, INITIALIZE, headers=headers)
    assert reply.status == 200, reply
    assert reply.json()["result"]["protocolVersion"] == VERSION
    session = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
    done = await http(port, "POST", path, INITIALIZED, headers={**headers, **session})
    assert done.status == 202, done
    return session


async def assert_alive(port: int) -> None:
    """A new session can still call a tool."""
    session = await open_session(port)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_board"}}
    reply = await http(port, "POST", "/mcp/chess", call, headers=session)
    assert reply.status == 200, reply
    assert reply.json()["result"]["structuredContent"]["table"] == "default"


def rpc(method: str, params: object = None, rid: int = 7) -> dict[str, object]:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


BAD_BODIES = [
    # (body, HTTP status, JSON-RPC code, id)
    pytest.param(b"{not json", 400, -32700, None, id="not-json"),
    pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"p\xff\xfe"}', 400, -32700, None,
                 id="invalid-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"p\\ud800"}', 400, -32700, 7,
                 id="lone-surrogate"),
    pytest.param(rpc("initialize", nested(65)), 400, -32600, 7, id="params-depth-65"),
    pytest.param([INITIALIZE], 400, -32600, None, id="batch"),
    pytest.param(b"[]", 400, -32600, None, id="empty-batch"),
    pytest.param(b'"just a string"', 400, -32600, None, id="not-an-object"),
    pytest.param(rpc("tools/call", {"name": "get_board"}), 400, -32600, None,
                 id="tools-call-before-initialize"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "status", "code", "rid"), BAD_BODIES)
async def test_a_bad_body_gets_an_http_and_json_rpc_error(agora, body, status, code, rid):
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", body)
        assert reply.status == status, reply
        error = reply.json()
        assert error["error"]["code"] == code, error
        assert error["id"] == rid
        await assert_alive(agora.port)


async def test_a_body_over_the_message_limit_gets_413(agora):
    body = json.dumps(rpc("ping", {"pad": "x" * MAX_MESSAGE_BYTES})).encode()
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", body)
        assert reply.status == 413, reply
        await assert_alive(agora.port)


async def test_a_chunked_body_over_the_message_limit_gets_413(agora):
    chunk = b"x" * (MAX_MESSAGE_BYTES // 6)
    head = (
        f"POST /mcp/chess HTTP/1.1\r\nHost: 127.0.0.1:{agora.port}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(7)) + b"0\r\n\r\n"
    with trio.fail_after(TIMEOUT):
        answer = await raw_exchange(agora.port, head + body)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        await assert_alive(agora.port)


IN_SESSION = [
    # (request, JSON-RPC code or None for a tool error result)
    pytest.param(rpc("no/such/method"), -32601, id="unknown-method"),
    pytest.param(rpc("tools/call", {"name": "no_such_tool"}), -32602, id="unknown-tool"),
    pytest.param(rpc("tools/call", {"name": "move_piece", "arguments": {"from": 5, "to": True}}),
                 None, id="wrong-argument-types"),
    pytest.param(rpc("tools/call", {"name": "get_board", "arguments": "x"}), -32602,
                 id="arguments-not-an-object"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "code"), IN_SESSION)
async def test_a_bad_request_in_a_session_is_answered_and_the_session_survives(
    agora, message, code
):
    with trio.fail_after(TIMEOUT):
        session = await open_session(agora.port)
        reply = await http(agora.port, "POST", "/mcp/chess", message, headers=session)
        assert reply.status == 200, reply
        answer = reply.json()
        assert answer["id"] == 7
        if code is None:
            assert answer["result"]["isError"] is True
            assert "must be a string" in answer["result"]["content"][0]["text"]
        else:
            assert answer["error"]["code"] == code, answer
        ping = await http(agora.port, "POST", "/mcp/chess", rpc("ping", rid=8), headers=session)
        assert ping.json() == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_the_stateless_revision_reports_errors_the_same_way(agora):
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    unknown = rpc("tools/call", {"name": "no_such_tool", "_meta": MODERN_META})
    wrong = rpc(
        "tools/call", {"name": "move_piece", "arguments": {"from": 5}, "_meta": MODERN_META}
    )
    with trio.fail_after(TIMEOUT):
        named = headers | {"mcp-name": "no_such_tool"}
        reply = await http(agora.port, "POST", "/mcp/chess", unknown, headers=named)
        assert reply.json()["error"]["code"] == -32602
        named = headers | {"mcp-name": "move_piece"}
        reply = await http(agora.port, "POST", "/mcp/chess", wrong, headers=named)
        result = reply.json()["result"]
        assert result["isError"] is True
        assert result["resultType"] == "complete"


async def test_an_unknown_session_id_gets_404(agora):
    headers = {"mcp-session-id": "0" * 32, "mcp-protocol-version": VERSION}
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", rpc("ping"), headers=headers)
        assert reply.status == 404, reply


@pytest.mark.parametrize("elsewhere", ["/mcp", "/mcp/chess/other-table"])
async def test_a_session_used_on_another_endpoint_answers_as_a_missing_one(agora, elsewhere):
    # It was served there as on its own endpoint: chess's default table on another table's
    # path, chess's tools on /mcp. Now the same 404, in the same bytes, as a made-up id.
    session = await open_session(agora.port)
    missing = {**session, "mcp-session-id": "0" * 32}
    with trio.fail_after(TIMEOUT):
        there = await http(agora.port, "POST", elsewhere, rpc("tools/list"), headers=session)
        unknown = await http(agora.port, "POST", elsewhere, rpc("tools/list"), headers=missing)
        assert (there.status, there.body) == (404, unknown.body)
        home = await http(agora.port, "POST", "/mcp/chess", rpc("tools/list"), headers=session)
        assert home.status == 200, home


FOREIGN = [
    pytest.param({"host": "evil.example"}, id="foreign-host"),
    pytest.param({"host": "evil.example:8765"}, id="foreign-host-with-port"),
    pytest.param({"origin": "http://evil.example"}, id="foreign-origin"),
    pytest.param({"origin": "http://127.0.0.1.evil.example"}, id="lookalike-origin"),
    pytest.param({"origin": "null"}, id="null-origin"),
]


@pytest.mark.parametrize("headers", FOREIGN)
async def test_a_foreign_host_or_origin_gets_403_over_http(agora, headers):
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", INITIALIZE, headers=headers)
        assert reply.status == 403, reply
        assert "mcp-session-id" not in reply.headers
    # The refusal names what it refused and the setting that would accept it.
    [(which, value)] = headers.items()
    message = reply.json()["error"]
    assert f'{which.title()} "{value}" is not allowed' in message, message
    assert "allowed_hosts" in message, message


@pytest.mark.parametrize(
    ("host", "name"),
    [
        pytest.param("0.0.0.0:{port}", "0.0.0.0", id="wildcard-address"),
        pytest.param("10.1.2.3:{port}", "10.1.2.3", id="own-address"),
        pytest.param("Agora.Example.com", "agora.example.com", id="name"),
    ],
)
async def test_a_refused_host_is_named_with_the_setting_that_accepts_it(agora, host, name):
    # What a node bound to 0.0.0.0 answers when asked by its address (docs/scale-out.md).
    host = host.format(port=agora.port)
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "GET", "/healthz", headers={"host": host})
    assert reply.status == 403, reply
    message = reply.json()["error"]
    assert f'Host "{host}" is not allowed' in message, message
    assert f'allowed_hosts = ["{name}"]' in message, message
    assert f"AGORA_ALLOWED_HOSTS={name}" in message, message


async def test_a_refused_host_is_quoted_escaped_and_cut(agora):
    long_host = "a" * 300 + ".example"
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "GET", "/healthz", headers={"host": long_host})
    assert reply.status == 400, reply  # no host name is that long (RFC 9112 3.2)
    message = reply.json()["error"]
    assert long_host not in message
    assert f'Host "{"a" * 100}...[+208 chars]" is not a host name' in message, message
    assert "add it to" not in message  # not a name allowed_hosts could hold
    with trio.fail_after(TIMEOUT):
        raw = await raw_exchange(
            agora.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://a\\b\r\n\r\n"
        )
    assert raw.startswith(b"HTTP/1.1 403"), raw
    assert b'Origin \\"http://a\\\\\\\\b\\"' in raw, raw  # the backslash escaped, then JSON's


@pytest.mark.parametrize("headers", FOREIGN)
async def test_a_foreign_host_or_origin_gets_403_over_websocket(agora, headers):
    named = {k.title(): v for k, v in headers.items()}
    with trio.fail_after(TIMEOUT):
        async with RawWebSocket.open(agora.port, "/mcp", headers=named) as ws:
            assert ws.status == 403


#: What a browser sends when it navigates to a page.
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.mark.parametrize(
    ("path", "headers", "status", "said"),
    [
        pytest.param("/nope", {}, 404, "no such page: /nope", id="unknown-page"),
        pytest.param(
            "/healthz", {"host": "<b>evil.example"}, 400, 'Host "<b>evil.example"', id="host"
        ),
        pytest.param(
            "/play/default", {"origin": "http://evil.example"}, 403, "evil.example", id="origin"
        ),
    ],
)
async def test_a_browser_gets_a_refusal_as_html_and_other_clients_as_json(
    agora, path, headers, status, said
):
    with trio.fail_after(TIMEOUT):
        page = await http(agora.port, "GET", path, headers=BROWSER | headers)
        data = await http(agora.port, "GET", path, headers=headers)
        asked = await http(
            agora.port, "GET", path, headers={"accept": "application/json"} | headers
        )
    assert page.status == status, page
    assert page.headers["content-type"].startswith("text/html"), page
    assert html.escape(said) in page.body.decode(), page  # escaped: no markup of the caller's
    assert "<b>" not in page.body.decode()
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for reply in (data, asked):
        assert reply.status == status, reply
        assert reply.headers["content-type"] == "application/json", reply
        assert said in reply.json()["error"]


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        pytest.param("GET", "/mcp/nope", {}, 404, id="unknown-endpoint"),
        pytest.param("POST", "/mcp/chess", {"host": "evil.example"}, 403, id="foreign-host"),
        pytest.param("GET", "/mcp", {"origin": "http://evil.example"}, 403, id="foreign-origin"),
    ],
)
async def test_an_mcp_endpoint_s_refusal_stays_json_for_a_browser(
    agora, method, path, headers, status
):
    body = INITIALIZE if method == "POST" else None
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, method, path, body, headers=BROWSER | headers)
    assert reply.status == status, reply
    assert reply.headers["content-type"] == "application/json", reply
    assert reply.json()["error"]


@pytest.mark.parametrize(
    "origin", ["http://localhost:{port}", "http://127.0.0.1:{port}", "http://[::1]:{port}"]
)
async def test_a_local_origin_is_allowed(agora, origin):
    headers = {"origin": origin.format(port=agora.port)}
    with trio.fail_after(TIMEOUT):
        await open_session(agora.port, **headers)
        async with RawWebSocket.open(
            agora.port, "/mcp", headers={"Origin": headers["origin"]}
        ) as ws:
            assert ws.status == 101


async def test_other_methods_on_the_endpoint(agora):
    with trio.fail_after(TIMEOUT):
        session = await open_session(agora.port)
        put = await http(agora.port, "PUT", "/mcp/chess", b"", headers=session)
        assert put.status == 405
        get = await http(agora.port, "GET", "/mcp/chess", headers=session)
        assert get.status == 406  # a GET stream needs Accept: text/event-stream
        gone = await http(agora.port, "DELETE", "/mcp/chess", headers=session)
        assert gone.status == 200
        after = await http(agora.port, "POST", "/mcp/chess", rpc("ping"), headers=session)
        assert after.status == 404


async def test_a_session_request_naming_the_stateless_revision_gets_400(agora):
    # The session negotiated 2025-11-25; a request on it with a 2026-07-28 header and no
    # envelope is refused as not the session's version (it was told -32602, params._meta
    # missing, as if it were a 2026-07-28 request), and the session itself is untouched.
    session = await open_session(agora.port)
    headers = session | {"mcp-protocol-version": "2026-07-28"}
    with trio.fail_after(TIMEOUT):
        reply = await http(agora.port, "POST", "/mcp/chess", rpc("tools/list"), headers=headers)
        assert reply.status == 400, reply
        error = reply.json()["error"]
        assert error["code"] == -32600, error
        assert f"2026-07-28 is not this session's: it negotiated {VERSION}" in error["message"]
        # Another handshake revision's header is served, as the conformance suite expects.
        for version in (VERSION, "2025-03-26"):
            headers = session | {"mcp-protocol-version": version}
            reply = await http(agora.port, "POST", "/mcp/chess", rpc("tools/list"), headers=headers)
            assert reply.status == 200, reply
            assert reply.json()["result"]["tools"]


async def test_the_chess_pages_event_stream_says_one_cache_control(agora):
    # It sent "cache-control: no-cache" (every SSE stream's) and the page's "Cache-Control:
    # no-store" both, which leave a cache to pick one.
    with trio.fail_after(TIMEOUT):
        stream = await trio.open_tcp_stream("127.0.0.1", agora.port)
        async with stream:
            request = f"GET /play/default/events HTTP/1.1\r\nHost: 127.0.0.1:{agora.port}\r\n\r\n"
            await stream.send_all(request.encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive_some(4096)
    lines = head.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK", lines
    cache = [
        line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("cache-control:")
    ]
    assert cache == ["no-store"], lines
