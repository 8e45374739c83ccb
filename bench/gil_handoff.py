"""What the GIL costs the store's writer thread while the event loop keeps a core busy.

A stand-in for the Trio thread (a pure-Python loop that never blocks, as the event loop
under load) runs beside a writer that does what `agora.store.writer` does per batch: BEGIN
IMMEDIATE, ``--statements`` small INSERTs, COMMIT (``synchronous=FULL``: an fsync) on a WAL
file in a temporary directory. For each switch interval (``--intervals``, ms; 5 is the
interpreter's default) it prints the median and p99 wall time of each step, and how many
loop iterations the busy thread ran during the statements and during the COMMIT (0: it
never got the GIL).

What it shows on this machine: a short sqlite3 call releases the GIL and takes it back
before the waiting thread wakes, so the statements cost no hand-off whatever their number;
a long release (the fsync of COMMIT, and likewise the writer's wake-up from its queue)
hands the GIL to the busy thread, and the writer then waits up to one switch interval to
get it back. So a batch pays about one interval per long release, not one per statement,
and a shorter interval (the ``switch_interval_ms`` setting) is what shortens that wait.

Usage: ``.venv/bin/python bench/gil_handoff.py [--batches 200] [--statements 40]
[--intervals 5,1,0.5,0.2]``. Never imported by agora; no server is started.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

from cli_args import positive_floats, positive_int
from measure import percentile


class Busy:
    """A thread that spins in Python until stopped, counting its iterations."""

    def __init__(self) -> None:
        self.count = 0
        self.stop = False
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def _spin(self) -> None:
        while not self.stop:
            self.count += 1


def run(
    conn: sqlite3.Connection, busy: Busy, batches: int, statements: int
) -> dict[str, list[float]]:
    """Time ``batches`` transactions; the samples of each step."""
    samples: dict[str, list[float]] = {"statements": [], "commit": [], "spins": [], "cspins": []}
    clock = time.perf_counter
    row = ("x" * 60, "y" * 120)
    for _ in range(batches):
        conn.execute("BEGIN IMMEDIATE")
        spins, started = busy.count, clock()
        for _ in range(statements):
            conn.execute("INSERT INTO t(b, c) VALUES (?, ?)", row)
        ended = clock()
        samples["statements"].append(ended - started)
        samples["spins"].append(busy.count - spins)
        spins = busy.count
        conn.execute("COMMIT")
        samples["commit"].append(clock() - ended)
        samples["cspins"].append(busy.count - spins)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=positive_int, default=200)
    parser.add_argument("--statements", type=positive_int, default=40)
    parser.add_argument(
        "--intervals",
        type=positive_floats,
        default=[5.0, 1.0, 0.5, 0.2],
        help="switch intervals, ms",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        conn = sqlite3.connect(Path(directory) / "gil.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c TEXT)")
        busy = Busy()
        busy.thread.start()
        print(f"{args.batches} batches of {args.statements} INSERTs + COMMIT beside a busy thread")
        for interval in args.intervals:
            sys.setswitchinterval(interval / 1e3)
            s = run(conn, busy, args.batches, args.statements)
            steps = {k: [v * 1e3 for v in s[k]] for k in ("statements", "commit")}
            p50 = {k: percentile(v, 0.5) for k, v in steps.items()}
            p99 = {k: percentile(v, 0.99) for k, v in steps.items()}
            print(
                f"switch interval {interval:g} ms: statements p50 {p50['statements']:.2f}"
                f" / p99 {p99['statements']:.2f} ms (busy thread ran in "
                f"{sum(1 for n in s['spins'] if n)} of {args.batches}); COMMIT p50 "
                f"{p50['commit']:.2f} / p99 {p99['commit']:.2f} ms"
                f" (busy thread ran in {sum(1 for n in s['cspins'] if n)} of {args.batches})"
            )
        busy.stop = True
        busy.thread.join()
        conn.close()


if __name__ == "__main__":
    main()
