"""The chamber over ``agora stdio --db`` with the official ``mcp`` SDK: a seal's ``card_url``.

Tester finding: under ``agora stdio --db`` a configured ``public_url`` was ignored and the
seal answered a bare path (``/cards/<id>``), which ``agora cards verify`` could not open,
while the same seal over the relay answered the URL under ``public_url``. A configured one
now prefixes the card's URL here too; without one the path is all there is, since this
process serves no page (README: nothing is public until ``agora serve`` serves the file).
"""

from __future__ import annotations

import pytest
import trio
from e2e_process import AGORA, clean_env

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.stdio import StdioServerParameters  # noqa: E402

TIMEOUT = 60
ENTRY = {
    "provider_claim": "unknown",
    "model_claim": "unknown",
    "product": "e2e-agent",
    "host": "claude-code",
}


async def _card_url(tmp_path, public_url: str) -> tuple[str, str]:
    config = tmp_path / "agora.toml"
    line = f'public_url = "{public_url}"\n' if public_url else ""
    config.write_text(f"{line}[options.chamber]\nroom_pool_size = 0\n")
    args = [
        "stdio",
        "--config",
        str(config),
        "--toolset",
        "chamber",
        "--db",
        str(tmp_path / "c.db"),
    ]
    server = StdioServerParameters(command=AGORA, args=args, env=clean_env())
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(server, read_timeout_seconds=TIMEOUT) as client:
            entered = await client.call_tool("enter_open_challenge", ENTRY)
            assert not entered.is_error, entered.structured_content
            handle = entered.structured_content["attempt_handle"]
            sealed = await client.call_tool("seal_attempt", {"challenge_handle": handle})
            body = sealed.structured_content
            return body["card_url"], body["card_id"]


async def test_a_configured_public_url_prefixes_the_card_url_over_stdio(tmp_path):
    url, card_id = await _card_url(tmp_path, "https://cards.example.org/agora")
    assert url == f"https://cards.example.org/agora/cards/{card_id}"


async def test_without_public_url_the_card_url_is_its_path(tmp_path):
    url, card_id = await _card_url(tmp_path, "")
    assert url == f"/cards/{card_id}"
