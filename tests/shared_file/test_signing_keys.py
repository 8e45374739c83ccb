"""Nodes on one database with different card-signing keys: the node started second warns.

An operator's finding: nodes started on one database with different ``signing_key`` files
were not warned, and cards signed on one node then carried another key id than those of the
next. Two servers share one SQLite file here (as nodes share PostgreSQL): the first signs a
card with its key, then a second starts with another key and logs one WARNING naming both;
one started with the same key names it in an INFO line. Real files, real clock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.chamber import store
from agora.toolsets.chamber.signing import load_signer

if TYPE_CHECKING:
    from pathlib import Path

    from agora.runtime.registry import Runtime

pytestmark = pytest.mark.sqlite_only("a SQLite file shared by two servers")


def _config(db: Path, key: Path) -> Config:
    options: dict[str, dict[str, Any]] = {"chamber": {"signing_key": str(key)}}
    return Config(db=str(db), shared=True, toolsets=["chamber"], options=options)


async def _checked(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Once a server's start-up key check has said its line: that line (the log cleared)."""
    while not (said := _said(caplog)):  # noqa: ASYNC110
        await trio.sleep(0.01)  # the check is a background task: no event tells its end
    caplog.clear()
    return said


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "signs cards with key" in r.getMessage()]


@pytest.mark.parametrize("same", [False, True], ids=["other-key", "same-key"])
async def test_a_node_signing_with_another_key_than_the_others_warns(tmp_path, caplog, same):
    first, second = tmp_path / "first.key", tmp_path / "second.key"
    first.write_text("42" * 32)
    second.write_text(("42" if same else "17") * 32)
    mine, theirs = load_signer(str(first)).key_id, load_signer(str(second)).key_id
    db = tmp_path / "agora.db"
    caplog.set_level(logging.INFO, logger="agora.toolsets.chamber")
    with trio.fail_after(30):
        async with open_server(_config(db, first), listen=False) as server:
            assert await _checked(caplog) == [f"chamber: this node signs cards with key {mine}"]
            today = await _signed_card(server.runtime, mine)
            async with open_server(_config(db, second), listen=False):  # beside it
                said = await _checked(caplog)
    if same:
        assert said == [f"chamber: this node signs cards with key {mine}"]
    else:
        assert said == [
            f"chamber: this node signs cards with key {theirs}, but cards sealed through this"
            f" database since {_yesterday(today)} were signed with {mine}: give every node"
            " sharing the database the same signing_key, or each card's key id depends on"
            " the node that sealed it"
        ]


async def _signed_card(runtime: Runtime, key_id: str) -> str:
    """A card sealed today through ``runtime`` and signed with ``key_id``; today's date."""
    today = f"{runtime.clock.wall():%Y-%m-%d}"
    await runtime.write([store.import_legacy("card-1", today, b"{}", "chamber")])
    await runtime.write([(
        "UPDATE chamber_cards SET key_id = ? WHERE card_id = ?", (key_id, "card-1")
    )])  # fmt: skip
    return today


def _yesterday(today: str) -> str:
    import datetime as dt

    return f"{dt.date.fromisoformat(today) - dt.timedelta(days=1):%Y-%m-%d}"


async def test_a_node_without_a_key_beside_signing_nodes_warns(tmp_path, caplog):
    # An operator left the key out of one node's config: it joined the signing nodes
    # without a word and sealed every card of its own pending_signature.
    key = tmp_path / "first.key"
    key.write_text("42" * 32)
    mine = load_signer(str(key)).key_id
    db = tmp_path / "agora.db"
    caplog.set_level(logging.INFO, logger="agora.toolsets.chamber")
    with trio.fail_after(30):
        async with open_server(_config(db, key), listen=False) as server:
            await _checked(caplog)
            today = await _signed_card(server.runtime, mine)
            keyless = Config(db=str(db), shared=True, toolsets=["chamber"])
            async with open_server(keyless, listen=False):
                while not (said := _keyless(caplog)):  # noqa: ASYNC110
                    await trio.sleep(0.01)  # (a background task: no event tells its end)
    assert said == [
        f"chamber: this node has no signing_key, but cards sealed through this database"
        f" since {_yesterday(today)} were signed with {mine}: the cards this node seals stay"
        " pending_signature; give every node sharing the database the same signing_key"
    ]


def _keyless(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "has no signing_key" in r.getMessage()]
