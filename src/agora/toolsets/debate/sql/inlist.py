"""``IN (?, ...)`` lists of a few fixed lengths, so a connection's statement cache stays small.

A statement with one placeholder per value is a new statement text for every list length:
each is prepared and kept in the connection's statement cache (128 per sqlite3 connection,
each holding its compiled program), so reads over lists of every length from 1 to a few
hundred fill every reader's cache with ever larger programs, and the server's memory grows.
Padding a list to the next power of two by repeating its last value keeps a handful of texts
per statement; ``x IN (a, b, b)`` matches exactly the rows ``x IN (a, b)`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["in_list"]

_MARKS: dict[int, str] = {}


def in_list(values: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The placeholders and parameters of ``IN (...)`` over ``values`` (not empty: ``IN ()``
    is SQLite's, not standard SQL), padded to a power-of-two length."""
    size = 1 << (len(values) - 1).bit_length()
    marks = _MARKS.get(size)
    if marks is None:
        marks = _MARKS[size] = ",".join("?" * size)
    return marks, (*values, *(values[-1],) * (size - len(values)))
