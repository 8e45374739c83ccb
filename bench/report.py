"""Reports of ``python -m bench``: machine info, figures, a JSON file, a Markdown summary, a chart.

`Report` gathers what a workload measured (`Report.latencies` per operation kind, counters,
server CPU and RSS, a per-second timeline) and `Report.write` puts
``bench/results/<date>-<time>-<workload>.json``, ``.md`` and ``.png`` side by side (the
start's UTC time to the second, and ``-2``, ``-3`` ... if that name is taken: a run never
replaces an earlier one). The chart needs
matplotlib (an optional bench dependency: ``pip install matplotlib``, or the ``bench`` extra);
without it the PNG is skipped and the summary says so. `Progress` draws the progress bar on
stderr. Imported by ``bench/__main__.py`` and the workloads; never by agora.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio
from measure import percentile

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def machine() -> dict[str, Any]:
    """CPU, cores, memory, load, Python, OS and the agora commit of this run."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_kib": int(mem),
        "load_average": os.getloadavg(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "agora_commit": commit,
    }


def latency_summary(samples: list[float]) -> dict[str, float]:
    """Count and p50/p95/p99/max in milliseconds."""
    if not samples:
        return {"count": 0}
    ms = [s * 1000 for s in samples]
    return {
        "count": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 3),
        "p95_ms": round(percentile(ms, 0.95), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3),
    }


def timeline(events: list[tuple[float, float]], start: float) -> list[dict[str, float]]:
    """Per-second calls and p50/p99 latency from (done at, latency) pairs."""
    buckets: dict[int, list[float]] = {}
    for done, latency in events:
        buckets.setdefault(int(done - start), []).append(latency * 1000)
    return [
        {
            "second": s,
            "calls": len(v),
            "p50_ms": round(percentile(v, 0.5), 3),
            "p99_ms": round(percentile(v, 0.99), 3),
        }
        for s, v in sorted(buckets.items())
        if s >= 0
    ]


@dataclass
class Report:
    """One workload run."""

    workload: str
    parameters: dict[str, Any]
    command: str = field(default_factory=lambda: " ".join([sys.executable, *sys.argv]))
    started: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())
    machine: dict[str, Any] = field(default_factory=machine)
    figures: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, dict[str, float]] = field(default_factory=dict)
    per_second: list[dict[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Why the figures do not describe a working server (the server went away, most
    #: connections broke): said first in the summary, and ``python -m bench`` exits 1.
    failure: str = ""

    def write(self, out: Path = RESULTS) -> Path:
        """Write the JSON, Markdown and (with matplotlib) PNG files; return the JSON path."""
        out.mkdir(parents=True, exist_ok=True)
        stem = self._stem(out)
        self.machine["load_average_end"] = os.getloadavg()
        chart = _chart(self, stem.with_suffix(".png"))
        if chart is None and self.per_second:
            self.notes.append("no chart: matplotlib is not installed (pip install matplotlib)")
        stem.with_suffix(".json").write_text(json.dumps(asdict(self), indent=2) + "\n")
        stem.with_suffix(".md").write_text(self.markdown(chart))
        return stem.with_suffix(".json")

    def _stem(self, out: Path) -> Path:
        """``out/<date>-<hhmmss>-<workload>``, made unique: two runs the same day (or second)
        must not overwrite each other's report."""
        when = f"{self.started[:10]}-{self.started[11:19].replace(':', '')}"
        base = stem = out / f"{when}-{self.workload}"
        n = 1
        while any(stem.with_suffix(s).exists() for s in (".json", ".md", ".png")):
            n += 1
            stem = base.with_name(f"{base.name}-{n}")
        return stem

    def markdown(self, chart: Path | None) -> str:
        lines = [f"# bench `{self.workload}` {self.started[:19]}Z", "", f"`{self.command}`", ""]
        if self.failure:
            lines += [
                f"**FAILED: {self.failure}.** These figures do not measure a working server.",
                "",
            ]
        lines += [f"- {k}: {v}" for k, v in self.machine.items()]
        lines += ["", "## Figures", "", *self._figures()]
        if chart is not None:
            lines += ["", f"![latency and throughput]({chart.name})"]
        lines += ["", *[f"Note: {n}" for n in self.notes]]
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        """What ``python -m bench`` prints once the run is over: the figures, the latency
        table and the notes (the machine, the chart and the per-second timeline are in the
        files)."""
        lines = [f"bench {self.workload}: {self.command}", "", *self._figures()]
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _figures(self) -> list[str]:
        """The figures, one per line, then the latency table if there is one."""
        lines = [f"- {k}: {v}" for k, v in self.figures.items()]
        if self.latency:
            lines += ["", "| operation | count | p50 ms | p95 ms | p99 ms | max ms |"]
            lines += ["|---|---|---|---|---|---|"]
            for kind, s in self.latency.items():
                cells = [s.get(k, "") for k in ("count", "p50_ms", "p95_ms", "p99_ms", "max_ms")]
                lines.append(f"| {kind} | " + " | ".join(str(c) for c in cells) + " |")
        return lines


def _chart(report: Report, path: Path) -> Path | None:
    if not report.per_second:
        return None
    try:
        import matplotlib as mpl

        mpl.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    seconds = [p["second"] for p in report.per_second]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    top.plot(seconds, [p["calls"] for p in report.per_second])
    top.set_ylabel("calls/s")
    top.set_title(f"{report.workload}: throughput and latency")
    bottom.plot(seconds, [p["p50_ms"] for p in report.per_second], label="p50")
    bottom.plot(seconds, [p["p99_ms"] for p in report.per_second], label="p99")
    bottom.set_ylabel("ms")
    bottom.set_xlabel("second")
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


class Progress:
    """A progress bar on stderr: elapsed against the bound, and a count."""

    def __init__(self, label: str, seconds: float, count: Any) -> None:
        self.label = label
        self.seconds = seconds
        self.count = count  # a callable returning the count so far
        self.start = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def draw(self, final: bool = False) -> None:
        elapsed = time.perf_counter() - self.start
        done = min(1.0, elapsed / self.seconds) if self.seconds else 1.0
        bar = "#" * int(done * 30)
        n = self.count()
        rate = n / elapsed if elapsed else 0.0
        text = f"{self.label} [{bar:<30}] {elapsed:6.1f}/{self.seconds:.0f} s"
        text += f" {n:>9,} ({rate:,.0f}/s)"
        end = "\n" if final or not self.tty else ""
        print(("\r" if self.tty else "") + text, end=end, file=sys.stderr, flush=True)

    async def run(self) -> None:
        """Redraw every half second (every 5 s when stderr is not a terminal) until cancelled."""
        try:
            while True:
                await trio.sleep(0.5 if self.tty else 5.0)
                self.draw()
        finally:
            self.draw(final=True)
