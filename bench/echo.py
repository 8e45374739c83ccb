"""A bare trio-websocket echo server: the transport floor the benches compare agora with.

Run as a script (``python bench/echo.py``): it serves on a free 127.0.0.1 port, accepts the
``mcp`` subprotocol, sends every text message straight back, and announces itself on
stderr as ``echo serving echo on http://127.0.0.1:PORT`` (the line agora prints, so the
benches read both the same way). No MCP, no store. Never imported by agora.
"""

from __future__ import annotations

import sys
from functools import partial

import trio
import trio_websocket

#: Largest message echoed, as agora accepts.
MAX_MESSAGE = 65536
#: The script itself, for benches that start it as a subprocess.
SCRIPT = __file__


async def _handler(request: trio_websocket.WebSocketRequest) -> None:
    sub = "mcp" if "mcp" in request.proposed_subprotocols else None
    ws = await request.accept(subprotocol=sub)
    try:
        while True:
            await ws.send_message(await ws.get_message())
    except trio_websocket.ConnectionClosed:
        pass


async def serve_echo() -> None:
    """Serve until killed."""
    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            partial(trio_websocket.serve_websocket, max_message_size=MAX_MESSAGE),
            _handler,
            "127.0.0.1",
            0,
            None,
        )
        print(f"echo serving echo on http://127.0.0.1:{server.port}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    trio.run(serve_echo)
