"""CPU caps and CPU accounting for the processes a bench starts, with cgroup v1.

This machine mounts the cgroup v1 ``cpu`` and ``cpuacct`` hierarchies (the v2 tree at
``/sys/fs/cgroup/unified`` has no cpu controller). A `CpuGroup` makes one directory in each:
in ``cpu``, ``cpu.cfs_quota_us`` over a 10 ms period caps its processes at ``cores`` (0.5:
half a core); in ``cpuacct``, ``cpuacct.usage`` counts the CPU of every process in it,
children forked later included (how PostgreSQL's backends are counted). ``cpu.stat`` says
how often the cap throttled them. `CpuGroup.remove` moves what is left to the root group
and removes both directories. Needs root; `available` says whether it can work here.
Imported by bench scripts; never by agora.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

CPU = Path("/sys/fs/cgroup/cpu")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
#: The quota's period. Short, so that a capped node waits at most a few ms when throttled
#: (with the default 100 ms, a node at 0.25 core could stall for 75 ms at a time).
PERIOD_US = 10_000


def available() -> str | None:
    """None if caps can be set here, else why not."""
    if not (CPU / "cpu.cfs_quota_us").exists():
        return "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
    if not (CPUACCT / "cpuacct.usage").exists():
        return "no cgroup v1 cpuacct controller at /sys/fs/cgroup/cpuacct"
    if not os.access(CPU, os.W_OK):
        return "/sys/fs/cgroup/cpu is not writable (not root?)"
    return None


class CpuGroup:
    """One cgroup in ``cpu`` (capped at ``cores``, or uncapped if None) and in ``cpuacct``."""

    def __init__(self, name: str, cores: float | None) -> None:
        self.name = name
        self.cores = cores
        self.cpu = CPU / name
        self.acct = CPUACCT / name
        self.cpu.mkdir(exist_ok=True)
        self.acct.mkdir(exist_ok=True)
        quota = -1 if cores is None else round(cores * PERIOD_US)
        (self.cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (self.cpu / "cpu.cfs_quota_us").write_text(str(quota))

    def add(self, pid: int) -> None:
        """Move process ``pid`` (all its threads) into both groups."""
        for group in (self.cpu, self.acct):
            (group / "cgroup.procs").write_text(str(pid))

    def usage(self) -> float:
        """CPU seconds used by the group's processes since it was made."""
        return int((self.acct / "cpuacct.usage").read_text()) / 1e9

    def throttled(self) -> tuple[int, int, float]:
        """(periods, periods throttled, seconds throttled) from ``cpu.stat``."""
        stat = dict(line.split() for line in (self.cpu / "cpu.stat").read_text().splitlines())
        return int(stat["nr_periods"]), int(stat["nr_throttled"]), int(stat["throttled_time"]) / 1e9

    def remove(self) -> None:
        """Move any process left to the root groups, then remove both directories."""
        for group, root in ((self.cpu, CPU), (self.acct, CPUACCT)):
            with contextlib.suppress(OSError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        (root / "cgroup.procs").write_text(pid)
                group.rmdir()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
    return out
