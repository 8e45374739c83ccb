"""What a run of the mixed load counted (`mixed.Mix.stats`): latencies by kind and tool,
refusals, JSON-RPC errors, broken connections, and whether the run measured a working server
(`Stats.lost`). Read by ``python -m bench`` and ``bench/soak.py`` for their reports.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stats:
    """Latency samples per operation kind, counts, refusals, broken connections.

    Attributes:
        calls: Calls answered with a result, refused ones (``isError``) included.
        errors: Calls answered with a JSON-RPC error instead (not in ``calls``).
        shutting_down: Those of them refused because the server was shutting down.
    """

    latencies: dict[str, list[float]] = field(default_factory=dict)
    refusals: Counter[str] = field(default_factory=Counter)
    broken: int = 0
    last_refusal: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    errors: int = 0
    shutting_down: int = 0
    timeline: list[tuple[float, float]] = field(default_factory=list)  # (done at, latency)
    #: Latency samples per tool (refusals included), for the per-toolset report.
    tools: dict[str, list[float]] = field(default_factory=dict)

    @property
    def refused(self) -> int:
        """Calls answered with a refusal (``isError``; their latencies are under ``refused``)."""
        return len(self.latencies.get("refused", ()))

    @property
    def succeeded(self) -> int:
        """Calls that did what they asked: the ones a rate of calls counts."""
        return self.calls - self.refused

    def sample(self, kind: str, seconds: float, tool: str = "") -> None:
        self.latencies.setdefault(kind, []).append(seconds)
        self.calls += 1
        self.timeline.append((time.perf_counter(), seconds))
        if tool:
            self.tools.setdefault(tool, []).append(seconds)

    def lost(self, sessions: int) -> str:
        """Why these figures do not describe a working server ("" if they do): it began
        shutting down under the load, or most of the ``sessions`` lost their connection (it
        was killed, or never reached). Such a run ends early and its refusals answer fast:
        its rates would read as a good run's."""
        reasons = []
        if self.shutting_down:
            reasons.append(
                f"the server began shutting down ({self.shutting_down} calls refused, -32011)"
            )
        if self.broken * 2 > sessions:
            reasons.append(f"{self.broken} of {sessions} sessions lost their connection")
        return "; ".join(reasons)
