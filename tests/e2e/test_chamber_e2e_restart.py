"""End to end: an attempt survives a server restart and is sealed, signed, by the next server.

The agent (agora's WebSocket client) opens the first lock of a room with the reference
solver, then the server is stopped with SIGTERM (a clean exit is required). A new server on
the same SQLite file, now with a signing key configured, carries on: the transcript length
and the open locks are as committed, a stale ``expected_action_index`` is refused, and the
same handle is solved and sealed with a signed card that ``agora cards verify --trust``
accepts, whose transcript hash chains every action made on either server. Every structured
result is validated against the outputSchema from tools/list.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import pytest
import rfc8785
import trio
from chamber_server import (
    CHAMBER_TOOLS,
    SUITES,
    ChamberServer,
    Paused,
    Play,
    WsPlayer,
    agora_cli,
    enter,
    ok,
    refused,
    write_key,
)
from e2e_http import http

from agora.client import connect
from agora.toolsets.chamber.transcript import genesis

if TYPE_CHECKING:
    from pathlib import Path


async def test_an_attempt_continues_across_a_restart_and_seals_signed(tmp_path: Path) -> None:
    server = ChamberServer(tmp_path)
    key, public = write_key(tmp_path / "card.key", hex_seed=True)
    server.start()
    try:
        with trio.fail_after(30):
            async with connect(server.mcp_url) as client:
                player = WsPlayer(client)
                assert await player.list_tools() == CHAMBER_TOOLS
                entered = await enter(player, SUITES[0], "e2e-restart")
                handle = entered["attempt_handle"]
                first = Play(player, handle, pause_after=1)
                with pytest.raises(Paused):
                    await first.run()
                assert first.opened == 1
            await server.stop()
    finally:
        server.ensure_stopped()

    server.set_signing_key(key)
    server.start()
    try:
        with trio.fail_after(30):
            async with connect(server.mcp_url) as client:
                player = WsPlayer(client)
                assert await player.list_tools() == CHAMBER_TOOLS
                stale = await refused(
                    player,
                    "chamber_action",
                    {"challenge_handle": handle, "op": "look", "expected_action_index": 0},
                )
                assert stale["code"] == "stale_action_index"
                assert stale["current_action_index"] == first.index
                objects = entered["objects"]
                seen = await ok(
                    player, "observe_chamber", {"challenge_handle": handle, "object": objects[0]}
                )
                assert (seen["action_index"], seen["locks_open"]) == (first.index, 1)
                assert seen["attempt_state"] == "active"

                # The agent resumes with its notes from before the restart.
                rest = Play(player, handle, index=first.index, opened=1, facts=first.facts)
                last = await rest.run()
                assert last["terminal"]
                assert last["locks_open"] == last["locks_total"]
                sealed = await ok(
                    player,
                    "seal_attempt",
                    {"challenge_handle": handle, "include_export_bundle": True},
                )
            card_id, card = sealed["card_id"], sealed["card"]
            assert (sealed["outcome"], sealed["evidence_status"]) == ("solved", "signed")
            assert sealed["attempt_state"] == "sealed"
            assert card["actions_used"] == card["transcript_length"] == rest.index > first.index
            # The hash chain runs unbroken over the actions of both servers.
            records = sealed["export_bundle"]["transcript"]
            assert [r["i"] for r in records] == list(range(rest.index))
            head = genesis(card["seed_commitment"])
            for record in records:
                head = hashlib.sha256(bytes.fromhex(head) + rfc8785.dumps(record)).hexdigest()
            assert card["transcript_hash"] == f"sha256:{head}"

            reply = await http(server.port, "GET", f"/cards/{card_id}")
            assert reply.status == 200
            document = reply.json()
            assert document["card"] == card
            assert document["signature"]["public_key"] == public
            saved = tmp_path / "card.json"
            saved.write_bytes(reply.body)
            status, out = await agora_cli("cards", "verify", str(saved), "--trust", public)
            assert status == 0, out
            assert "valid signature, trusted key" in out
        await server.stop()
    finally:
        server.ensure_stopped()
