"""A path that names no MCP endpoint is refused naming the endpoints there are.

A tester's finding: ``server.client("/mcp/nothere")`` said only "no MCP endpoint at
/mcp/nothere", and ``agora stdio --endpoint /mcp/nothere`` only that it "is not an MCP
endpoint of this server", where agora's other refusals name the closest choice. Both (and
``serve_stdio``, an embedding program's stdio) now list the endpoints and, when one is a
letter or two off, suggest it.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import trio

from agora.cli import main
from agora.config import Config
from agora.server.embed import open_server
from agora.server.stdio_host import serve_stdio
from agora.toolsets.base import ToolCall, Toolset

TOOL = {"name": "greet", "description": "Greets.", "inputSchema": {"type": "object"}}


async def _greet(call: ToolCall) -> dict[str, Any]:
    return {"hello": "world"}


def _greeter() -> Toolset:
    return Toolset("greeter", {"greet": _greet}, contract=None, tools=[TOOL])


@pytest.mark.parametrize(
    ("path", "suggested"),
    [
        pytest.param("/mcp/nothere", None, id="far"),
        pytest.param("/mcp/greter", "/mcp/greeter", id="misspelt"),
        pytest.param("/greeter", "/mcp/greeter", id="without-mcp"),
        pytest.param("/mcp/greeter/x", "/mcp/greeter", id="too-deep"),
    ],
)
async def test_the_in_process_client_and_serve_stdio_name_the_endpoints(path, suggested):
    with trio.fail_after(20):
        async with open_server(
            Config(db=":memory:", toolsets=["chess"]), toolsets=[_greeter()], listen=False
        ) as server:
            with pytest.raises(ValueError, match="is not an MCP endpoint") as by_client:
                async with server.client(path):
                    pass  # pragma: no cover - refused before
            with pytest.raises(ValueError, match="is not an MCP endpoint") as by_stdio:
                await serve_stdio(server, path)
    for said in (str(by_client.value), str(by_stdio.value)):
        assert said.startswith(f"{path} is not an MCP endpoint of this server"), said
        # the toolsets served (`toolsets=` replaces Config.toolsets)
        assert said.endswith(" (its endpoints: /mcp, /mcp/greeter)"), said
        assert (f"; did you mean {suggested}?" in said) if suggested else ("did you" not in said)


@pytest.mark.parametrize(
    ("endpoint", "said"),
    [
        pytest.param(
            "/mcp/nothere",
            "agora: /mcp/nothere is not an MCP endpoint of this server (its endpoints: /mcp,"
            " /mcp/chamber, /mcp/chess, /mcp/chess/<table>, /mcp/router, /mcp/debate)",
            id="far",
        ),
        pytest.param(
            "/mcp/chesss?token=secret",
            "agora: /mcp/chesss?… is not an MCP endpoint of this server; did you mean"
            " /mcp/chess? (its endpoints: /mcp, /mcp/chamber, /mcp/chess, /mcp/chess/<table>,"
            " /mcp/router, /mcp/debate)",
            id="misspelt-with-a-token",
        ),
    ],
)
def test_agora_stdio_names_the_endpoints(tmp_path, capsys, endpoint, said):
    assert main(["stdio", "--db", str(tmp_path / "a.db"), "--endpoint", endpoint]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == said, err


@pytest.mark.parametrize(
    ("endpoint", "said"),
    [
        pytest.param(
            "/mcp/ches/default?token=SECRET",
            "--endpoint /mcp/ches/default?… is not an endpoint of chess; did you mean"
            " /mcp/chess/default?…? (chess serves /mcp/chess and /mcp/chess/<table>)",
            id="misspelt",
        ),
        pytest.param(
            "/mcp",
            "--endpoint /mcp is not an endpoint of chess (chess serves /mcp/chess and"
            " /mcp/chess/<table>)",
            id="all-toolsets",
        ),
        pytest.param(
            "/mcp/chess/default/token=SECRET",
            "--endpoint /mcp/chess/default/… is not an endpoint of chess (chess serves"
            " /mcp/chess and /mcp/chess/<table>)",
            id="slash-for-question-mark",
        ),
        pytest.param(
            "/mcp/chess/default&token=SECRET",
            "/mcp/chess/… names no table: a table's name is 1 to 40 lower-case letters, digits,"
            " _ or -, starting with a letter or a digit (a token goes in the query:"
            " /mcp/chess/<table>?token=…)",
            id="ampersand-for-question-mark",
        ),
        pytest.param(
            "/mcp/chess/yROM6SD0w6GKp2Mq33iAAxxgSECRETp",
            "/mcp/chess/… names no table: a table's name is 1 to 40 lower-case letters, digits,"
            " _ or -, starting with a letter or a digit (a token goes in the query:"
            " /mcp/chess/<table>?token=…)",
            id="the-token-for-the-table",
        ),
        pytest.param(
            "127.0.0.1:8765/mcp/chess/default?token=SECRET",
            "--endpoint takes an endpoint's path, such as /mcp/chess/default?token=…, and was"
            " given no path (a path starts with /): to reach a running server at its address,"
            " use --connect URL; to serve this machine's database, give the path alone",
            id="host-and-port",
        ),
        pytest.param(
            "http://127.0.0.1:8765/mcp/chess/default?token=SECRET",
            "--endpoint takes an endpoint's path, such as /mcp/chess/default?token=…, and was"
            " given a URL: to reach a running server at its address, use --connect URL; to"
            " serve this machine's database, give the path alone",
            id="the-url-agora-serve-printed",
        ),
    ],
)
def test_agora_stdio_toolset_refuses_a_wrong_endpoint_never_showing_its_token(
    tmp_path, capsys, endpoint, said
):
    # README's form for a stdio chess agent, with the typos people make in it: the seat
    # token must never reach stderr (a client such as Claude Code keeps it in its log).
    args = ["stdio", "--db", str(tmp_path / "a.db"), "--toolset", "chess"]
    assert main([*args, "--endpoint", endpoint]) == 2
    err = capsys.readouterr().err
    assert "SECRET" not in err
    assert err.splitlines()[-1] == f"agora: {said}"


@pytest.mark.parametrize(
    "url",
    [
        "/mcp/chess/default?token=SECRET",
        "127.0.0.1:8765/mcp/chess/default?token=SECRET",
    ],
    ids=["a-path", "no-scheme"],
)
def test_agora_stdio_connect_to_no_url_never_shows_the_token(url):
    # A process of its own: the bridge reads a real stdin.
    done = subprocess.run(
        [sys.executable, "-m", "agora", "stdio", "--connect", url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    err = done.stderr
    assert "SECRET" not in err
    assert "not a WebSocket or HTTP URL" in err
    assert "such as ws://HOST:PORT/mcp/chess/default?token=…" in err
