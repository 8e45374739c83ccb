"""`serve_stdio`: an embedding program served over its own stdin and stdout.

An MCP client that launches its servers (Claude Desktop's ``command``, Cursor's, the SDK's
stdio client) talks to the process it started, on its stdin and stdout. A program embedding
agora with toolsets of its own is such a process: it opens the server without a listener
(``open_server(config, toolsets=..., listen=False)``) and hands one endpoint to
`serve_stdio`, which serves one session until the client closes its input or ``stop`` is
pulled (from a signal handler, say), then lets the calls in flight finish as the server's
shutdown does. stdout is the protocol's from then on: the program writes nothing else there
(its logging goes to stderr, as Python's does by default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.server.endpoints import served_endpoint
from agora.transports.stdio import StopReading
from agora.transports.stdio import serve_stdio as _serve

if TYPE_CHECKING:
    from agora.identity import Principal
    from agora.server.embed import Server

__all__ = ["StopReading", "serve_stdio"]


async def serve_stdio(
    server: Server,
    path: str = "/mcp",
    principal: Principal | None = None,
    stop: StopReading | None = None,
) -> None:
    """Serve the MCP endpoint ``path`` of ``server`` as one session on stdin and stdout.

    Args:
        server: From `agora.open_server` (``listen=False`` if nothing else should reach it).
        path: ``/mcp`` (every toolset), ``/mcp/<toolset>`` or ``/mcp/<toolset>/<param>``.
        principal: Who the client is (``config.principal_for(token)``); None: the
            configuration's anonymous principal.
        stop: Pulled (called) to end the input as if the client had closed it.

    Raises:
        ValueError: ``path`` names no MCP endpoint of ``server`` (the message names those
            there are, and the closest).
    """
    app = server.app
    endpoint = served_endpoint(app, path)
    await _serve(app, endpoint, principal or app.config.anonymous(), stop=stop)
