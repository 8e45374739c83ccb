"""Settings: defaults, then an agora.toml file, then AGORA_* environment variables, then flags.

Everything an operator can set lives in `Config`; `docs` in the README mirrors it. Principals
carry only the sha256 of their bearer token. This module reads files and the environment but
starts nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec

from agora.config_checks import unusable_grants, unusable_principal
from agora.config_env import from_environment, warn_unknown
from agora.config_ranges import out_of_range
from agora.identity import Principal
from agora.logsafe import loggable

#: The toolsets of this tree, in listing order: a module ``agora.toolsets.<name>`` with a
#: ``toolset()`` function each (`agora.server.app.load_toolsets` imports it by this name).
KNOWN_TOOLSETS = ("chamber", "chess", "router", "debate")
#: What ``toolsets`` may name: the toolsets and the conformance fixtures. An ``[options.X]``
#: table may name one of these or a toolset of an embedding program, which only the server
#: knows: `agora.toolsets.options.check_toolset_options` checks the tables' names.
SERVABLE = (*KNOWN_TOOLSETS, "conformance")


class PrincipalConfig(msgspec.Struct, forbid_unknown_fields=True):
    """One caller known by its bearer token."""

    name: str
    token_sha256: str
    scopes: list[str] = msgspec.field(default_factory=list)
    projects: list[str] = msgspec.field(default_factory=list)


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every setting of an agora server (see README, "Configuration")."""

    host: str = "127.0.0.1"
    port: int = 8765
    db: str = "./agora.db"
    #: Toolsets to serve; empty means every toolset that is implemented.
    toolsets: list[str] = msgspec.field(default_factory=list)
    conformance: bool = False
    #: Public base URL for links (human pages, cards); default http://host:port.
    public_url: str = ""
    synchronous: str = "FULL"
    group_commit: bool = True
    #: Log (INFO, logger agora.store.writer) the wall time each transaction became durable,
    #: so a benchmark can measure latency from the commit; off by default.
    trace_commits: bool = False
    #: Seconds a write may wait for its commit before its caller gets a retryable error
    #: (another process holding the database's write lock, a stalled disk); on PostgreSQL
    #: also what a read, a load or a version probe may wait for its answer. Shutdown takes
    #: at most grace_seconds plus this, whatever the database does.
    commit_timeout: float = 10.0
    #: Open the SQLite file shared: agora processes that all open it shared (``agora serve``
    #: beside ``agora stdio --db``) run on it together, their writes under a version guard
    #: and their waiters woken by each other's commits; an unshared process is refused
    #: beside them. Off: one process per file, the fastest path. PostgreSQL is always shared
    #: (the setting is ignored there, said in a warning at start).
    shared: bool = False
    #: Run the SQLite writer's statements and COMMITs in a child process (``python -I -S``, one
    #: per open database file), so that they never wait for the GIL the event loop holds;
    #: off: in the server's writer thread. Not used for ``:memory:``, a shared file or
    #: PostgreSQL.
    writer_process: bool = True
    #: Seconds an actor with no commands and no waiters stays in memory.
    actor_idle_seconds: float = 300.0
    #: Seconds in-flight calls get to finish at shutdown before they are cancelled.
    grace_seconds: float = 5.0
    #: Seconds, within grace_seconds, that connections stay open at shutdown once the calls
    #: in flight have answered, for the requests a client sends after a reply that change
    #: nothing (tools/list, ping: the official SDK lists tools to check a result against its
    #: outputSchema); over as soon as every client has closed. 0: close at once.
    linger_seconds: float = 1.0
    max_in_flight: int = 32
    page_size: int = 100
    #: Extra Host/Origin names allowed besides loopback (DNS-rebinding protection).
    allowed_hosts: list[str] = msgspec.field(default_factory=list)
    #: Seconds between WebSocket pings (0 = none); a peer that misses 2 pongs in a row is closed.
    ping_interval: float = 20.0
    #: Seconds a peer may leave a write unread (a WebSocket message, an HTTP response or
    #: an SSE event) before its connection is closed.
    send_timeout: float = 30.0
    #: Open TCP connections (HTTP and WebSocket); beyond it a new one gets 503 and is closed.
    #: Lowered at start to what the open-files limit leaves (`agora.server.descriptors`).
    max_connections: int = 20_000
    #: Streamable HTTP sessions held at once, and the share one principal may hold (at most
    #: the whole); an initialize beyond either gets 503.
    max_sessions: int = 10_000
    max_sessions_per_principal: int = 2_500
    #: Seconds a Streamable HTTP session may go unused (no request, no open stream).
    session_idle_seconds: float = 600.0
    #: Seconds a kept-alive HTTP connection may wait for its next request, and the number
    #: of requests one connection may carry before it is closed.
    keep_alive_seconds: float = 15.0
    keep_alive_requests: int = 1000
    principals: list[PrincipalConfig] = msgspec.field(default_factory=list)
    #: Project grants of the anonymous principal (callers without a token). Unset: ``["local"]``
    #: while no ``[[principals]]`` are configured (a single-user server on loopback can use the
    #: debate at once), none once they are.
    anonymous_projects: list[str] | None = None
    #: Whether a caller without a bearer token is served MCP (WebSocket and Streamable HTTP,
    #: on every /mcp endpoint). False: it gets 401; the pages (a chess table's, under its own
    #: tokens, the public cards and board) and the probes are served as before.
    allow_anonymous: bool = True
    #: Milliseconds a thread waiting for Python's GIL waits before the running one is asked
    #: to let it go (``sys.setswitchinterval``), set when ``agora serve`` starts; 0 keeps
    #: the interpreter's own (5 ms), also the most. The writer thread needs the GIL back
    #: after every fsync while the event loop runs: a shorter interval shortens that wait
    #: for every commit. A program embedding the server keeps its own unless it calls
    #: `agora.server.embed.set_switch_interval`.
    switch_interval_ms: float = 0.0
    #: The least severe log records ``agora serve`` and ``agora stdio`` write to stderr
    #: (``-v`` means debug whatever this says; ``stdio --connect`` reads AGORA_LOG_LEVEL
    #: alone: `environment_log_level`). An embedding program logs as it likes.
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    #: Per-toolset options: the [options.<name>] tables of agora.toml.
    options: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)

    def anonymous(self) -> Principal:
        """The principal of a caller that sent no token (see ``anonymous_projects``)."""
        projects = self.anonymous_projects
        if projects is None:
            projects = [] if self.principals else ["local"]
        return Principal(projects=frozenset(projects))

    def principal_for(self, token: str) -> Principal | None:
        """The principal whose token hashes to ``sha256(token)``, or None if unknown."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        for p in self.principals:
            if p.token_sha256.lower() == digest:
                return Principal(p.name, frozenset(p.scopes), frozenset(p.projects))
        return None


def load_config(
    path: str | Path | None = None,
    *,
    named: dict[str, str] | None = None,
    origins: dict[str, str] | None = None,
    **overrides: Any,
) -> Config:
    """Build a Config from a TOML file (if given), AGORA_* env vars, then ``overrides``.

    ``named`` names the command-line flag an override came from where it is not
    ``--<setting>`` (``agora stdio --toolset chess`` sets ``toolsets``), for the messages.
    ``origins``, when given, is filled with where each setting given came from (the file, the
    AGORA_* variable, the flag); a setting left at its default is not in it.

    Values in the file must have their setting's type as TOML writes it (``port = 9000``,
    not ``"9000"``); AGORA_* variables, which are strings, are converted to it.

    Raises:
        ValueError: on an unknown setting, a wrong type, a value the server cannot run with
            (a port past 65535, a negative duration, no calls in flight), or an unreadable
            file; the message names where the setting came from (the file, the AGORA_*
            variable or the flag). An ``[options.X]`` table is not refused here, whatever
            it names: it may be for a toolset of an embedding program; the server checks
            each table against the toolsets it serves when it starts.
    """
    data: dict[str, Any] = {}
    #: Where each top-level setting's value came from, for the error messages.
    sources: dict[str, str] = {}
    if path is not None:
        path = os.path.abspath(path)  # the messages name the file wherever it was started
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"cannot read config {path}: {exc}") from exc
        sources = dict.fromkeys(data, str(path))
    fields = {f.name: f for f in msgspec.structs.fields(Config)}
    _fold_case(data)
    if data:
        # The file's values are typed (TOML has numbers, booleans, lists): they are taken
        # as written, so `port = "9000"` is refused rather than quietly read as 9000. Only
        # AGORA_* variables and flags, which are strings, are converted below.
        try:
            msgspec.convert(data, Config, strict=True)
        except msgspec.ValidationError as exc:
            raise ValueError(f"{path}: {_typed(str(exc), list(fields))}") from exc
    environment, variables = from_environment({n: f.type for n, f in fields.items()})
    data.update(environment)
    sources.update(variables)
    given = {k: v for k, v in overrides.items() if v is not None}
    data.update(given)
    sources.update({k: (named or {}).get(k, f"--{k}") for k in given})
    _fold_case(data)
    try:
        config = msgspec.convert(data, Config, strict=False)
    except msgspec.ValidationError as exc:
        problem = str(exc)
        raise ValueError(
            _unconverted(problem, data, sources) or _located(problem, sources, list(fields))
        ) from exc
    unknown = [t for t in config.toolsets if t not in SERVABLE]
    if unknown:
        raise ValueError(_unknown_toolsets(unknown, sources.get("toolsets")))
    wrong = out_of_range(config) or unusable_principal(config) or unusable_grants(config)
    if wrong is not None:
        key, problem = wrong
        raise ValueError(f"{sources[key]}: {problem}" if key in sources else problem)
    if origins is not None:
        origins.update(sources)
    return config


def environment_log_level() -> str:
    """The ``log_level`` that AGORA_LOG_LEVEL sets, else the default.

    For ``agora stdio --connect``, which reads no settings (the server it relays to has
    them; a bad AGORA_PORT meant for that server must not stop the relay) but still logs
    (its WebSocket library's records): the operator's level must reach it as it reaches
    every other command.

    Raises:
        ValueError: a word that is not a level, worded as `load_config` words it.
    """
    warn_unknown(Config.__struct_fields__)  # the relay's environment is an operator's too
    raw = os.environ.get("AGORA_LOG_LEVEL")
    if raw is None:
        return Config().log_level
    try:
        return msgspec.convert(_fold_case({"log_level": raw}), Config).log_level
    except msgspec.ValidationError as exc:
        raise ValueError(_located(str(exc), {"log_level": "AGORA_LOG_LEVEL"}, [])) from exc


def _fold_case(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``log_level`` in lower case, as its choices are written: ``INFO`` is the
    level operators write as often (``synchronous`` takes any case where it is checked)."""
    if isinstance(level := data.get("log_level"), str):
        data["log_level"] = level.lower()
    return data


def config_problem(config: Config) -> str | None:
    """Why the server cannot run with ``config``, or None: a value out of range, an unusable
    principal or an unknown toolset name, as `load_config` refuses them. For a `Config` built
    in code, which msgspec does not check (`agora.open_server` calls this before anything
    opens), its types first: ``Config(port="8903")`` would fail later, in a comparison, as a
    TypeError."""
    try:
        msgspec.convert(msgspec.to_builtins(config), Config, strict=True)
    except msgspec.ValidationError as exc:
        return _typed(str(exc), list(Config.__struct_fields__))
    unknown = [t for t in config.toolsets if t not in SERVABLE]
    if unknown:  # checked even when `open_server(toolsets=...)` replaces the list
        return _unknown_toolsets(unknown, "toolsets")
    wrong = out_of_range(config) or unusable_principal(config) or unusable_grants(config)
    return None if wrong is None else wrong[1]


def _unknown_toolsets(unknown: list[str], source: str | None) -> str:
    """``toolsets`` names toolsets no server has: which, the closest known, and where; and,
    unless a command-line flag named them (``agora`` serves built-in toolsets only), how an
    embedding program serves a toolset of its own, which a config file or AGORA_TOOLSETS
    (read by `load_config`) may name as a `Config` built in code may."""
    named = ", ".join(f"`{name}`" for name in unknown)
    message = f"unknown toolset{'s' if len(unknown) > 1 else ''} {named}"
    near = difflib.get_close_matches(unknown[0], KNOWN_TOOLSETS, n=1)
    if near:
        message += f"; did you mean `{near[0]}`?"
    message += f" (known: {', '.join(KNOWN_TOOLSETS)})"
    if not (source or "").startswith("--"):
        # Said to whoever reads it (`agora serve --config`, too): who it is for comes first.
        message += "; in a program embedding agora, a toolset of your own is passed built,"
        message += " not named: open_server(config, toolsets=[...])"
    return f"{source}: {message}" if source else message


def _located(problem: str, sources: dict[str, str], known: list[str]) -> str:
    """``problem`` (a msgspec message) prefixed with the source of the setting it names."""
    at = re.search(r"`\$\.(\w+)", problem)
    stray = None if at else re.search(r"unknown field `([^`]*)`", problem)
    message = _choice(problem) or (
        f"invalid configuration: unknown setting `{stray.group(1)}`"
        if stray is not None and not problem.count(" - at ")
        else f"invalid configuration: {problem}"
    )
    key = at.group(1) if at else stray.group(1) if stray else None
    if stray is not None:
        near = difflib.get_close_matches(stray.group(1), known, n=1)
        if near:
            message += f"; did you mean `{near[0]}`?"
    source = sources.get(key) if key is not None else None
    return f"{source}: {message}" if source else message


def _choice(problem: str) -> str | None:
    """A refused word for a setting with a fixed set of them (a msgspec message), worded
    like the others: ``log_level must be one of debug, info, warning, error, not 'loud'``."""
    wrong = re.fullmatch(r"Invalid enum value (.+) - at `\$\.(\w+)`", problem)
    fields = {f.name: f.type for f in msgspec.structs.fields(Config)}
    if wrong is None or wrong.group(2) not in fields:
        return None
    value, key = wrong.groups()
    return f"{key} must be one of {', '.join(get_args(fields[key]))}, not {value}"


#: msgspec's names of types, in the words of a refusal ("port must be an integer").
_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "array": "a list",
    "object": "a table",
}


