"""The ``agora`` command: serve, stdio, call, cards.

Every subcommand has ``--help``. ``serve`` prints its endpoints and runs until SIGINT or
SIGTERM, then shuts down gracefully. ``stdio`` speaks MCP on stdin/stdout and logs to
stderr only. ``call`` makes one tools/call against a running server, for quick checks.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
from typing import Any

import trio

from agora import __version__
from agora.config import Config, load_config


def _config(args: argparse.Namespace, **extra: Any) -> Config:
    toolsets = extra.pop("toolsets", None)
    if toolsets is None and getattr(args, "toolsets", None):
        toolsets = [t.strip() for t in args.toolsets.split(",") if t.strip()]
    return load_config(
        args.config,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        db=args.db,
        toolsets=toolsets,
        conformance=True if getattr(args, "conformance", False) else None,
        **extra,
    )


def _tune_gc() -> None:
    # A call's objects die by reference counting; what the cyclic collector mostly does is
    # rescan the long-lived heap (modules, contracts, every connection's state: ~250k objects
    # at 1,000 sessions). With the default thresholds it spent ~4 s of a ~10 s bench run
    # (bench/ws_calls.py, 100 then 1,000 sessions); freezing the start-up heap and collecting
    # far less often cut that to ~0.3 s and raised calls/s at 1,000 sessions by ~50%.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


async def _serve(config: Config) -> None:
    from agora.server.embed import open_server

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_server(config) as server:
            _tune_gc()
            names = ", ".join(server.app.toolsets)
            ws = server.url.replace("http://", "ws://")
            print(f"agora {__version__} serving {names} on {server.url}", file=sys.stderr)
            print(f"  MCP (WebSocket):       {ws}/mcp", file=sys.stderr)
            print(f"  MCP (Streamable HTTP): {server.url}/mcp", file=sys.stderr)
            for name in server.app.toolsets:
                print(f"  {name:<22} {server.url}/mcp/{name}", file=sys.stderr)
            print(f"  database: {config.db}", file=sys.stderr, flush=True)
            async for signum in signals:
                print(f"agora: {signal.Signals(signum).name}, shutting down", file=sys.stderr)
                break


async def _stdio(config: Config, toolset: str, path: str | None = None) -> None:
    from agora.server.embed import open_server
    from agora.transports.stdio import serve_stdio

    async with open_server(config, listen=False) as server:
        target = path or f"/mcp/{toolset}"
        endpoint = server.app.endpoint(target)
        if endpoint is None or not target.startswith(f"/mcp/{toolset}"):
            raise SystemExit(f"agora stdio: {target} is not an endpoint of {toolset}")
        token = os.environ.get("AGORA_TOKEN")
        principal = server.app.authenticate(f"Bearer {token}" if token else None)
        if principal is None:
            raise SystemExit("agora stdio: AGORA_TOKEN does not match any principal")
        await serve_stdio(server.app, endpoint, principal)


async def _call(url: str, tool: str, arguments: dict[str, Any], token: str | None) -> int:
    from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError

    from agora.client import McpError, call_tool

    try:
        result = await call_tool(url, tool, arguments, token=token)
    except McpError as exc:
        print(f"agora call: the server refused the call: {exc}", file=sys.stderr)
        return 1
    except ConnectionRejected as exc:
        print(f"agora call: {url} refused the connection: HTTP {exc.status_code}", file=sys.stderr)
        return 1
    except (HandshakeError, OSError) as exc:
        cause = exc.__cause__ or exc
        print(f"agora call: cannot connect to {url}: {cause}", file=sys.stderr)
        return 1
    except ConnectionClosed as exc:
        print(f"agora call: the connection closed: {exc.reason}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 1 if result.get("isError") else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agora`` command."""
    parser = argparse.ArgumentParser(prog="agora", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"agora {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=None, help="SQLite file, or :memory: (default ./agora.db)")
        p.add_argument("--config", default=None, help="agora.toml settings file")
        p.add_argument("--toolsets", default=None, help="comma-separated toolsets to serve")
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")

    p = sub.add_parser("serve", help="serve MCP over WebSocket and HTTP on one port")
    common(p)
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 8765; 0 = any free)")
    p.add_argument("--conformance", action="store_true", help="also serve the conformance fixtures")

    p = sub.add_parser("stdio", help="serve one toolset's MCP on stdin/stdout")
    common(p)
    p.add_argument("--toolset", required=True, help="the toolset to serve")
    p.add_argument(
        "--endpoint",
        help="the endpoint path to serve, e.g. '/mcp/chess/<table>?token=<agent token>'"
        " (default /mcp/<toolset>)",
    )
    p.add_argument("--conformance", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("cards", help="chamber evidence cards: sign pending ones, verify a file")
    cards = p.add_subparsers(dest="cards_command", required=True)
    c = cards.add_parser("sign", help="sign every card pending a signature, in place")
    c.add_argument("--db", default="./agora.db", help="the agora SQLite file")
    c.add_argument("--key", required=True, help="Ed25519 key: PEM (PKCS#8) or 64 hex digits")
    c = cards.add_parser("verify", help="re-check a saved card's hash and signature offline")
    c.add_argument("file", help="a card document as served by GET /cards/<id>")
    c.add_argument(
        "--trust", action="append", default=[], help="public key (hex) or key id you trust"
    )
    c.add_argument(
        "--trust-file",
        action="append",
        default=[],
        help="file of trusted keys: one key (hex) or key id per line, or a /chamber/keys document",
    )
    c.add_argument(
        "--keys-url",
        action="append",
        default=[],
        help="trust the keys a server publishes, e.g. http://HOST:PORT/chamber/keys",
    )

    p = sub.add_parser("call", help="call one tool on a running server and print the result")
    p.add_argument("url", help="MCP endpoint, e.g. http://127.0.0.1:8765/mcp/chess")
    p.add_argument("tool", help="tool name")
    p.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    p.add_argument("--token", default=os.environ.get("AGORA_TOKEN"), help="bearer token")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agora`` console script."""
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if getattr(args, "verbose", False) else logging.INFO
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        if args.command == "serve":
            trio.run(_serve, _config(args))
        elif args.command == "stdio":
            config = _config(args, toolsets=[args.toolset])
            trio.run(_stdio, config, args.toolset, args.endpoint)
        elif args.command == "cards":
            from agora.toolsets.chamber import cards_cli

            if args.cards_command == "sign":
                return cards_cli.cmd_sign(args.db, args.key)
            return cards_cli.cmd_verify(
                args.file,
                trusted_keys=args.trust,
                trust_files=args.trust_file,
                keys_urls=args.keys_url,
            )
        elif args.command == "call":
            try:
                arguments = json.loads(args.arguments)
            except json.JSONDecodeError as exc:
                print(f"agora call: arguments are not JSON: {exc}", file=sys.stderr)
                return 2
            return trio.run(_call, args.url, args.tool, arguments, args.token)
    except ValueError as exc:
        print(f"agora: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"agora: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
