"""The ``agora`` command: serve, stdio, call, cards.

Every subcommand has ``--help``. ``serve`` prints its endpoints and runs until SIGINT,
SIGTERM or SIGHUP (unless ignored, as under nohup), then shuts down gracefully (later
signals: `agora.cli_signals`). ``stdio``
speaks MCP on stdin/stdout and logs to stderr only: ``--connect URL`` relays to a running
server, ``--db`` serves a database no server is using; on any of those signals it reads no
more and answers the calls in flight first.
``call`` makes one tools/call against a running server, for quick checks (`agora.cli_call`).
Bad configuration (settings, a database in use, a refused token) is one line on stderr and
exit status 2, never a traceback. A process killed by a fatal signal (SIGSEGV, SIGBUS, ...)
writes every thread's Python stack to stderr first (`faulthandler`): a server that vanished
says where it was.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

import trio

from agora.cli_banner import (
    DEFAULT_DB,
    banner,
    database_named,
    is_file_path,
    warn_at_start,
)
from agora.cli_call import call
from agora.cli_parser import build_parser
from agora.cli_signals import received, stop_on_signal, stop_signals, while_stopping
from agora.config import Config, environment_log_level, load_config
from agora.errors import StoreError
from agora.logsetup import configure, set_level
from agora.store.lock import DatabaseInUse, database_lock, database_problem

if TYPE_CHECKING:
    import argparse
    from collections.abc import AsyncIterator

    from agora.server.embed import Server

log = logging.getLogger(__name__)

#: Exit status for a configuration the user must fix.
BAD_CONFIGURATION = 2


def _config(
    args: argparse.Namespace, origins: dict[str, str] | None = None, **extra: Any
) -> Config:
    toolsets = extra.pop("toolsets", None)
    # (`agora stdio --toolset NAME` sets toolsets: its refusals name that flag)
    named = {"toolsets": "--toolset"} if getattr(args, "toolset", None) else None
    if toolsets is None and getattr(args, "toolsets", None):
        toolsets = [t.strip() for t in args.toolsets.split(",") if t.strip()]
    config = load_config(
        args.config,
        named=named,
        origins=origins,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        db=args.db,
        toolsets=toolsets,
        conformance=True if getattr(args, "conformance", False) else None,
        shared=True if getattr(args, "shared", False) else None,
        **extra,
    )
    if not getattr(args, "verbose", False):
        set_level(config.log_level)
    if is_file_path(config.db) and database_problem(config.db) is None:
        # What the messages and the banner name: relative to the working directory, as
        # the file is opened (a path refused as it is written is named so).
        config.db = os.path.abspath(config.db)
    return config


async def _serve(config: Config, config_file: str | None) -> None:
    from agora.server.heap import HeapKeeper

    with trio.open_signal_receiver(*stop_signals()) as signals:
        async with trio.open_nursery() as stopping:
            async with _starting(config) as server, trio.open_nursery() as keeper_nursery:
                keeper = HeapKeeper()
                keeper.install()  # short collector pauses however large the heap grows
                keeper_nursery.start_soon(keeper.run)
                print(banner(server, config), file=sys.stderr, flush=True)
                await warn_at_start(config, config_file)
                async for signum in signals:
                    received(signum)
                    break
                keeper_nursery.cancel_scope.cancel()
                # Signals that come while the server shuts down (leaving the block) are said.
                stopping.start_soon(
                    functools.partial(
                        while_stopping, signals, config.grace_seconds, server.app, first=signum
                    )
                )
            stopping.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _starting(config: Config, *, listen: bool = True) -> AsyncIterator[Server]:
    """`open_server`, where an OSError while the server starts (a full disk, a file it may
    not open: not one while it serves) is a refusal naming its file: one line, exit 2."""
    from agora.server.embed import CannotListen, open_server

    started = False
    try:
        async with open_server(config, listen=listen) as server:
            started = True
            yield server
    except Exception as exc:
        leaf = _leaf(exc)
        if started or not isinstance(leaf, OSError) or isinstance(leaf, CannotListen):
            raise
        log.debug("start failed", exc_info=leaf)  # -v: where
        raise _Refused(f"cannot start: {_os_problem(leaf)}") from leaf


def _os_problem(exc: OSError) -> str:
    """``exc`` in words, with the file or files it concerns (its errno number left out)."""
    files = [str(f) for f in (exc.filename, exc.filename2) if f is not None]
    said = exc.strerror or str(exc)
    return f"{said}: {' -> '.join(files)}" if files else said


async def _stdio(config: Config, path: str, chosen_db: bool, toolset: str | None) -> None:
    from agora.logsafe import shown_url
    from agora.server.endpoints import bad_param, no_endpoint
    from agora.transports.stdio import StopReading, serve_stdio

    token = os.environ.get("AGORA_TOKEN")
    principal = config.principal_for(token.strip()) if token else config.anonymous()
    if principal is None:
        if not config.principals:  # a token the server has no principals to check it against
            raise _Refused(
                "AGORA_TOKEN is set but no principals are configured (add [[principals]] to"
                " the config file given with --config), or unset it to run anonymously"
            )
        raise _Refused("AGORA_TOKEN does not match any principal")
    stop = StopReading()
    with trio.open_signal_receiver(*stop_signals()) as signals:
        async with _starting(config, listen=False) as server, trio.open_nursery() as nursery:
            nursery.start_soon(stop_on_signal, signals, stop, config.grace_seconds)
            endpoint = server.app.endpoint(path)
            if endpoint is None:
                wrong = _not_the_toolsets(path, toolset) if toolset else None
                raise _Refused(wrong or no_endpoint(server.app, path))
            wrong = bad_param(server.app, path)
            if wrong is not None:
                raise _Refused(wrong)
            # No page here, but a configured public_url names where the file is served (by
            # `agora serve` on it): links handed out (a chamber card's card_url) go under it.
            server.runtime.public_url = config.public_url
            # A client launches this from a directory of its choosing ($HOME, /): say where
            # the default ./agora.db went, when nothing chose the file (stdout is MCP's; this
            # line is stderr's).
            # Never the query: a chess agent's seat token travels there, as for --connect.
            default = "" if chosen_db else DEFAULT_DB
            shown = shown_url(path)
            log.info(
                "serving %s on stdio; database %s%s", shown, database_named(config.db), default
            )
            await serve_stdio(server.app, endpoint, principal, stop=stop)
            nursery.cancel_scope.cancel()


async def _bridge(url: str, token: str | None) -> None:
    from agora.bridge import Bridge, run_bridge

    bridge = Bridge(url, token)
    with trio.open_signal_receiver(*stop_signals()) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_on_signal, signals, bridge.stop_reading, None)
            await run_bridge(url, token, bridge)
            nursery.cancel_scope.cancel()


class _Refused(Exception):
    """A configuration problem found while starting: one line, exit status 2."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agora`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `agora` alone: the commands and where the settings are
        parser.print_help(sys.stderr)
        return BAD_CONFIGURATION
    if not faulthandler.is_enabled():  # stderr is every command's log (stdio's stdout: MCP)
        with contextlib.suppress(ValueError, OSError):  # a stderr with no descriptor: none
            faulthandler.enable()
    # INFO until the settings are read (`_config` applies log_level); -v: DEBUG throughout.
    configure(sys.stderr, logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)
    try:
        return _run(args)
    except BaseException as exc:
        leaf = _leaf(exc)
        if isinstance(leaf, KeyboardInterrupt):
            return 130
        if isinstance(leaf, _Refused | ValueError | StoreError):
            hint = ""
            if isinstance(leaf, DatabaseInUse):
                hints = _SHARED_HINTS if leaf.shared else _IN_USE_HINTS
                hint = hints.get(args.command, "")
            print(f"agora: {_source(leaf, args)}{leaf}{hint}", file=sys.stderr)
            return BAD_CONFIGURATION
        from agora.bridge import BridgeError
        from agora.server.embed import CannotListen

        if isinstance(leaf, BridgeError):
            print(f"agora stdio: {leaf}", file=sys.stderr)
            return leaf.exit_code
        if isinstance(leaf, CannotListen):
            print(f"agora: {leaf.strerror}", file=sys.stderr)
            return BAD_CONFIGURATION
        if isinstance(leaf, OSError):
            print(f"agora: {_os_problem(leaf)}", file=sys.stderr)
            return 1
        raise


