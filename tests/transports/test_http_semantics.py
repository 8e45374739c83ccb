"""What RFC 9110/9112 and RFC 6455 ask of an origin server beyond framing: Host, Date, Vary,
preconditions, equivalent targets, public probes, and the WebSocket handshake's own rules.

Real loopback sockets against an in-process server (see `http_support`).
"""

from __future__ import annotations

import base64
import email.utils
import sqlite3

import pytest
import trio
from http_support import TOKEN, TOKEN_SHA256, RawHttp, Reply, raw_exchange, serve

from agora.config import PrincipalConfig
from agora.web.http import Request, wants_html

TIMEOUT = 30
#: The page's own request for a state change (same origin, JSON).
PAGE = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
KEY = base64.b64encode(b"k" * 16).decode()


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        ("application/json;q=0.1, */*", True),  # the specific range decides JSON's q
        ("text/html;Q=0, application/json;q=0.5", False),  # the q name in any case
        ("text/html;q=0.5, application/json", False),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", True),
        ("*/*", False),  # a tie: JSON, the API's own
        ("", False),
    ],
)
def test_accept_is_read_by_its_most_specific_range(accept, html):
    request = Request("GET", "/board", {}, {"accept": accept} if accept else {})
    assert wants_html(request) is html
    assert request.negotiated  # its answer varies with Accept
    forced = Request("GET", "/board", {"format": "json"}, {"accept": accept})
    assert not wants_html(forced)
    assert not forced.negotiated


@pytest.mark.parametrize("path", ["/board", "/cards?date=2026-01-01", "/nope"])
async def test_an_answer_chosen_by_accept_says_vary_accept(path):
    async with serve(toolsets=["chess", "chamber"]) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                for accept in ("text/html", "application/json"):
                    reply = await client.request("GET", path, headers={"accept": accept})
                    assert reply.headers.get("vary") == "Accept", reply
                forced = await client.request(
                    "GET", f"{path}{'&' if '?' in path else '?'}format=json"
                )
                assert "vary" not in forced.headers  # the query chose it


async def test_every_response_has_a_date():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                for method, path in (("GET", "/healthz"), ("GET", "/nope"), ("PUT", "/play")):
                    reply = await client.request(method, path)
                    date = email.utils.parsedate_to_datetime(reply.headers["date"])
                    assert date.tzinfo is not None, reply


