"""Requests refused for their token, Host or Origin show in the operator's log, once a minute
per cause with a count, and never with a token.

Before, a client told 401 or 403 saw why, and the server's log said nothing, even at DEBUG:
an operator could not see token guessing, a misconfigured client, or a balancer the Host
check blocks. Real loopback sockets, an in-process server, Trio's mock clock.
"""

from __future__ import annotations

import logging
import re

import pytest
import trio
import trio.testing
from http_support import INITIALIZE, TOKEN_SHA256, RawHttp, serve

from agora.config import PrincipalConfig

TIMEOUT = 200  # mock seconds
WRONG = "wrong-token-that-must-not-be-logged"
CROSS_SITE = {"sec-fetch-site": "cross-site"}


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


async def _status(port: int, method: str, path: str, headers: dict[str, str]) -> int:
    async with RawHttp.open(port) as client:
        body = INITIALIZE if method == "POST" and path.startswith("/mcp") else None
        return (await client.request(method, path, body, headers)).status


async def test_refusals_are_said_once_a_minute_per_cause_without_the_token(clock, caplog):
    caplog.set_level(logging.DEBUG, logger="agora")
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    wrong = {"authorization": f"Bearer {WRONG}"}
    async with serve(principals=principals, allow_anonymous=False) as server:
        port = server.port
        with trio.fail_after(TIMEOUT):
            for _ in range(3):
                assert await _status(port, "POST", "/mcp/chess", {}) == 401
            assert await _status(port, "POST", "/mcp/chess", wrong) == 401
            assert await _status(port, "POST", f"/mcp/chess?token={WRONG}", wrong) == 401
            assert await _status(port, "GET", "/healthz", {"host": "192.0.2.2:18342"}) == 403
            assert await _status(port, "POST", "/play/tables", CROSS_SITE) == 403
            await trio.sleep(61)
            assert await _status(port, "POST", "/mcp/chess", wrong) == 401
            await trio.sleep(60)
        said = _refused(caplog)
    tail = " (said once a minute per cause, with a count)"
    peer = "from 127.0.0.1:"
    assert [(level, text.partition(peer)[0]) for level, text in said] == [
        ("WARNING", "refused 401 no bearer token: "),
        ("WARNING", "refused 401 unknown bearer token: "),
        ("WARNING", "refused 403 Host or Origin not allowed: "),
        ("WARNING", "refused 403 cross-site page request: "),
        ("INFO", "refused 401 no bearer token: 2 more in 60 s, the latest "),
        ("INFO", "refused 401 unknown bearer token: 1 more in 60 s, the latest "),
        ("INFO", "refused 401 unknown bearer token: 1 more in 60 s, the latest "),
    ], said
    assert said[0][1].endswith(" for /mcp/chess; allow_anonymous = false" + tail), said
    assert said[1][1].endswith(" for /mcp/chess" + tail), said
    assert ' for /healthz; Forbidden: Host "192.0.2.2:18342" is not allowed' in said[2][1], said
    assert said[2][1].endswith("AGORA_ALLOWED_HOSTS=192.0.2.2)" + tail), said
    assert said[3][1].endswith(" for /play/tables" + tail), said
    assert all(text.endswith(" for /mcp/chess") for _, text in said[4:]), said
    assert WRONG not in caplog.text


async def test_a_count_is_said_when_its_minute_ends_though_no_refusal_follows(clock, caplog):
    # Before, the count waited for the cause's next refusal after the minute: refusals that
    # stopped within it were never counted in the log.
    caplog.set_level(logging.INFO, logger="agora")
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    wrong = {"authorization": f"Bearer {WRONG}"}
    async with serve(principals=principals, allow_anonymous=False) as server:
        with trio.fail_after(TIMEOUT):
            for _ in range(3):
                assert await _status(server.port, "POST", "/mcp/chess", wrong) == 401
            await trio.sleep(130)  # a minute with the repeats, one without
            said = _refused(caplog)
            assert await _status(server.port, "POST", "/mcp/chess", wrong) == 401
        again = _refused(caplog)[len(said) :]
    cause = "refused 401 unknown bearer token: "
    assert [(level, text.partition("from")[0]) for level, text in said] == [
        ("WARNING", cause),
        ("INFO", cause + "2 more in 60 s, the latest "),
    ], said
    # A minute passed without this cause: it begins anew.
    assert [(level, text.partition("from")[0]) for level, text in again] == [("WARNING", cause)], (
        again
    )


async def test_each_count_is_said_as_its_own_minute_ends(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora")
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    wrong = {"authorization": f"Bearer {WRONG}"}
    async with serve(principals=principals, allow_anonymous=False) as server:
        with trio.fail_after(TIMEOUT):
            assert await _status(server.port, "POST", "/mcp/chess", {}) == 401
            await trio.sleep(10)
            for _ in range(2):  # a count due at 70 s
                assert await _status(server.port, "POST", "/mcp/chess", wrong) == 401
            await trio.sleep(10)
            assert await _status(server.port, "POST", "/mcp/chess", {}) == 401  # due at 60 s
            await trio.sleep(80)
            said = _refused(caplog)
    assert [(level, text.partition("from")[0]) for level, text in said] == [
        ("WARNING", "refused 401 no bearer token: "),
        ("WARNING", "refused 401 unknown bearer token: "),
        ("INFO", "refused 401 no bearer token: 1 more in 60 s, the latest "),
        ("INFO", "refused 401 unknown bearer token: 1 more in 60 s, the latest "),
    ], said


async def test_counts_not_said_yet_are_said_when_the_server_stops(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora")
    principals = [PrincipalConfig("ops", TOKEN_SHA256, ["operator"])]
    async with serve(principals=principals, allow_anonymous=False) as server:
        with trio.fail_after(TIMEOUT):
            for _ in range(3):
                assert await _status(server.port, "POST", "/mcp/chess", {}) == 401
            await trio.sleep(10)
            assert len(_refused(caplog)) == 1
    said = _refused(caplog)
    cause = "refused 401 no bearer token: "
    assert [level for level, _ in said] == ["WARNING", "INFO"], said
    assert said[0][1].startswith(cause), said
    count = cause + r"2 more in \d+ s, the latest from 127\.0\.0\.1:\d+ for /mcp/chess"
    assert re.fullmatch(count, said[1][1]), said


def _refused(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """The level and text of each refusal line logged so far."""
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    return [(level, text) for level, text in said if text.startswith("refused")]
