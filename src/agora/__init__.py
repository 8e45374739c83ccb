"""agora: a Trio server for stateful, long-running agent sessions over MCP.

Embed it in a Trio program with ``async with agora.open_server(config) as server:``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from agora.server.embed import Server, open_server, serve
from agora.server.stdio_host import StopReading, serve_stdio

__all__ = ["Server", "StopReading", "__version__", "open_server", "serve", "serve_stdio"]
