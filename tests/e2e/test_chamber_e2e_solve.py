"""End to end: real agents solve chamber rooms on ``agora serve``, and the cards they earn.

One server (chamber only, a temp SQLite file, no signing key) serves the module. The official
``mcp`` SDK over Streamable HTTP and agora's WebSocket client each solve one room of each
suite with the reference solver's reasoning, seal it, and find the card at ``/cards/<id>``;
``agora cards verify`` finds it unsigned. A sealed failure is then listed by date, shown as
HTML, signed with ``agora cards sign`` (refused while the server holds the database, then run
with the server stopped), and verifies. Every structured result is validated against the
outputSchema from tools/list.
"""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from chamber_server import (
    CHAMBER_TOOLS,
    SUITES,
    ChamberServer,
    Play,
    Player,
    SdkPlayer,
    WsPlayer,
    agora_cli,
    enter,
    ok,
    refused,
    write_key,
)
from e2e_http import http

from agora.client import connect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChamberServer]:
    """The module's chamber server (no signing key); stopped and checked at the end."""
    chamber = ChamberServer(tmp_path_factory.mktemp("chamber"))
    chamber.start()
    yield chamber
    assert chamber.process is not None
    chamber.process.assert_clean_exit(chamber.process.stop())


@asynccontextmanager
async def open_player(transport: str, url: str) -> AsyncIterator[Player]:
    """A connected, tools-listed player over ``transport``: sdk-auto, sdk-legacy or websocket."""
    player: SdkPlayer | WsPlayer
    if transport == "websocket":
        async with connect(url) as client:
            player = WsPlayer(client)
            assert await player.list_tools() == CHAMBER_TOOLS
            yield player
    else:
        mode = transport.removeprefix("sdk-")
        async with mcp.Client(url, read_timeout_seconds=30, mode=mode) as client:
            player = SdkPlayer(client)
            assert await player.list_tools() == CHAMBER_TOOLS
            yield player


async def get_card(server: ChamberServer, card_id: str, accept: str = "*/*") -> Any:
    """``GET /cards/<card_id>``; asserts 200."""
    reply = await http(server.port, "GET", f"/cards/{card_id}", headers={"accept": accept})
    assert reply.status == 200, reply
    return reply


async def seal(player: Player, handle: str, **extra: Any) -> dict[str, Any]:
    """``seal_attempt``; checks the fields every seal reply carries."""
    sealed = await ok(player, "seal_attempt", {"challenge_handle": handle, **extra})
    assert sealed["attempt_handle"] == handle
    # A URL an agent can open: the server's own address, not a bare path.
    assert re.fullmatch(rf"http://127\.0\.0\.1:\d+/cards/{sealed['card_id']}", sealed["card_url"])
    assert sealed["card"]["card_id"] == sealed["card_id"]
    return sealed


@pytest.mark.parametrize(
    ("transport", "suite", "seed"),
    [
        pytest.param("sdk-auto", SUITES[0], "e2e-sdk-1", id="sdk-stateless-chrono"),
        pytest.param("sdk-legacy", SUITES[1], "e2e-sdk-2", id="sdk-handshake-atelier"),
        pytest.param("websocket", SUITES[0], "e2e-ws-3", id="websocket-chrono"),
        pytest.param("websocket", SUITES[1], "e2e-ws-4", id="websocket-atelier"),
    ],
)
async def test_an_agent_solves_a_room_and_its_card_is_published(
    server: ChamberServer, tmp_path: Path, transport: str, suite: str, seed: str
) -> None:
    with trio.fail_after(30):
        async with open_player(transport, server.mcp_url) as player:
            entered = await enter(player, suite, seed)
            handle = entered["attempt_handle"]
            first = entered["objects"][0]
            seen = await ok(
                player, "observe_chamber", {"challenge_handle": handle, "object": first}
            )
            assert (seen["object"], seen["action_index"]) == (first, 0)  # observing is free
            stale = await refused(
                player,
                "chamber_action",
                {"challenge_handle": handle, "op": "look", "expected_action_index": 3},
            )
            assert stale["code"] == "stale_action_index"
            assert (stale["retryable"], stale["current_action_index"]) == (True, 0)

            play = Play(player, handle)
            last = await play.run()
            assert last["terminal"], last
            assert last["must_seal"], last
            assert last["locks_open"] == last["locks_total"] == play.opened
            assert last["attempt_state"] == "terminal_unsealed"
            assert last["allowed_next_tools"] == ["seal_attempt"]

            sealed = await seal(player, handle)
            again = await seal(player, handle)
            validated = player.validated

    assert (sealed["outcome"], sealed["evidence_status"]) == ("solved", "pending_signature")
    assert sealed["attempt_state"] == "pending_signature"
    assert sealed["already_sealed"] is False
    assert again["already_sealed"] is True
    assert again["card"] == sealed["card"]
    assert validated == play.index + 5  # enter, observe, stale, the actions, two seals

    card = sealed["card"]
    assert card["outcome"] == "solved"
    assert card["suite"]["id"] == suite
    assert card["actions_used"] == card["transcript_length"] == play.index
    assert (card["hints_used"], card["wrong_submissions"]) == (0, 0)
    assert card["locks"] == {"opened": play.opened, "total": play.opened}
    assert card["identity"]["assurance"] == "participant_claimed"
    assert seed not in json.dumps(card)  # a commitment, never the seed itself

    with trio.fail_after(30):
        reply = await get_card(server, sealed["card_id"], "application/json")
        assert reply.headers["content-type"].startswith("application/json")
        document = reply.json()
        assert document["card"] == card
        assert (document["evidence_status"], document["signature"]) == ("pending_signature", None)
        saved = tmp_path / "card.json"
        saved.write_bytes(reply.body)
        status, out = await agora_cli("cards", "verify", str(saved))
    assert status == 1, out  # the hash holds, but an unsigned card does not verify
    assert "hash: ok" in out
    assert "NOT signed (pending_signature)" in out


