"""The official ``mcp`` SDK as the client: Streamable HTTP in both eras, and stdio.

Each client lists the chess tools and calls ``get_board``; the structured result must validate
against the outputSchema that tools/list published.
"""

from __future__ import annotations

import pytest
import trio
from e2e_config import TOKEN, write_config
from e2e_mcp import CHESS_TOOLS, check_structured
from e2e_process import AGORA, clean_env

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30


async def list_and_call(client: mcp.Client) -> None:
    """tools/list shows the chess tools; get_board's result matches its outputSchema."""
    listed = await client.list_tools()
    tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}
    assert set(tools) == CHESS_TOOLS
    result = await client.call_tool("get_board", {})
    check_structured(tools["get_board"], result.model_dump(by_alias=True, exclude_none=True))
    assert result.structured_content["table"] == "default"


@pytest.mark.parametrize(
    ("mode", "version"),
    [
        pytest.param("auto", "2026-07-28", id="auto-negotiates-2026-07-28"),
        pytest.param("2026-07-28", "2026-07-28", id="pinned-2026-07-28"),
        pytest.param("legacy", "2025-11-25", id="handshake"),
    ],
)
async def test_the_sdk_over_streamable_http(agora, mode, version):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(
            f"{agora.url}/mcp/chess", mode=mode, read_timeout_seconds=TIMEOUT
        ) as client:
            assert client.protocol_version == version
            await list_and_call(client)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_over_streamable_http_with_a_bearer_token(agora, mode):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with trio.fail_after(TIMEOUT):
        async with create_mcp_http_client(headers=headers) as http_client:
            transport = streamable_http_client(f"{agora.url}/mcp/chess", http_client=http_client)
            async with mcp.Client(transport, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                await list_and_call(client)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_over_stdio(tmp_path, mode):
    config = write_config(tmp_path)
    env = clean_env(AGORA_TOKEN=TOKEN)
    params = StdioServerParameters(
        command=AGORA,
        args=["stdio", "--toolset", "chess", "--db", str(tmp_path / "stdio.db"), "--config",
              str(config)],
        env=env,
    )  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(params, mode=mode, read_timeout_seconds=TIMEOUT) as client:
            await list_and_call(client)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_router_tells_a_model_what_no_host_supplies(start_agora, mode):
    """A model outside Codex learns from the endpoint itself to fill ``context`` and to send 0
    on its first plan_work; at ``/mcp`` the router's instructions come under its name."""
    agora = start_agora("", "--toolsets", "router,chess")
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(
            f"{agora.url}/mcp/router", mode=mode, read_timeout_seconds=TIMEOUT
        ) as client:
            told = client.instructions
        async with mcp.Client(f"{agora.url}/mcp", mode=mode, read_timeout_seconds=TIMEOUT) as c:
            everything = c.instructions
    assert told is not None
    assert "fill it yourself" in told
    assert "expected_state_version 0" in told
    assert everything is not None
    assert f"router: {told}" in everything


async def test_the_chamber_tells_a_model_which_calls_cost_an_action(start_agora):
    """Only the tools' use reveals that observe_chamber is free and chamber_action is not,
    and that look (a paid action) is where the locks' formats are: the endpoint says so."""
    agora = start_agora("", "--toolsets", "chamber,router")
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(f"{agora.url}/mcp/chamber", read_timeout_seconds=TIMEOUT) as client:
            told = client.instructions
        async with mcp.Client(f"{agora.url}/mcp", read_timeout_seconds=TIMEOUT) as c:
            everything = c.instructions
    assert told is not None
    assert "observe_chamber is free" in told
    assert "Each chamber_action spends one of the attempt's actions" in told
    assert "printed on the public card" in told
    assert everything is not None
    assert f"chamber: {told}" in everything
    assert "router: " in everything


async def test_the_debate_endpoint_tells_a_model_its_first_call_and_who_needs_a_token(
    start_agora,
):
    """/mcp/debate sent no instructions: a model learnt neither how a topic and its sessions
    are opened nor that the blind roles and a judge each need a token of their own."""
    agora = start_agora("", "--toolsets", "debate,chess")
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(f"{agora.url}/mcp/debate", read_timeout_seconds=TIMEOUT) as client:
            told = client.instructions
            names = {tool.name for tool in (await client.list_tools()).tools}
        async with mcp.Client(f"{agora.url}/mcp", read_timeout_seconds=TIMEOUT) as c:
            everything = c.instructions
    assert told is not None
    assert "To open a topic, call debate_init" in told
    assert "open a session with debate_session_open, then debate_bind_role" in told
    assert "blind roles of a debate/v1 topic, and a judge, each need a token of their own" in told
    named = {word.strip(",.:;()") for word in told.split() if word.startswith("debate_")}
    assert named <= names, named - names  # every tool it names is served
    assert everything is not None
    assert f"debate: {told}" in everything