def _typed(problem: str, known: list[str]) -> str:
    """A type refusal of a setting in the file (a msgspec message), worded like the others:
    ``port must be an integer, not a string``; any other problem as `_located` words it."""
    wrong = re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)` - at `\$\.(\w+)`", problem)
    if wrong is None:
        return _located(problem, {}, known)
    expected, got, key = wrong.groups()
    kinds = [t for t in expected.split(" | ") if t != "null"]  # TOML has no null to write
    wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in kinds)
    hint = ""
    if kinds == ["array"] and got == "object":  # [principals] for [[principals]]
        hint = f": write each entry as a [[{key}]] table (two brackets)"
    return f"{key} must be {wanted}, not {_TYPE_WORDS.get(got, got)}{hint}"


def _unconverted(problem: str, data: dict[str, Any], sources: dict[str, str]) -> str | None:
    """A variable's or flag's text that is not of its setting's type, said with the text:
    ``AGORA_PORT: port must be an integer, not 'abc'`` (its type, always a string, says
    nothing); None for any other problem."""
    wrong = re.fullmatch(r"Expected `([^`]+)`, got `str` - at `\$\.(\w+)`", problem)
    if wrong is None or wrong.group(2) not in sources:
        return None
    expected, key = wrong.groups()
    kinds = [t for t in expected.split(" | ") if t != "null"]
    wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in kinds)
    return f"{sources[key]}: {key} must be {wanted}, not {loggable(str(data[key]), 80)!r}"
