"""What ``agora serve`` says as it starts: the banner (its URLs, plain text) and the start-up
warnings (log lines, at WARNING, under the ``agora.cli`` logger as the command's other lines).
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from agora import __version__
from agora.store.lock import shown_database

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.config import Config
    from agora.server.embed import Server

log = logging.getLogger("agora.cli")


async def warn_at_start(config: Config, config_file: str | None = None) -> None:
    """Log the start-up warnings ``config`` calls for, after the banner (``config_file``: the
    --config file it was read from, if any, for the settings a warning asks for)."""
    _warn_exposure(config)
    addresses = await bound_addresses(config.host)
    warning = anonymous_warning(config, addresses=addresses, config_file=config_file)
    if warning is not None:
        log.warning("%s", warning)


async def bound_addresses(host: str) -> list[str]:
    """The addresses the server binds for ``host``, resolved as it resolves them
    (`trio.open_tcp_listeners`: getaddrinfo with AI_PASSIVE); ``[host]`` if that fails."""
    try:
        found = await trio.socket.getaddrinfo(
            host, 0, type=trio.socket.SOCK_STREAM, flags=trio.socket.AI_PASSIVE
        )
    except OSError:
        return [host]
    return sorted({str(info[4][0]) for info in found}) or [host]


def anonymous_warning(
    config: Config, *, addresses: Sequence[str], config_file: str | None = None
) -> str | None:
    """A warning, or None: the server listens where other machines can reach it (one of the
    ``addresses`` it bound is not loopback) and serves MCP to callers that send no token
    (``allow_anonymous``, the default), so whoever reaches the port may use every tool.
    README: set ``allow_anonymous = false`` on such a server. ``config_file``: the --config
    file, named as where to add ``[[principals]]`` (which no AGORA_ variable sets)."""
    if not config.allow_anonymous or all(_loopback(address) for address in addresses):
        return None
    if _wildcard(config.host):
        where = f"every interface ({config.host or '*'})"
    elif list(addresses) != [config.host]:
        where = f"{config.host} ({', '.join(addresses)})"
    else:
        where = config.host
    to = (
        f"the --config file ({config_file})"
        if config_file
        else "a config file, given as --config (no AGORA_ variable sets them)"
    )
    todo = (
        "set allow_anonymous = false (AGORA_ALLOW_ANONYMOUS=false) so that only the holders"
        " of the [[principals]]' tokens may"
        if config.principals
        else f"add [[principals]] to {to}, a name and the sha256 of a token each, and set"
        " allow_anonymous = false (AGORA_ALLOW_ANONYMOUS=false) so that only the holders of"
        " their tokens may"
    )
    return (
        "callers without a bearer token are served MCP (allow_anonymous = true) on"
        f" {where}, which other machines may reach: whoever reaches the port may use every"
        f" tool; {todo} (README: Configuration)"
    )


def _loopback(host: str) -> bool:
    """Whether ``host`` (an address bound) is reached from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name (other than localhost), or every interface ("")
        return False


def _wildcard(host: str) -> bool:
    from agora.transports.guard import WILDCARDS

    return host in WILDCARDS


def _warn_exposure(config: Config) -> None:
    """Log a warning (at start, after the banner) when the Host/Origin check will refuse the
    names clients use: a log line, in the log's format and subject to log_level."""
    from agora.transports.guard import exposure_warning

    warning = exposure_warning(config.host, config.allowed_hosts, config.public_url)
    if warning:
        log.warning("%s", warning)


def banner(server: Server, config: Config) -> str:
    """What ``agora serve`` prints at start, plain text whatever log_level says: URLs a
    client can use (the start page, the MCP endpoints, each toolset's start pages, the
    probes; the chess table's links are the chess toolset's own lines), on the base those
    links use (public_url, else loopback for a server bound to every interface: never
    0.0.0.0)."""
    from agora.transports.guard import WILDCARDS

    base = server.runtime.public_url.rstrip("/")
    ws = "ws" + base.removeprefix("http") if base.startswith("http") else base
    every = f" (bound to {config.host or '*'}: every interface)" if config.host in WILDCARDS else ""
    lines = [f"agora {__version__} serving {', '.join(server.app.toolsets)} on {server.url}{every}"]
    if base != server.url:
        lines.append(f"  public URL:            {base}")
    lines.append(f"  start page:            {base}/")
    lines += [f"  MCP (WebSocket):       {ws}/mcp", f"  MCP (Streamable HTTP): {base}/mcp"]
    lines += [f"  {name:<22} {base}/mcp/{name}" for name in server.app.toolsets]
    pages = [path for toolset in server.app.toolsets.values() for path, _ in toolset.pages]
    lines += [f"  page:                  {base}{path}" for path in pages]
    lines.append(f"  health, readiness:     {base}/healthz, {base}/readyz")
    lines.append(f"  database: {database_named(config.db)}")
    return "\n".join(lines)


#: Said after the database path when it is the default's, which the working directory places.
DEFAULT_DB = " (the default, in the working directory: --db or AGORA_DB chooses another)"


def database_named(db: str) -> str:
    """``db`` as a log line names it: a file by its absolute path, a URL without password."""
    if not is_file_path(db):
        return shown_database(db)
    return str(Path(db).resolve())


def is_file_path(db: str) -> bool:
    """Whether ``db`` names a SQLite file (not ``:memory:`` nor a URL)."""
    return db != ":memory:" and "://" not in db
