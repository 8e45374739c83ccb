"""A toolset of your own, embedded beside the built-in ones: notebooks an agent writes to.

Run it (from the repository, after the README's install): ``.venv/bin/python
examples/notes.py [PORT]``; it serves every built-in toolset and this one on one port of
127.0.0.1 (PORT, else the ``AGORA_PORT`` environment variable, else 8765; 0 takes a free one,
which it prints), with its database ``notes.db`` in the working directory, until Ctrl-C (or
SIGTERM) stops it, quietly. An MCP client finds ``add_note`` and ``read_notes`` at
``/mcp/notes`` (or among all tools at ``/mcp``). ``examples/notes.py --stdio`` serves the
notes endpoint on stdin and stdout instead, for a client that launches the program itself
(the database: ``AGORA_DB``, else ``notes.db`` in the working directory).

What each part is (docs/toolset-api.md says more):

- ``Notebook``: the entity, one per notebook name. A pure state machine: ``handle`` answers a
  command with `Effects` (the reply, and the rows to write), and never does I/O. Its actor runs
  its commands one at a time and commits the writes before the reply is released. A refusal
  is a `ToolError` returned as the reply (raised, it is the same refusal, but nothing of the
  command is committed and the notebook reloads).
- ``NotebookKind``: loads a notebook from committed rows when its actor starts (in a worker
  thread). A name with no rows loads a *vacant* notebook, which the runtime drops as soon as
  its callers are done, so reading made-up names holds no memory.
- ``MIGRATIONS``: the toolset's tables, created once per database, in SQL that SQLite and
  PostgreSQL both run.
- ``toolset()``: the tools (their JSON Schemas, in code: ``contract=None``), their handlers and
  the migrations.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import msgspec
import trio

import agora
from agora.config import Config
from agora.errors import StoreError, ToolError
from agora.runtime.entity import Effects
from agora.server.app import load_toolsets
from agora.store.migrations import Migration
from agora.toolsets.base import ToolCall, Toolset

if TYPE_CHECKING:
    from collections.abc import Mapping

#: At most this many notes a notebook keeps (a tool refuses the next one).
MAX_NOTES = 1000


class AddNote(msgspec.Struct, frozen=True):
    """Append ``text`` to the notebook."""

    text: str


class ReadNotes(msgspec.Struct, frozen=True):
    """The notebook's notes, oldest first."""


class Notebook:
    """One notebook: its name and its notes, as committed."""

    def __init__(self, name: str, notes: list[str]) -> None:
        self.name = name
        self.notes = notes

    @property
    def vacant(self) -> bool:
        """True while nothing was ever written under this name."""
        return not self.notes

    def handle(self, command: object, now: Any) -> Effects:
        if isinstance(command, ReadNotes):
            return Effects(reply={"notebook": self.name, "notes": list(self.notes)})
        if isinstance(command, AddNote):
            if len(self.notes) >= MAX_NOTES:  # a refusal is returned, not raised: nothing
                full = {"error": "notebook_full", "message": f"{MAX_NOTES} notes at most"}
                return Effects(reply=ToolError(full))  # changes; the caller gets isError
            self.notes.append(command.text)
            write = (
                "INSERT INTO notes_entries (notebook, seq, text) VALUES (?, ?, ?)",
                (self.name, len(self.notes), command.text),
            )
            reply = {"notebook": self.name, "count": len(self.notes)}
            return Effects(reply=reply, writes=[write], changed=True)
        raise TypeError(f"not a notebook command: {command!r}")


class NotebookKind:
    """Loads notebooks (the runtime's `agora.runtime.entity.EntityKind`)."""

    kind = "notes.notebook"

    def load(self, conn: Any, key: str, now: Any) -> Notebook:
        rows = conn.execute(
            "SELECT text FROM notes_entries WHERE notebook = ? ORDER BY seq", (key,)
        ).fetchall()
        return Notebook(key, [row[0] for row in rows])


KIND = NotebookKind()

_TABLE = (
    "CREATE TABLE notes_entries (notebook TEXT NOT NULL, seq INTEGER NOT NULL,"
    " text TEXT NOT NULL, PRIMARY KEY (notebook, seq))"
)
MIGRATIONS = (Migration("notes", 1, sql={"sqlite": [_TABLE], "postgresql": [_TABLE]}),)


