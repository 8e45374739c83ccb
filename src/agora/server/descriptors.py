"""File descriptors: raising the process's open-files limit, and the connections it allows.

Every TCP connection holds a descriptor, and so do the server's own files. Past the
RLIMIT_NOFILE soft limit ``accept`` fails with EMFILE and a new client waits in the listen
queue with no answer, however far below ``max_connections`` the server is: under ``ulimit
-n 256`` a ``GET /healthz`` hung while 300 idle connections were open. So `agora serve`
raises the soft limit to the hard one (`raise_open_files_limit`; an embedding program keeps
its own, as it does its switch interval), and the server lowers its connection cap to the
limit minus `HEADROOM` (`connection_cap`): past the cap a client gets the documented 503.
Nothing here opens, accepts or closes anything.
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger(__name__)

#: Descriptors kept out of the connection cap for the server's own use: stdin, stdout,
#: stderr and log files; the event loop's epoll and wake-up pair; the listeners (one per
#: address family); the database (its file, WAL and WAL index for the writer, the
#: checkpointer and up to four readers, the lock file, the writer process's pipes);
#: subprocesses' pipes (a router adapter run takes three); and the connections being
#: refused with 503 while the server is full (each holds one for a second or two).
#: A server at idle holds about 25.
HEADROOM = 64
#: Refusals (503s) in progress at once, out of `HEADROOM`: each holds its descriptor while
#: it reads the head (up to a second) and lingers. Past this many, a newcomer takes the
#: place of the oldest one still waiting for its head, or is sent a short 503 without
#: waiting and closed at once (`agora.transports.overflow`), so that refusals cannot exhaust
#: the descriptors (under a limit of 200 they reached it and ``accept`` failed for seconds).
MAX_REFUSING = HEADROOM // 2


def open_files_limit() -> tuple[int, int]:
    """The (soft, hard) RLIMIT_NOFILE of this process (`resource.RLIM_INFINITY`: none)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def raise_open_files_limit() -> None:
    """Raise the soft open-files limit to the hard one, if lower, and log it (INFO).

    For `agora serve`, whose process is the server's own. A hard limit of "unlimited" is
    taken as the most the kernel allows a process (``/proc/sys/fs/nr_open`` on Linux); a
    limit the system refuses to raise is left as it is, and said so (WARNING).
    """
    soft, hard = open_files_limit()
    if soft == resource.RLIM_INFINITY:
        return
    target = hard if hard != resource.RLIM_INFINITY else _kernel_most()
    if target is None or soft >= target:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("open files limit left at %d: raising it to %d failed: %s", soft, target, exc)
        return
    log.info("open files limit raised from %d to %d (the hard limit)", soft, target)


def _kernel_most() -> int | None:
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def connection_cap(max_connections: int, soft_limit: int | None = None) -> int:
    """The connections the server takes at once: ``max_connections``, lowered to what the
    open-files limit leaves once `HEADROOM` is kept (at least 1); a lowered cap is logged
    with what to change (WARNING; DEBUG when lowered by the headroom alone).

    Args:
        max_connections: The setting.
        soft_limit: The soft RLIMIT_NOFILE (default: this process's).

    Returns:
        The cap a new connection is counted against (past it: 503).
    """
    if soft_limit is None:
        soft_limit = open_files_limit()[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit - HEADROOM >= max_connections:
        return max_connections
    cap = max(soft_limit - HEADROOM, 1)
    # A limit equal to the setting (20,000 both, the default on many hosts) lowers the cap
    # by the headroom alone: not worth the first line of every start (DEBUG, for -v).
    level = logging.DEBUG if max_connections - cap <= HEADROOM else logging.WARNING
    log.log(
        level,
        "max_connections lowered from %d to %d: this process may open %d files"
        " (RLIMIT_NOFILE), %d of them kept for the database, listeners, logs and"
        " subprocesses; raise the limit (ulimit -n, systemd LimitNOFILE=) to serve more",
        max_connections,
        cap,
        soft_limit,
        HEADROOM,
    )
    return cap
