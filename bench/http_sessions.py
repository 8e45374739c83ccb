"""An anonymous flood of Streamable HTTP ``initialize`` POSTs: what the session caps hold back.

Starts ``agora serve --conformance`` (a temp database) and sends ``--posts`` initialize
requests from ``--connections`` kept-alive connections, never deleting a session, as a
careless or hostile client would. Prints how many were accepted (200: past
``max_sessions_per_principal`` each evicts the principal's least recently used idle session)
and refused (503: none idle, or ``max_sessions``), the server's resident memory before and
after, and ``/healthz``'s session count. Nothing here runs in CI.

Usage: ``.venv/bin/python bench/http_sessions.py [--posts 100000] [--connections 20]``
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path

import trio
from cli_args import int_range
from lean import INITIALIZE_BYTES, LeanHttp
from measure import healthz, vm_rss
from serve import agora_serve


async def run(args: argparse.Namespace) -> None:
    statuses: collections.Counter[int] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        async with agora_serve(Path(tmp) / "a.db", "conformance", conformance="true") as server:
            before = vm_rss(server.pid)
            per_connection = args.posts // args.connections
            t0 = time.perf_counter()

            async def flood() -> None:
                client = LeanHttp(server.port, "/mcp/conformance")
                for _ in range(per_connection):
                    status, _, _ = await client.post(INITIALIZE_BYTES)
                    statuses[status] += 1
                await client.aclose()

            async with trio.open_nursery() as nursery:
                for _ in range(args.connections):
                    nursery.start_soon(flood)
            seconds = time.perf_counter() - t0
            after = vm_rss(server.pid)
            sessions = int((await healthz(server.port))["sessions"])
    total = sum(statuses.values())
    print(f"{total:,} initialize POSTs in {seconds:.1f} s: {dict(statuses)}")
    print(f"VmRSS {before / 2**20:.0f} MiB -> {after / 2**20:.0f} MiB; sessions held: {sessions}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--posts", type=int_range(1, 1_000_000), default=100_000, help="initialize POSTs in all"
    )
    parser.add_argument(
        "--connections", type=int_range(1, 1000), default=20, help="kept-alive connections"
    )
    args = parser.parse_args()
    if args.posts < args.connections:  # each connection sends posts // connections
        parser.error("--posts must be at least --connections")
    trio.run(run, args)


if __name__ == "__main__":
    main()
