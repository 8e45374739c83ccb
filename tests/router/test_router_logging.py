"""What the router logs of a caller's values: escaped and cut, so no call forges a log line."""

from __future__ import annotations

import logging

import pytest
from router_driver import event_args, plan_args

from agora.errors import ProtocolError

# What passes the router's bounds (`agora.toolsets.router.bounds`: a control character or an
# identifier past 256 characters is refused before any handler runs, test_router_bounds):
# line and paragraph separators, a bidi override, the longest identifier.
HOSTILE = [
    pytest.param("INJECT\u2028ERROR agora.fake: forged log line", id="line-separator"),
    pytest.param("a\u2029b\u202ered\u202cc", id="separators"),
    pytest.param("x" * 256, id="longest"),
]


def _clean(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("agora.toolsets.router")]
    assert lines
    for line in lines:
        assert line.isprintable(), line  # no newline, CR, ESC, NEL, U+2028, bidi override
        assert len(line) < 600, len(line)
    return lines


@pytest.mark.parametrize("correlation", HOSTILE)
async def test_a_refusal_logs_the_correlation_id_escaped_and_cut(router, caplog, correlation):
    run = (await router.plan("1. design it\n2. build it"))["workflow_run_id"]
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    args = event_args(run, "nope", {"note": "x"}, 1)
    body = await router.refused("record_work_event", **{**args, "correlation_id": correlation})
    assert body["code"] == "unknown-phase"
    lines = _clean(caplog)
    assert any("refused: unknown-phase" in line for line in lines)
    if "INJECT" in correlation:
        assert any("INJECT\\u2028ERROR agora.fake" in line for line in lines)


@pytest.mark.parametrize("correlation", HOSTILE)
async def test_a_commit_logs_the_correlation_id_escaped_and_cut(router, caplog, correlation):
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    await router.call("plan_work", **plan_args("Fix it", correlation_id=correlation))
    assert any("-> version 1" in line for line in _clean(caplog))


class _Failing:
    def __init__(self):
        self.capabilities = {"roots": {}}

    async def request(self, method, params):
        raise ProtocolError(-32000, "no roots\nERROR agora.fake: forged \x1b[2J" + "y" * 9000)


async def test_a_client_error_from_roots_list_is_logged_escaped_and_cut(router, caplog):
    caplog.set_level(logging.DEBUG, logger="agora.toolsets.router")
    router.client = _Failing()
    routing = {"workspace_root": "/nowhere", "domains": [], "tags": [], "current_phase_id": None}
    await router.plan("Fix it", routing_context=routing)
    assert any("roots/list failed" in line for line in _clean(caplog))


def test_loggable_escapes_and_cuts():
    from agora.logsafe import MAX_LOGGED, loggable

    assert loggable("corr-abc") == "corr-abc"
    assert loggable("a\nb\\n\x1b\u2028\U000e0001") == "a\\nb\\\\n\\x1b\\u2028\\U000e0001"
    cut = loggable("z" * 50_000)
    assert cut == "z" * MAX_LOGGED + f"...[+{50_000 - MAX_LOGGED} chars]"
