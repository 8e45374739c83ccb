"""agora with one durable-write tool, for `bench/peer.py --tool durable`.

``durable_counter`` adds one to a counter row in SQLite and answers only once that is
committed (``synchronous=FULL``: fsync'd), through agora's own store (its writer thread and
group commit), like any toolset write. The SDK side (``sdk_server.py --durable``) runs the
very same statement on its own connection with the same pragmas. Served at ``/mcp/durable``
on a free 127.0.0.1 port; the ``serving ... on http://...`` line goes to stderr as
``agora serve`` prints it. Never imported by agora.

Usage: ``.venv/bin/python bench/durable.py DB``
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall, Toolset

TOOL = "durable_counter"
TEXT = "counted"
#: The statement both servers run per call (one hot row, as a counter is).
BUMP = (
    "INSERT INTO bench_counter (id, n) VALUES (1, 1)"
    " ON CONFLICT (id) DO UPDATE SET n = bench_counter.n + 1"
)
CREATE = "CREATE TABLE IF NOT EXISTS bench_counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"


async def durable_counter(call: ToolCall) -> dict[str, Any]:
    await call.runtime.store.write([(BUMP, ())])
    return {"content": [{"type": "text", "text": TEXT}]}


def toolset() -> Toolset:
    # agora is imported here, not at the top: sdk_server.py imports this module's statements.
    from agora.store.migrations import Migration
    from agora.toolsets.base import Toolset

    tool = {
        "name": TOOL,
        "description": "Adds one to a counter; answers once the change is durable.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    }
    return Toolset(
        "durable",
        {TOOL: durable_counter},
        contract=None,
        tools=[tool],
        migrations=[Migration("durable", 1, sql={"sqlite": [CREATE]})],
    )


async def main(db: str) -> None:
    import trio

    from agora.config import Config
    from agora.server.embed import open_server

    config = Config(db=db, port=0, synchronous="FULL", group_commit=True)
    async with open_server(config, toolsets=[toolset()]) as server:
        print(f"agora serving durable on {server.url}", file=sys.stderr, flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    import trio

    trio.run(main, sys.argv[1])
