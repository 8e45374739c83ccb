"""Toolset resources with subscriptions, over real WebSockets on loopback.

A small "notes" toolset: an entity whose command names the resource URI it changed in
`Effects.updated`, a tool that runs it, and a resource template that reads it. One client
subscribes, another writes; the subscriber is pushed ``notifications/resources/updated``
for exactly the URIs it watches, after the commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.client import McpError, connect
from agora.config import Config
from agora.runtime.entity import Effects
from agora.server.embed import open_server
from agora.store.migrations import Migration
from agora.store.neutral import POSTGRESQL
from agora.toolsets.base import ToolCall, Toolset, resource

if TYPE_CHECKING:
    import sqlite3

    from agora.runtime.clock import Now


NOTES = "CREATE TABLE notes (key TEXT PRIMARY KEY, text TEXT NOT NULL)"


def _create(db: Any) -> None:
    db.execute(NOTES)


@dataclass(frozen=True)
class Put:
    text: str


@dataclass(frozen=True)
class Read:
    pass


def note_uri(key: str) -> str:
    return f"notes://note/{key}"


@dataclass
class Note:
    key: str
    text: str | None

    def handle(self, command: Any, now: Now) -> Effects:
        if isinstance(command, Read):
            if self.text is None:
                return Effects(reply=LookupError(self.key))
            return Effects(reply={"key": self.key, "text": self.text})
        self.text = command.text
        write = (
            "INSERT INTO notes (key, text) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET text = excluded.text",
            (self.key, self.text),
        )
        return Effects(
            reply={"ok": True}, writes=[write], changed=True, updated=[note_uri(self.key)]
        )


class Notes:
    kind = "note"

    def load(self, conn: sqlite3.Connection, key: str, now: Now) -> Note:
        row = conn.execute("SELECT text FROM notes WHERE key = ?", (key,)).fetchone()
        return Note(key, None if row is None else row[0])


KIND = Notes()


async def put_note(call: ToolCall) -> dict[str, Any]:
    return await call.runtime.call(KIND, call.args["key"], Put(call.args["text"]))  # type: ignore[no-any-return]


async def read_note(call: ToolCall) -> Any:
    return await call.runtime.call(KIND, call.args["key"], Read())


def notes_toolset() -> Toolset:
    schema = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "text": {"type": "string"}},
        "required": ["key", "text"],
    }
    return Toolset(
        name="notes",
        handlers={"put_note": put_note},
        migrations=[Migration("notes", 1, _create, sql={POSTGRESQL: [NOTES]})],
        contract=None,
        tools=[{"name": "put_note", "description": "Write a note.", "inputSchema": schema}],
        resources=[resource("notes://note/{key}", "note", read_note, description="One note.")],
    )


@pytest.fixture
async def server():
    config = Config(db=":memory:", port=0)
    async with open_server(config, toolsets=[notes_toolset()]) as running:
        yield running


UPDATED = "notifications/resources/updated"


async def test_a_subscriber_is_pushed_the_changes_of_what_it_watches(server):
    url = server.url + "/mcp/notes"
    with trio.fail_after(20):
        async with connect(url, initialize=False) as watcher, connect(url) as writer:
            caps = (await watcher.request("initialize", _init()))["capabilities"]
            await watcher.notify("notifications/initialized")
            assert caps["resources"]["subscribe"] is True
            await watcher.request("resources/subscribe", {"uri": note_uri("a")})
            assert server.runtime.resources.subscribers(note_uri("a")) == 1

            await writer.call_tool("put_note", {"key": "a", "text": "first"})
            assert (await watcher.next_notification(UPDATED))["params"] == {"uri": note_uri("a")}

            # A change to another note is not pushed: the next one is for "a" again.
            await writer.call_tool("put_note", {"key": "b", "text": "other"})
            await writer.call_tool("put_note", {"key": "a", "text": "second"})
            assert (await watcher.next_notification(UPDATED))["params"] == {"uri": note_uri("a")}
            read = await watcher.request("resources/read", {"uri": note_uri("a")})
            assert read["contents"] == [
                {
                    "uri": note_uri("a"),
                    "mimeType": "application/json",
                    "text": '{"key":"a","text":"second"}',
                }
            ]

            await watcher.request("resources/unsubscribe", {"uri": note_uri("a")})
            await watcher.request("resources/subscribe", {"uri": note_uri("b")})
            await writer.call_tool("put_note", {"key": "a", "text": "unheard"})
            await writer.call_tool("put_note", {"key": "b", "text": "heard"})
            assert (await watcher.next_notification(UPDATED))["params"] == {"uri": note_uri("b")}
            assert [m for m in watcher.notifications if m.get("method") == UPDATED] == []


async def test_resources_are_listed_and_read_by_uri(server):
    with trio.fail_after(20):
        async with connect(server.url + "/mcp") as client:
            await client.call_tool("put_note", {"key": "x", "text": "hello"})
            assert (await client.request("resources/list"))["resources"] == []
            templates = (await client.request("resources/templates/list"))["resourceTemplates"]
            assert templates == [
                {
                    "name": "note",
                    "uriTemplate": "notes://note/{key}",
                    "description": "One note.",
                    "mimeType": "application/json",
                }
            ]
            read = await client.request("resources/read", {"uri": note_uri("x")})
            assert read["contents"][0]["text"] == '{"key":"x","text":"hello"}'
            with pytest.raises(McpError) as missing:
                await client.request("resources/read", {"uri": note_uri("nobody")})
    assert missing.value.code == -32002


def _init() -> dict[str, Any]:
    return {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
