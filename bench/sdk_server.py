"""The official MCP Python SDK's high-level server with one trivial tool, for `bench/peer.py`.

``MCPServer`` (the SDK 2.x name of FastMCP) serves ``test_simple_text``, which returns the
same text block as agora's conformance fixture of that name. Modes:

- ``http``: Streamable HTTP at ``/mcp`` from ``streamable_http_app()`` under uvicorn, the
  production set-up the SDK documents: one worker process (sessions live in memory), uvloop
  and httptools when installed (``pip install uvloop httptools``, as ``uvicorn[standard]``
  does), access log off, SDK log level WARNING (its INFO line per request costs as much as the
  call). Flags: ``--json`` (``json_response=True``: a POST is answered with JSON, not SSE) and
  ``--stateless`` (``stateless_http=True``: no session state between requests).
- ``stdio``: ``run_stdio_async()``.

``--durable DB`` adds ``durable_counter`` (for ``peer.py --tool durable``): the statement of
``bench/durable.py`` on one SQLite connection in WAL mode with ``synchronous=FULL``, in its
own transaction committed before the reply, as a plain (synchronous) SDK tool does it.

In HTTP mode it binds 127.0.0.1 on a free port and prints ``sdk serving sdk on
http://127.0.0.1:PORT`` on stderr (the line agora prints), then serves until killed.
Never imported by agora.
"""

from __future__ import annotations

import argparse
import socket
import sqlite3
import sys

import anyio
from durable import BUMP, CREATE
from mcp.server.mcpserver import MCPServer

TEXT = "This is a simple text response for testing."


def build(durable: str | None = None) -> MCPServer:
    """The server and its tool (``durable_counter`` on the SQLite file ``durable``, if given)."""
    server = MCPServer("sdk-bench", log_level="WARNING")

    @server.tool(name="test_simple_text", description="Returns one text block.")
    def simple_text() -> str:
        return TEXT

    if durable is not None:
        conn = sqlite3.connect(durable, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(CREATE)

        @server.tool(name="durable_counter", description="Adds one; replies once committed.")
        def durable_counter() -> str:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(BUMP)
            conn.execute("COMMIT")
            return "counted"

    return server


def serve_http(json_response: bool, stateless: bool, durable: str | None) -> None:
    """Streamable HTTP under uvicorn on a free loopback port."""
    import uvicorn

    app = build(durable).streamable_http_app(json_response=json_response, stateless_http=stateless)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # before the announcement, so the first connection finds it
    port = sock.getsockname()[1]
    options: dict[str, object] = {"log_level": "warning", "access_log": False}
    try:
        import uvloop  # noqa: F401

        options["loop"] = "uvloop"
    except ImportError:
        pass
    try:
        import httptools  # noqa: F401

        options["http"] = "httptools"
    except ImportError:
        pass
    config = uvicorn.Config(app, **options)  # type: ignore[arg-type]
    shown = ",".join(f"{k}={v}" for k, v in options.items())
    print(f"sdk serving sdk ({shown}) on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("mode", choices=["http", "stdio"])
    parser.add_argument("--json", action="store_true", help="json_response=True")
    parser.add_argument("--stateless", action="store_true", help="stateless_http=True")
    parser.add_argument("--durable", metavar="DB", help="also serve durable_counter on DB")
    args = parser.parse_args()
    if args.mode == "stdio":
        anyio.run(build(args.durable).run_stdio_async)
    else:
        serve_http(args.json, args.stateless, args.durable)


if __name__ == "__main__":
    main()