async def add_note(call: ToolCall) -> dict[str, Any]:
    """``add_note``: append to a notebook; committed before this returns."""
    reply: dict[str, Any] = await call.runtime.call(
        KIND, call.args["notebook"], AddNote(call.args["text"])
    )
    return reply


async def read_notes(call: ToolCall) -> dict[str, Any]:
    """``read_notes``: a notebook's notes (none for a name never written to)."""
    reply: dict[str, Any] = await call.runtime.call(KIND, call.args["notebook"], ReadNotes())
    return reply


_NAME = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9-]+$"}
TOOLS = [
    {
        "name": "add_note",
        "description": "Append a note to a notebook (created by its first note).",
        "inputSchema": {
            "type": "object",
            "properties": {"notebook": _NAME, "text": {"type": "string", "maxLength": 4096}},
            "required": ["notebook", "text"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"notebook": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["notebook", "count"],
        },
    },
    {
        "name": "read_notes",
        "description": "The notes of a notebook, oldest first.",
        "inputSchema": {
            "type": "object",
            "properties": {"notebook": _NAME},
            "required": ["notebook"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "notebook": {"type": "string"},
                "notes": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["notebook", "notes"],
        },
    },
]


def toolset() -> Toolset:
    """The notes toolset, served at ``/mcp/notes``."""
    return Toolset(
        "notes",
        {"add_note": add_note, "read_notes": read_notes},
        contract=None,
        tools=TOOLS,
        migrations=MIGRATIONS,
    )


#: The port served when neither the command line nor ``AGORA_PORT`` names one.
DEFAULT_PORT = 8765


def port_from(args: list[str], environ: Mapping[str, str]) -> int:
    """The port to serve: the one argument, else ``AGORA_PORT``, else `DEFAULT_PORT`.

    Raises:
        ValueError: more than one argument, or a port that is not a whole number from 0
            to 65535.
    """
    if len(args) > 1:
        raise ValueError(f"one argument at most, the port, not {len(args)}")
    given = args[0] if args else environ.get("AGORA_PORT", str(DEFAULT_PORT))
    if not given.isdigit() or int(given) > 65535:
        raise ValueError(f"the port must be a whole number from 0 to 65535, not {given!r}")
    return int(given)


async def main(port: int) -> None:
    """Serve until SIGINT (Ctrl-C) or SIGTERM, then shut down as ``agora serve`` does."""
    config = Config(port=port, db="notes.db")
    toolsets = [*load_toolsets(config.toolsets), toolset()]  # the built-in ones, then yours
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with agora.open_server(config, toolsets=toolsets) as server:
            url = server.url
            print(f"serving on {url}: notes at {url}/mcp/notes (Ctrl-C stops)", flush=True)
            async for _ in signals:
                break  # leaving the block shuts the server down cleanly


async def main_stdio() -> None:
    """Serve the notes endpoint on stdin and stdout, for an MCP client that launches this
    program itself (Claude Desktop's ``command``), until the client closes its input or
    SIGINT / SIGTERM; nothing but the protocol goes to stdout."""
    config = Config(db=os.environ.get("AGORA_DB", "notes.db"))
    toolsets = [*load_toolsets(config.toolsets), toolset()]
    stop = agora.StopReading()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with (
            agora.open_server(config, toolsets=toolsets, listen=False) as server,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(_stop_on_signal, signals, stop)
            await agora.serve_stdio(server, "/mcp/notes", stop=stop)
            nursery.cancel_scope.cancel()


async def _stop_on_signal(signals: Any, stop: agora.StopReading) -> None:
    async for _ in signals:
        stop()  # the input ends as if the client had closed it: the server then shuts down
        return


def run(args: list[str]) -> int:
    """Run as the command line says; a setting or database agora refuses (another process
    using ``notes.db``, a port in use) is one line on stderr and status 2, as ``agora
    serve`` says it, not a traceback."""
    try:
        if args == ["--stdio"]:
            trio.run(main_stdio)
        else:
            trio.run(main, port_from(args, os.environ))
    except (ValueError, OSError, StoreError) as exc:
        print(f"notes.py: {exc} (usage: notes.py [PORT] | notes.py --stdio)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
