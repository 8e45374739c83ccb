"""End to end: a card whose figures contradict each other counts nowhere, and says why.

Tester finding: with the server's file edited between entry and seal (``opened`` raised by
hand), the seal left the card unsigned, as it must, yet answered ``evidence_status:
"pending_signature"`` with no reason, the card ranked first on ``/board`` (a solved run in 0
actions), its page read "not signed yet (pending_signature)" as if a signature were only
waiting, and ``agora cards sign`` exited 0. Now the seal answers ``evidence_status:
"contradictory"``, ``attempt_state: "quarantined"`` and a ``note`` naming the contradictions
(validated against the outputSchema tools/list published, through the official ``mcp`` SDK);
the board, its row's cards and its figures leave the card out; its document's
``evidence_status`` and its page say it will never be signed and why; and ``agora cards
sign`` names it and exits 1.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest
import trio
from chamber_server import (
    CHAMBER_TOOLS,
    ENTRY,
    ChamberServer,
    SdkPlayer,
    agora_cli,
    ok,
    refused,
    write_key,
)
from e2e_http import http

if TYPE_CHECKING:
    from pathlib import Path

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")
pytestmark = pytest.mark.sqlite_only("the participant edits the SQLite file agora stdio --db uses")

#: What the participant writes into the file: more locks than any room has.
FORGED_OPENED = 9
SUITE = "chambre-chrono-v0"


async def _player_calls(server: ChamberServer, calls):  # type: ignore[no-untyped-def]
    async with mcp.Client(server.mcp_url, read_timeout_seconds=30) as client:
        player = SdkPlayer(client)
        assert await player.list_tools() == CHAMBER_TOOLS
        return await calls(player)


async def test_a_contradictory_card_never_counts_and_every_reader_is_told_why(
    tmp_path: Path,
) -> None:
    key, _ = write_key(tmp_path / "card.key")
    server = ChamberServer(tmp_path, signing_key=key)

    async def play_and_enter(player: SdkPlayer) -> tuple[dict[str, object], str]:
        honest = (await ok(player, "enter_open_challenge", ENTRY))["attempt_handle"]
        await ok(player, "chamber_action", {"challenge_handle": honest, "op": "look"})
        fair = await ok(player, "seal_attempt", {"challenge_handle": honest})
        forged = (await ok(player, "enter_open_challenge", ENTRY))["attempt_handle"]
        return fair, forged

    server.start()
    try:
        with trio.fail_after(60):
            fair, forged = await _player_calls(server, play_and_enter)
            await server.stop()
    finally:
        server.ensure_stopped()
    assert (fair["outcome"], fair["evidence_status"]) == ("failed", "signed")

    # The participant (who runs this process and holds its file) edits the attempt's row.
    conn = sqlite3.connect(server.db)
    with conn:
        conn.execute(
            "UPDATE chamber_attempts SET opened = ? WHERE handle = ?", (FORGED_OPENED, forged)
        )
    conn.close()

    async def seal_twice(player: SdkPlayer) -> tuple[dict[str, object], ...]:
        args = {"challenge_handle": forged}
        first = await ok(player, "seal_attempt", args)
        again = await ok(player, "seal_attempt", args)
        late = await refused(player, "chamber_action", {**args, "op": "look"})
        return first, again, late

    server.start()
    try:
        with trio.fail_after(60):
            sealed, again, late = await _player_calls(server, seal_twice)
            card_id = str(sealed["card_id"])
            total = sealed["card"]["locks"]["total"]  # type: ignore[index]
            fault = f"{FORGED_OPENED} locks opened of a room that has {total}"
            for reply in (sealed, again):
                assert reply["evidence_status"] == "contradictory", reply
                assert reply["attempt_state"] == "quarantined", reply
                note = str(reply["note"])
                assert note.startswith("This card will never be signed, and the board does not")
                assert fault in note, note
            assert again["already_sealed"] is True
            assert (late["code"], late["attempt_state"]) == (
                "attempt_already_sealed",
                "quarantined",
            )

            board = (await http(server.port, "GET", f"/board?suite={SUITE}")).json()
            [row] = board["suites"][SUITE]
            assert (row["attempts"], row["solved"], row["median_actions"]) == (1, 0, None), row
            cards = (await http(server.port, "GET", row["cards"])).json()["cards"]
            assert [c["card_id"] for c in cards] == [fair["card_id"]]

            document = (await http(server.port, "GET", f"/cards/{card_id}")).json()
            assert (document["evidence_status"], document["signature"]) == ("contradictory", None)
            day = str(sealed["card"]["date"])  # type: ignore[index]
            listing = (await http(server.port, "GET", f"/cards?date={day}")).json()["cards"]
            statuses = {c["card_id"]: c["evidence_status"] for c in listing}
            assert statuses == {fair["card_id"]: "signed", card_id: "contradictory"}
            page = await http(
                server.port, "GET", f"/cards/{card_id}", headers={"accept": "text/html"}
            )
            text = page.body.decode()
            assert "not signed yet" not in text
            assert "<strong>never to be signed</strong>: its figures contradict each other" in text
            assert "<strong>Contradictory card</strong>" in text
            assert f"<li><bdi>{fault}</bdi></li>" in text
            assert "The board does not count it" in text
            await server.stop()
    finally:
        server.ensure_stopped()

    status, out = await agora_cli("cards", "sign", "--db", str(server.db), "--key", str(key))
    assert status == 1, out
    assert "signed 0 card(s)" in out
    assert (
        f"left unsigned for good (contradictory), its figures contradict each other: {card_id}: "
        in out
    )
    assert "1 card(s) will never be signed" in out
