"""Request targets that name no resource, and a request without Host: said as they are.

A hostile client found ``GET healthz HTTP/1.1`` (a bare name) and ``CONNECT 127.0.0.1:22``
refused with 403 'Host "" is not allowed', the target read as a URL without a host, an
HTTP/1.0 request without Host told the same about an empty Host it never sent, and
``OPTIONS *`` answered 404 "no such page".
"""

from __future__ import annotations

import pytest
import trio
from http_support import raw_exchange, serve

TIMEOUT = 20


def _status_and_body(reply: bytes) -> tuple[int, str]:
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode(errors="replace")


@pytest.mark.parametrize(
    ("line", "status", "said"),
    [
        pytest.param("GET healthz HTTP/1.1", 400, 'healthz\\" is neither a path',
                     id="bare-name"),
        pytest.param("CONNECT 127.0.0.1:22 HTTP/1.1", 400, "nor an absolute http URL",
                     id="connect"),
        pytest.param("GET ftp://127.0.0.1/healthz HTTP/1.1", 400, "nor an absolute http URL",
                     id="other-scheme"),
        pytest.param("GET http://127.0.0.1:{port}/healthz HTTP/1.1", 200, '"ok"',
                     id="absolute-form-still-served"),
    ],
)  # fmt: skip
async def test_a_target_that_is_no_path_nor_http_url_is_a_bad_request(line, status, said):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            request = f"{line.format(port=server.port)}\r\nHost: 127.0.0.1:{server.port}\r\n"
            reply = await raw_exchange(server.port, f"{request}Connection: close\r\n\r\n".encode())
    got, body = _status_and_body(reply)
    assert got == status, reply
    assert said in body, body


async def test_an_http_1_0_request_without_host_is_served_as_one_naming_this_server():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            reply = await raw_exchange(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    got, body = _status_and_body(reply)
    assert got == 200, reply
    assert '"ok"' in body, body


async def test_an_http_1_0_request_without_host_still_has_its_origin_checked():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            request = b"GET /healthz HTTP/1.0\r\nOrigin: http://evil.example\r\n\r\n"
            reply = await raw_exchange(server.port, request)
    got, body = _status_and_body(reply)
    assert got == 403, reply
    assert 'Origin \\"http://evil.example\\" is not allowed' in body, body


@pytest.mark.parametrize(
    ("method", "status", "said"),
    [
        pytest.param("OPTIONS", 501, "OPTIONS * (the server as a whole) is not answered",
                     id="server-wide-options"),
        pytest.param("GET", 400, 'target \\"*\\" is only for OPTIONS, not GET', id="get"),
    ],
)  # fmt: skip
async def test_an_asterisk_target_is_not_a_missing_page(method, status, said):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            request = f"{method} * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            reply = await raw_exchange(server.port, request.encode())
    got, body = _status_and_body(reply)
    assert got == status, reply
    assert said in body, body