@pytest.mark.sqlite_only("agora cards sign works on a SQLite file only")
async def test_a_failure_is_listed_shown_and_signed_by_the_operator(
    server: ChamberServer, tmp_path: Path
) -> None:
    # A hang guard for the whole story: seven agora processes (sign twice, verify thrice and
    # the server's restart) of a second or more each on a busy machine.
    with trio.fail_after(90):
        async with open_player("websocket", server.mcp_url) as player:
            entered = await enter(player, SUITES[1], "e2e-give-up")
            handle = entered["attempt_handle"]
            await ok(player, "chamber_action", {"challenge_handle": handle, "op": "look"})
            sealed = await seal(player, handle, next_candidate="better-agent")
        card_id, date = sealed["card_id"], sealed["card"]["date"]
        assert sealed["outcome"] == "failed"
        assert sealed["card"]["next_candidate"] == "better-agent"

        before = await get_card(server, card_id)
        listing = await http(server.port, "GET", f"/cards?date={date}")
        assert listing.status == 200
        listed = {c["card_id"]: c for c in listing.json()["cards"]}
        assert listed[card_id]["outcome"] == "failed"
        assert listed[card_id]["evidence_status"] == "pending_signature"
        assert listed[card_id]["sealed_at"] == sealed["card"]["sealed_at"]

        page = await get_card(server, card_id, "text/html")
        assert page.headers["content-type"].startswith("text/html")
        assert "script-src" not in page.headers["content-security-policy"]
        text = page.body.decode()
        assert card_id in text
        assert "pending_signature" in text
        missing = await http(server.port, "GET", "/cards/card-20000101-0000000000000000")
        assert missing.status == 404

        # One process per database: signing is refused while the server holds the file, so
        # the operator stops the server, signs offline, and starts it again.
        key, public = write_key(tmp_path / "operator.pem")
        status, out = await agora_cli("cards", "sign", "--db", str(server.db), "--key", str(key))
        assert status == 2, out
        assert f"database {server.db} is in use by another agora process" in out
        await server.stop()
        status, out = await agora_cli("cards", "sign", "--db", str(server.db), "--key", str(key))
        assert status == 0, out
        assert card_id in out
        server.start()

        after = await get_card(server, card_id)
        document = after.json()
        assert document["evidence_status"] == "signed"
        assert document["signature"]["public_key"] == public
        assert document["card"] == before.json()["card"]
        assert document["card_sha256"] == before.json()["card_sha256"]
        saved = tmp_path / "signed.json"
        saved.write_bytes(after.body)
        key_id = document["signature"]["key_id"]
        # A valid signature alone proves nothing: the reader must trust the key.
        status, out = await agora_cli("cards", "verify", str(saved))
        assert status == 1, out
        assert out.splitlines()[:2] == [
            f"card {card_id} (scoreia-chamber-tools/0.3.0)",
            "  hash: ok",
        ]
        assert out.splitlines()[2].startswith(f"  valid signature, key NOT trusted ({key_id})")
        status, out = await agora_cli("cards", "verify", str(saved), "--trust", public)
        assert status == 0, out
        assert f"  valid signature, trusted key {key_id} via --trust" in out.splitlines()
        assert out.splitlines()[-1] == "VERDICT: genuine, a practice card"  # a chosen seed
        other = "0" * 64  # a public key, not the one that signed
        status, out = await agora_cli("cards", "verify", str(saved), "--trust", other)
        assert status == 1
        assert "key NOT trusted" in out
        # The server publishes the keys that signed its cards at a fixed URL.
        keys = await http(server.port, "GET", "/chamber/keys")
        assert keys.status == 200
        assert {k["key_id"]: k["public_key"] for k in keys.json()["keys"]} == {key_id: public}
        keys_url = f"http://127.0.0.1:{server.port}/chamber/keys"
        status, out = await agora_cli("cards", "verify", str(saved), "--keys-url", keys_url)
        assert status == 0, out
        assert (
            f"  valid signature, trusted key {key_id} via --keys-url {keys_url}" in out.splitlines()
        )
        assert out.splitlines()[-1] == "VERDICT: genuine, a practice card"  # a chosen seed

        forged = dict(document, card={**document["card"], "outcome": "solved"})
        (tmp_path / "forged.json").write_text(json.dumps(forged))
        status, out = await agora_cli("cards", "verify", str(tmp_path / "forged.json"))
        assert status == 1
        assert "hash: MISMATCH" in out
        assert "INVALID signature" in out

        listing = await http(server.port, "GET", f"/cards?date={date}")
        listed = {c["card_id"]: c for c in listing.json()["cards"]}
        assert listed[card_id]["evidence_status"] == "signed"
        async with open_player("sdk-auto", server.mcp_url) as player:
            again = await seal(player, handle)
    assert again["already_sealed"] is True
    assert (again["attempt_state"], again["evidence_status"]) == ("sealed", "signed")
