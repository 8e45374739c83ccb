"""The flags of ``python -m bench`` (`bench/__main__.py`), checked against what each workload
reads: a flag a workload does not read is an argparse error naming it and what to give
instead, never a silent default (``soak --seconds 5`` ran its 30-minute default before).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli_args import non_negative_int, positive_float, positive_int, ws_url


def build_parser(description: str, workloads: list[str]) -> argparse.ArgumentParser:
    """The parser of ``python -m bench WORKLOAD [DIR] [flags] [-- workload's own flags]``."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=description)
    parser.add_argument("workload", choices=workloads)
    parser.add_argument(
        "directory",
        nargs="?",
        help="config: where to write agora.toml (default: the current directory)",
    )
    parser.add_argument(
        "--force", action="store_true", help="config: replace an agora.toml already there"
    )
    parser.add_argument(
        "--stalled", type=non_negative_int, help="clients: stalled sockets (default 2000)"
    )
    parser.add_argument(
        "--sessions",
        type=positive_int,
        help="sessions (default 1000; soak: its --sessions, parked: its --agents)",
    )
    parser.add_argument(
        "--seconds", type=positive_float, help="bound (default 30; soak: as its --minutes)"
    )
    parser.add_argument(
        "--url", action="append", type=ws_url, help="a running server's ws://HOST:PORT/mcp"
    )
    parser.add_argument(
        "--pid", type=positive_int, help="the pid of the --url server, to sample it"
    )
    parser.add_argument(
        "--nodes",
        type=positive_int,
        help="mixed, clients: agora nodes on one PostgreSQL (implies --store)",
    )
    parser.add_argument("--store", choices=["sqlite", "postgresql"], help="default sqlite")
    parser.add_argument("--pg", help="a PostgreSQL server URL (else one is started)")
    parser.add_argument("--out", type=Path, help="where reports go (default bench/results)")
    return parser


#: The flags of ``python -m bench`` that each workload reads (besides ``--out``); any other
#: one given is refused, never ignored. soak, parked and the scripts get theirs as their own
#: flags (`own_flags`).
SERVER = ("sessions", "seconds", "url", "pid", "nodes", "store", "pg")
USES: dict[str, tuple[str, ...]] = {
    "mixed": SERVER,
    "clients": (*SERVER, "stalled"),
    "soak": ("sessions", "seconds"),
    "parked": ("sessions",),
    "peer": ("sessions", "seconds"),
    "ceilings": ("sessions", "seconds"),
    "ws_calls": ("sessions", "seconds"),
    "chess_tables": ("seconds",),
    "debate_load": ("seconds",),
}
#: Where a workload that runs with its own flags takes ours (else under the same name).
SPELLED = {"soak": {"seconds": "--minutes"}, "parked": {"sessions": "--agents"}}
DEFAULTS = {"sessions": 1000, "seconds": 30.0, "stalled": 2000, "nodes": 1, "store": "sqlite"}


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The arguments, and the workload's own flags (after ``--``), mapped and checked: a flag
    the workload does not read is an error naming it, not a silent default."""
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:cut]), argv[cut + 1 :]
    workload = args.workload
    uses = USES.get(workload, ())
    for name in (n for n in (*SERVER, "stalled") if getattr(args, n) is not None):
        if name not in uses:
            parser.error(f"{workload} does not read --{name}; {unused_hint(workload, name)}")
    if args.directory is not None and workload != "config":
        parser.error(f"{workload} takes no directory (only config does): {args.directory}")
    if args.force and workload != "config":
        parser.error(f"{workload} does not read --force (only config does)")
    if workload == "config" and (extra or args.out is not None):
        parser.error("config takes a directory only: python -m bench config [DIR] [--force]")
    if workload in ("mixed", "clients"):
        server_flags(parser, args, extra)
    elif workload != "config":
        extra = own_flags(parser, args, extra)
    return args, extra


def server_flags(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """Check the flags of ``mixed`` and ``clients`` against each other; fill in defaults."""
    if extra:
        parser.error(f"{args.workload} has no flags of its own after --: {' '.join(extra)}")
    if args.url and (args.nodes or args.store or args.pg):
        parser.error("--url runs against servers already running: no --nodes, --store, --pg")
    if args.pid and not args.url:
        parser.error("--pid names the --url server to sample: it needs --url")
    if args.pid and not Path(f"/proc/{args.pid}/stat").exists():
        parser.error(
            f"--pid {args.pid}: no such process on this machine; give the pid of the --url "
            "server (pgrep -f 'agora serve')"
        )
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.nodes > 1 or args.pg:
        args.store = "postgresql"


def own_flags(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> list[str]:
    """``extra`` (the workload's own flags) with ours it reads put first, each spelled as it
    spells it (soak's ``--minutes`` from ``--seconds``); one given both ways is refused."""
    mapped = []
    for name in USES.get(args.workload, ()):
        value = getattr(args, name)
        if value is None:
            continue
        flag = SPELLED.get(args.workload, {}).get(name, f"--{name}")
        if any(a == flag or a.startswith(f"{flag}=") for a in extra):
            parser.error(f"--{name} and {args.workload}'s own {flag} both given: give one")
        if flag == "--minutes":
            value = f"{value / 60:g}"
        mapped += [flag, str(value)]
    return mapped + extra


def unused_hint(workload: str, name: str) -> str:
    """What to give instead of ``--name``, which ``workload`` does not read."""
    if name in ("url", "pid", "nodes", "store", "pg") and workload != "config":
        return f"{workload} starts its own server (--{name} is for mixed and clients)"
    if workload == "config":
        return "config takes a directory only: python -m bench config DIR"
    if workload == "parked":
        return (
            "parked runs until its wakes are timed: its own flags go after --, e.g. -- --wakes 200"
        )
    script = "soak.py" if workload == "soak" else f"{workload}.py"
    return f"give bench/{script}'s own flags after --, e.g. python -m bench {workload} -- --help"
