"""The command's log on stderr: one line per record, stamped in UTC to the millisecond.

An operator lines a server's log up with a balancer's, a database's and other nodes': each
line begins with when it was written (``2026-12-02T08:05:01.123Z``, ISO 8601, UTC whatever
the host's time zone), then the level, the logger and the message. The level is the
``log_level`` setting (`agora.config.Config`), or debug with ``-v``. Nothing here is used
by an embedding program, which configures its own logging.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: The ``log_level`` setting's words, and the level each means.
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


class UtcFormatter(logging.Formatter):
    """`FORMAT` with ``asctime`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC)."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """The record's creation time in UTC, to the millisecond, with a ``Z``."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{stamp}.{int(record.msecs):03d}Z"


def configure(stream: TextIO, level: int) -> None:
    """Log every record at ``level`` or above to ``stream``, one stamped line each."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(UtcFormatter(FORMAT))
    logging.basicConfig(level=level, handlers=[handler])


def set_level(setting: str) -> None:
    """Apply the ``log_level`` setting (one of `LEVELS`) to the root logger."""
    logging.getLogger().setLevel(LEVELS[setting])