async def test_a_change_whose_if_match_cannot_hold_gets_412_and_changes_nothing():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                made = await client.request("POST", "/play/tables", {"name": "im1"}, PAGE)
                assert made.status == 201, made
                human = made.json()["token"]
                body = {"token": human, "agentColor": "black"}
                refused = await client.request(
                    "POST", "/play/im1/side", body, PAGE | {"if-match": '"v1"'}
                )
                assert refused.status == 412, refused
                assert "If-Match" in refused.json()["error"]
                state = await client.request("GET", f"/play/im1/state?token={human}")
                assert state.json()["agentColor"] is None, state.json()  # no side chosen
                chosen = await client.request(
                    "POST", "/play/im1/side", body, PAGE | {"if-match": "*"}
                )
                assert chosen.status == 200, chosen


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET /healthz HTTP/1.1\r\n\r\n", 400),  # no Host (RFC 9112 3.2)
        (b"GET /healthz HTTP/1.1\r\nHost: evil@127.0.0.1\r\n\r\n", 400),  # not a host
        # HTTP/1.0 may omit it: no browser does, so no rebinding attack can
        (b"GET /healthz HTTP/1.0\r\n\r\n", 200),
        # absolute form: the target's host is checked, and the Host header ignored
        (b"GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 403),
        (b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n", 200),
        # an absolute target's empty path is / (RFC 9110 4.2.3): the start page, not a 404
        (b"GET http://127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200),
    ],
)
async def test_host_is_required_well_formed_and_read_from_an_absolute_target(head, status):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            raw = await raw_exchange(
                server.port, head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
            )
            assert _status(raw) == status, raw


async def test_an_escaped_unreserved_character_names_the_same_page():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                assert (await client.request("GET", "/%68ealthz")).status == 200
                plain = await client.request("GET", "/play/default")
                escaped = await client.request("GET", "/play/%64%65fault")
                assert escaped.status == plain.status == 200
                assert escaped.body == plain.body
                # an escaped slash stays a byte of a segment, not a separator
                assert (await client.request("GET", "/play%2Fdefault")).status == 404


async def test_probes_ignore_credentials_and_pages_refuse_an_unknown_bearer_in_their_words():
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    async with serve(principals=principals) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                for credentials in ("Basic dXNlcjpwdw==", "Bearer not-a-token", f"Bearer {TOKEN}"):
                    probe = await client.request(
                        "GET", "/healthz", headers={"authorization": credentials}
                    )
                    assert probe.status == 200, probe
            async with RawHttp.open(server.port) as client:
                page = await client.request(
                    "GET", "/play", headers={"authorization": "Bearer xyz", "accept": "text/html"}
                )
                assert page.status == 401, page
                assert page.headers["content-type"].startswith("text/html"), page
                assert "unknown bearer token" in page.body.decode()
            async with RawHttp.open(server.port) as client:
                api = await client.request("GET", "/play", headers={"authorization": "Bearer xyz"})
                assert api.status == 401
                assert "unknown bearer token" in api.json()["error"]
            async with RawHttp.open(server.port) as client:
                mcp = await client.request("POST", "/mcp", {}, {"authorization": "Bearer xyz"})
                assert mcp.status == 401
                assert "unknown bearer token" in mcp.json()["error"]["message"]  # JSON-RPC


def _upgrade(version: bytes = b"1.1", key: str = KEY, body: bytes = b"") -> bytes:
    length = b"Content-Length: %d\r\n" % len(body) if body else b""
    return (
        b"GET /mcp HTTP/" + version + b"\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: " + key.encode() + b"\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n" + length + b"\r\n" + body
    )


@pytest.mark.parametrize(
    ("request_bytes", "said"),
    [
        (_upgrade(key="abc"), b"Sec-WebSocket-Key must be 16 bytes"),
        (_upgrade(key=base64.b64encode(b"k" * 15).decode()), b"Sec-WebSocket-Key must be 16 bytes"),
        (_upgrade(body=b"hello"), b"has no body"),
        # wsproto's own refusal was a bare "400 " with no body, no Date
        (_upgrade().replace(b"Connection: Upgrade\r\n", b""), b"needs Connection: Upgrade"),
        (
            _upgrade().replace(b"Connection: Upgrade", b"Connection: keep-alive"),
            b"needs Connection: Upgrade",
        ),
        (_upgrade().replace(b"Sec-WebSocket-Version: 13\r\n", b""), b"Version 13 is required"),
        # A proxy that drops both hop-by-hop headers (nginx's default, which also sends
        # Connection: close) left "GET needs an Mcp-Session-Id", pointing at sessions.
        # A tester's finding: a proxy that passes Connection: Upgrade on but not Upgrade
        # (nginx without proxy_set_header Upgrade) was told neither header arrived.
        (
            _upgrade().replace(b"Upgrade: websocket\r\n", b""),
            b"and Connection: Upgrade) whose Upgrade: websocket header did not arrive",
        ),
        (
            _upgrade()
            .replace(b"Upgrade: websocket\r\n", b"")
            .replace(b"Connection: Upgrade", b"Connection: close"),
            b"Upgrade: websocket and Connection: Upgrade headers did not arrive",
        ),
        (
            _upgrade(version=b"1.0")
            .replace(b"Upgrade: websocket\r\n", b"")
            .replace(b"Connection: Upgrade", b"Connection: close"),
            b"Upgrade: websocket and Connection: Upgrade headers did not arrive",
        ),
        (
            _upgrade().replace(
                b"Sec-WebSocket-Version",
                b"Sec-WebSocket-Key: " + KEY.encode() + b"\r\nSec-WebSocket-Version",
            ),
            b"Key is repeated; send it once",
        ),
    ],
)
async def test_a_websocket_upgrade_that_breaks_rfc_6455_gets_400(request_bytes, said):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            raw = await raw_exchange(server.port, request_bytes)
            assert _status(raw) == 400, raw
            assert said in raw


async def test_an_upgrade_to_another_websocket_version_gets_a_whole_426():
    # wsproto's own 426 had an empty reason phrase, no Date and no body.
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            old = _upgrade().replace(b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Version: 8")
            raw = await raw_exchange(server.port, old)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 426 Upgrade Required\r\n"), raw
    assert b"\r\ndate: " in head.lower()
    assert b"\r\nsec-websocket-version: 13" in head.lower()
    assert b"\r\nupgrade: websocket" in head.lower()  # (RFC 9110 15.5.22)
    assert b"speaks WebSocket version 13" in body


async def test_an_http_1_0_upgrade_is_not_one_and_a_good_one_is():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            raw = await raw_exchange(server.port, _upgrade(version=b"1.0"))
            assert _status(raw) != 101, raw  # Upgrade ignored: a plain GET of /mcp
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream:
                await stream.send_all(_upgrade())
                assert (await stream.receive_some(4096)).startswith(b"HTTP/1.1 101 "), "refused"


@pytest.mark.sqlite_only(
    "a second SQLite connection holding BEGIN IMMEDIATE stands for another process"
)
@pytest.mark.parametrize(
    ("deadline", "said"),
    [
        (1.0, "nothing was changed"),  # the write's deadline came within the wait: its 503
        # past the grace too: shutdown waits for the write's outcome (`App.settle_commits`),
        # where it cut the request off with "may or may not have been saved"
        (4.0, "nothing was changed"),
    ],
)
async def test_a_page_change_in_flight_at_shutdown_gets_the_grace_and_then_an_answer(
    tmp_path, deadline, said
):
    """Before: page requests were not counted in flight, so shutdown gave them no grace, and
    the one it cut off got no response at all (curl: 000) whether or not it was saved."""
    path = tmp_path / "agora.db"
    replies: list[Reply] = []

    async def create(port: int) -> None:
        async with RawHttp.open(port) as client:
            replies.append(await client.request("POST", "/play/tables", {}, PAGE))

    # (the writer in a thread: a child process would outlive the test by its stuck BEGIN)
    config = {
        "db": str(path),
        "grace_seconds": 0.3,
        "commit_timeout": deadline,
        "writer_process": False,
    }
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, serve(**config) as server:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # another process writes: the page's write waits
            nursery.start_soon(_release_later, other, deadline + 2)
            nursery.start_soon(create, server.port)
            while server.app.in_flight == 0:  # noqa: ASYNC110 - counted, as a call is
                await trio.sleep(0.01)
            # shutdown follows, while the write waits for the lock
    assert len(replies) == 1, "the request got no answer"
    assert replies[0].status == 503, replies[0]
    assert said in replies[0].json()["error"]


async def _release_later(other: sqlite3.Connection, after: float) -> None:
    await trio.sleep(after)  # past the grace and the commit deadline: the write never got it
    other.execute("ROLLBACK")
    other.close()
