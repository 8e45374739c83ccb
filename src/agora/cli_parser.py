"""The ``agora`` command's arguments: every subcommand, its flags and their help.

`agora.cli` runs what they ask for. An unknown flag is refused with the usage of the
subcommand it was given to (``agora serve --bogus`` shows ``agora serve``'s), not the top
level's: the operator sees the flags that command does take.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from agora import __version__
from agora.config_env import FILE_ONLY


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser that refuses what it does not recognise itself.

    argparse hands a subcommand's leftovers back to the top-level parser, whose error shows
    the top-level usage (``agora [-h] [--version] {serve,...}``), which lists none of the
    subcommand's flags. A subparser is only ever run by its parent's subparsers action,
    which calls ``parse_known_args``: refusing here shows this command's usage instead.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:  # usage and message on stderr, exit status 2
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


#: Where the settings are, for the help of the commands that read them: most are not flags.
#: The tables no AGORA_<NAME> variable sets: "[[principals]] and [options.<toolset>]".
_FILE_ONLY = " and ".join(table.removesuffix(" tables") for table in FILE_ONLY.values())
SETTINGS = (
    "Settings: defaults, then the --config agora.toml file, then AGORA_<NAME> environment "
    "variables (e.g. AGORA_PORT=9000, AGORA_LOG_LEVEL=warning; lists comma-separated: one "
    f"per setting but the tables, {_FILE_ONLY}, which only the config file sets), then the "
    "command-line flags. Every setting (log_level, grace_seconds, "
    "allowed_hosts, allow_anonymous, [[principals]], public_url, ...) and its default: "
    "README.md, section Configuration (the package's description); the [options.<toolset>] "
    "tables: docs/options.md in the source."
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agora`` command."""
    parser = argparse.ArgumentParser(
        prog="agora",
        description="agora: an MCP server for stateful, long-running agent sessions",
        epilog=SETTINGS,
    )
    parser.add_argument("--version", action="version", version=f"agora {__version__}")
    # Not required here: `agora` alone prints this help (its commands, where the settings
    # are), not argparse's "the following arguments are required: command".
    sub = parser.add_subparsers(dest="command", parser_class=_CommandParser)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--db",
            default=None,
            help="SQLite file, :memory:, or a postgresql:// URL shared by several nodes "
            "(default ./agora.db)",
        )
        p.add_argument("--config", default=None, help="agora.toml settings file")
        p.add_argument("--toolsets", default=None, help="comma-separated toolsets to serve")
        p.add_argument(
            "--shared",
            action="store_true",
            help="open the SQLite file shared: other agora processes opened with --shared "
            "may use it at the same time (writes under a version guard)",
        )
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")

    p = sub.add_parser(
        "serve",
        help="serve MCP over WebSocket and HTTP on one port",
        description="Serve MCP over WebSocket and Streamable HTTP on one port, with the "
        "toolsets' pages and the /healthz and /readyz probes, until SIGINT, SIGTERM or SIGHUP "
        "(then a graceful shutdown: the calls in flight get grace_seconds to answer). The "
        "banner on stderr lists the URLs.",
        epilog=SETTINGS,
    )
    common(p)
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 8765; 0 = any free)")
    p.add_argument("--conformance", action="store_true", help="also serve the conformance fixtures")

    p = sub.add_parser(
        "stdio",
        help="MCP on stdin/stdout: relay to a running server, or serve a database alone",
        description="With --connect, relay MCP between stdin/stdout and a running agora "
        "server (use this while `agora serve` runs). Otherwise serve a database (--db) that "
        "no server is using, or that every process opens with --shared, one toolset "
        "(--toolset) or several (--toolsets) on one session.",
        epilog=SETTINGS,
    )
    common(p)
    p.add_argument(
        "--connect",
        metavar="URL",
        default=None,
        help="relay to a running server's MCP endpoint, e.g. "
        "'ws://127.0.0.1:8765/mcp/chess/default?token=AGENT_TOKEN'",
    )
    p.add_argument(
        "--token",
        default=None,
        help="bearer token for --connect (default: the AGORA_TOKEN environment variable)",
    )
    p.add_argument("--toolset", default=None, help="serve only this toolset (/mcp/NAME)")
    p.add_argument(
        "--endpoint",
        default=None,
        help="with --db: the endpoint path to serve, e.g. "
        "'/mcp/chess/<table>?token=<agent token>' (default /mcp/<toolset>, or /mcp)",
    )
    p.add_argument("--conformance", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser(
        "cards", help="chamber evidence cards: sign pending ones, verify a card or a bundle"
    )
    cards = p.add_subparsers(dest="cards_command", required=True)
    c = cards.add_parser(
        "sign",
        help="sign every card pending a signature, in place",
        description="Sign every card sealed while no signing key was configured, in the "
        "database file, with the key read from a file. Offline: stop the server first. A card "
        "whose figures contradict each other is never signed: each is named, and the exit "
        "status is 1 (0 when every pending card was signed, 2 when nothing could be).",
    )
    c.add_argument(
        "--db",
        default="./agora.db",
        help="the agora SQLite file; refused while a server uses it (stop it first)"
        " (default ./agora.db)",
    )
    c.add_argument(
        "--key",
        required=True,
        metavar="FILE",
        help="file holding the Ed25519 private key: PEM (PKCS#8), or 64 hex digits",
    )
    c = cards.add_parser(
        "verify",
        help="re-check a card's hash and signature, or an export bundle's (and its transcript)",
        description="Re-check a card document, or a seal's export bundle: the card's hash, its "
        "signature and whether you trust the signing key; for a bundle, also that its "
        "transcript gives the card's transcript hash. Exits 0 when all hold (a bundle whose "
        "transcript retired with its session: the card alone, which the verdict says), 1 when "
        "one does not (unsigned, invalid, untrusted key, transcript mismatch, a transcript said "
        "to be retired before the session could have been, a member added beside what the "
        "signature covers), 2 when the card or a trust source cannot be read, the file is no "
        "card (a listing, a page, a key document: it says what to verify instead), or it is a "
        "whole seal_attempt reply. The last line is the verdict.",
    )
    c.add_argument(
        "file",
        help="a card document saved from GET /cards/<id>, that URL (fetched as JSON), or a"
        " seal's export bundle (seal_attempt's export_bundle) saved as JSON",
    )
    c.add_argument(
        "--trust",
        action="append",
        default=[],
        help="an Ed25519 public key (64 hex digits) you trust; a key id is only a label",
    )
    c.add_argument(
        "--trust-file",
        action="append",
        default=[],
        help="file of trusted keys: one public key (64 hex) per line, or a /chamber/keys document",
    )
    c.add_argument(
        "--keys-url",
        action="append",
        default=[],
        help="trust the keys a server publishes, e.g. http://HOST:PORT/chamber/keys",
    )

    p = sub.add_parser(
        "call",
        help="call one tool on a running server and print the result",
        description="Call one tool on a running server and print its result as JSON. Exits 0, "
        "or 1 when the result is a tool error (isError: true, still printed) or the "
        "connection failed, 2 for arguments that are not JSON or a token or Host the "
        "server refused, 3 when the server answered with a JSON-RPC error (an unknown tool, "
        "an internal error: its code, message and correlation id go to stderr).",
    )
    p.add_argument("url", help="MCP endpoint, e.g. http://127.0.0.1:8765/mcp/chess")
    p.add_argument("tool", help="tool name")
    p.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    p.add_argument(
        "--token",
        default=os.environ.get("AGORA_TOKEN"),
        help="bearer token (default: the AGORA_TOKEN environment variable)",
    )
    return parser