def _source(refusal: BaseException, args: argparse.Namespace) -> str:
    """``"FILE: "`` when ``refusal`` is about an ``[options.X]`` table, which only the config
    file sets (load_config's own refusals name their source already)."""
    from agora.toolsets.options import OptionsError

    config = getattr(args, "config", None)
    return f"{os.path.abspath(config)}: " if isinstance(refusal, OptionsError) and config else ""


_IN_USE_HINTS = {
    "serve": "; one server per database: stop that one first, or run both with --shared",
    "stdio": "; to use it, relay to that server: agora stdio --connect ws://HOST:PORT/mcp/..., "
    "or run both with --shared",
    "cards": "; stop that server first (cards sign is offline)",
}
_SHARED_HINTS = {
    "serve": "; to run beside them, open it shared too: --shared (or shared = true)",
    "stdio": "; to run beside them, open it shared too: --shared (or shared = true)",
    "cards": "; cards sign is offline: stop them first",
}


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        config = _config(args)
        from agora.server.descriptors import raise_open_files_limit
        from agora.server.embed import set_switch_interval

        set_switch_interval(config.switch_interval_ms)
        raise_open_files_limit()  # the process is the server's: room for every connection
        trio.run(_serve, config, args.config and os.path.abspath(args.config))
    elif args.command == "stdio":
        return _run_stdio(args)
    elif args.command == "cards":
        from agora.toolsets.chamber import cards_cli

        if args.cards_command == "sign":
            if not os.path.exists(args.db):
                return cards_cli.cmd_sign(args.db, args.key)  # it says the file is missing
            from agora.store.wal_leftover import check_leftover_wal

            with database_lock(args.db):
                check_leftover_wal(os.path.abspath(args.db))  # as a start does: a restored file
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
        return trio.run(call, args.url, args.tool, arguments, args.token)
    return 0


