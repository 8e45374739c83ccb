"""What ``/healthz`` tells of the server's process itself: its resident memory.

An operator watching a node's memory had to find its pid and read /proc; ``rss_bytes`` in
``/healthz`` carries it to wherever the probe's answers go. It costs one small read of
``/proc/self/statm`` (constant time, whatever the heap). Open descriptors are not counted
here: on Linux that means listing ``/proc/self/fd``, one entry per connection, which a
probe must not do under 20,000 of them (read ``/proc/PID/fd`` from outside instead).
"""

from __future__ import annotations

import os


def resident_bytes() -> int | None:
    """This process's resident set size in bytes (``/proc/self/statm``'s second field
    times the page size); None where there is no /proc (or it cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")