def _run_stdio(args: argparse.Namespace) -> int:
    if args.connect:
        names = ("db", "config", "toolset", "toolsets", "endpoint", "shared")
        offline = [f"--{n}" for n in names if getattr(args, n)]
        if offline:
            raise _Refused(
                f"agora stdio --connect relays to a running server: {', '.join(offline)} "
                f"{'belongs' if len(offline) == 1 else 'belong'} to that server's command line,"
                " not here"
            )
        if not args.verbose:  # its only setting: the rest are the server's
            set_level(environment_log_level())
        token = args.token if args.token is not None else os.environ.get("AGORA_TOKEN")
        trio.run(_bridge, args.connect, token or None)
        return 0
    if args.token is not None:
        raise _Refused("--token is for --connect; a local database takes AGORA_TOKEN")
    if args.toolset and args.toolsets:
        raise _Refused("give --toolset NAME or --toolsets A,B, not both")
    if args.endpoint and not args.endpoint.startswith("/"):  # a URL, host:port/..., " /mcp"
        given = "a URL" if "://" in args.endpoint else "no path (a path starts with /)"
        raise _Refused(
            "--endpoint takes an endpoint's path, such as /mcp/chess/default?token=…, and was"
            f" given {given}: to reach a running server at its address, use --connect URL; to"
            " serve this machine's database, give the path alone"
        )
    origins: dict[str, str] = {}  # where each setting given came from: was the file chosen?
    if args.toolset:
        config = _config(args, origins, toolsets=[args.toolset])
        path = args.endpoint or f"/mcp/{args.toolset}"
        if not (path.partition("?")[0] + "/").startswith(f"/mcp/{args.toolset}/"):
            raise _Refused(_not_the_toolsets(path, args.toolset))
    else:
        config = _config(args, origins)
        path = args.endpoint or "/mcp"
    trio.run(_stdio, config, path, "db" in origins, args.toolset)
    return 0


def _not_the_toolsets(path: str, name: str) -> str:
    """`agora.server.endpoints.not_the_toolsets` for ``--toolset`` ``name`` (built, unserved)."""
    from agora.server.app import load_toolsets
    from agora.server.endpoints import not_the_toolsets

    (toolset,) = load_toolsets([name])
    return not_the_toolsets(path, toolset)


def _leaf(exc: BaseException) -> BaseException:
    """The one error inside nested single-error groups (Trio nurseries wrap what they raise)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())
