"""Value formats of the submit ops: how each is described, parsed and put in canonical form.

A lock states its format in words (``look`` prints `ValueFormat.describe`); `parse_value`
turns what an agent sent (a string or an array of strings, per the contract's inputSchema)
into the canonical tuple that is compared with the answer. A malformed value raises
`ValueFormatError` (the chamber's ``value_format_invalid``, which consumes no action).
Parsing is lenient about case, spacing and separators, never about content. This module
must not know any answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

FormatKind = Literal["time", "number", "digits", "order", "sequence", "placement", "bins"]

_SPLIT = re.compile(r"\s*,\s*")
_PAIR = re.compile(r"^\s*([^=:]+?)\s*[=:]\s*([^=:]+?)\s*$")


class ValueFormatError(ValueError):
    """A submitted value that does not have the lock's format."""


@dataclass(frozen=True, slots=True)
class ValueFormat:
    """The shape of one lock's answer.

    Attributes:
        kind: Which format.
        items: Names to arrange (order, placement, bins) or the alphabet (sequence).
        slots: Slot names (placement) or bin names (bins).
        length: Sequence length or number of digits.
        low: Smallest digit allowed (digits).
        high: Largest digit allowed (digits).
    """

    kind: FormatKind
    items: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    length: int = 0
    low: int = 0
    high: int = 9

    def describe(self) -> str:
        """The format in one sentence, without any example that could be an answer."""
        names = ", ".join(sorted(self.items))
        match self.kind:
            case "time":
                return 'a string "HH:MM" on the 24-hour clock'
            case "number":
                return f"a whole number from {self.low} to {self.high}, written in digits"
            case "digits":
                return (
                    f"a string of {self.length} digits, each from {self.low} to {self.high}, "
                    "optionally separated by dashes"
                )
            case "order":
                return f"a JSON array of all {len(self.items)} names, earliest first: {names}"
            case "sequence":
                return (
                    f"a JSON array of {self.length} names in order, each one of: {names} "
                    "(repeats allowed)"
                )
            case "placement":
                slots = ", ".join(self.slots)
                return (
                    f'a JSON array of {len(self.slots)} strings "slot=name", one per slot '
                    f"({slots}), using each of: {names}"
                )
            case "bins":
                bins = ", ".join(self.slots)
                return (
                    f'a JSON array of {len(self.items)} strings "name=bin", one per name '
                    f"({names}), bins: {bins}"
                )


def _as_list(value: str | list[str]) -> list[str]:
    if isinstance(value, str):
        parts = [p for p in _SPLIT.split(value.strip().strip("[]")) if p]
        return [p.strip().strip("\"'") for p in parts]
    return [str(v).strip() for v in value]


def _name(word: str, allowed: tuple[str, ...], what: str) -> str:
    low = word.strip().lower()
    if low not in allowed:
        raise ValueFormatError(f"{word!r} is not one of the {what}")
    return low


def _time(value: str | list[str]) -> tuple[str, ...]:
    if not isinstance(value, str):
        raise ValueFormatError('expected a string "HH:MM"')
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", value)
    if not m or int(m[1]) > 23 or int(m[2]) > 59:
        raise ValueFormatError('expected a time "HH:MM" between 00:00 and 23:59')
    return (f"{int(m[1]):02d}:{m[2]}",)


def _number(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    if not isinstance(value, str) or not re.fullmatch(r"\s*\d{1,6}\s*", value):
        raise ValueFormatError("expected a whole number written in digits, as a JSON string")
    if not fmt.low <= int(value) <= fmt.high:
        raise ValueFormatError(f"expected a number from {fmt.low} to {fmt.high}")
    return (str(int(value)),)


def _digits(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    text = value if isinstance(value, str) else "".join(value)
    digits = re.sub(r"[\s,\-]", "", text)
    if len(digits) != fmt.length or not digits.isdigit():
        raise ValueFormatError(f"expected exactly {fmt.length} digits")
    if any(not fmt.low <= int(d) <= fmt.high for d in digits):
        raise ValueFormatError(f"each digit must be from {fmt.low} to {fmt.high}")
    return tuple(digits)


def _order(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    names = [_name(w, fmt.items, "names of this lock") for w in _as_list(value)]
    if sorted(names) != sorted(fmt.items):
        raise ValueFormatError(f"expected each of the {len(fmt.items)} names exactly once")
    return tuple(names)


def _sequence(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    names = [_name(w, fmt.items, "names of this lock") for w in _as_list(value)]
    if len(names) != fmt.length:
        raise ValueFormatError(f"expected exactly {fmt.length} names")
    return tuple(names)


def _pairs(value: str | list[str], count: int) -> list[tuple[str, str]]:
    entries = _as_list(value)
    if len(entries) != count:
        raise ValueFormatError(f"expected exactly {count} entries")
    pairs = []
    for entry in entries:
        m = _PAIR.match(entry)
        if not m:
            raise ValueFormatError(f"{entry!r} is not of the form a=b")
        pairs.append((m[1].lower(), m[2].lower()))
    return pairs


def _placement(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    at: dict[str, str] = {}
    for a, b in _pairs(value, len(fmt.slots)):
        slot, item = (a, b) if a in fmt.slots else (b, a)
        slot = _name(slot, fmt.slots, "slots")
        item = _name(item, fmt.items, "names of this lock")
        if slot in at or item in at.values():
            raise ValueFormatError("each slot and each name must appear exactly once")
        at[slot] = item
    return tuple(at[s] for s in fmt.slots)


def _bins(fmt: ValueFormat, value: str | list[str]) -> tuple[str, ...]:
    into: dict[str, str] = {}
    for a, b in _pairs(value, len(fmt.items)):
        item, bin_ = (a, b) if a in fmt.items else (b, a)
        item = _name(item, fmt.items, "names of this lock")
        bin_ = _name(bin_, fmt.slots, "bins")
        if item in into:
            raise ValueFormatError("each name must appear exactly once")
        into[item] = bin_
    return tuple(into[i] for i in fmt.items)


def parse_value(fmt: ValueFormat, value: str | list[str] | None) -> tuple[str, ...]:
    """Parse a submitted value into the canonical form of ``fmt``.

    Args:
        fmt: The lock's format.
        value: What the agent sent.

    Returns:
        The canonical tuple, comparable with the lock's answer.

    Raises:
        ValueFormatError: if the value is missing or malformed.
    """
    if value is None:
        raise ValueFormatError("this op needs a value")
    match fmt.kind:
        case "time":
            return _time(value)
        case "number":
            return _number(fmt, value)
        case "digits":
            return _digits(fmt, value)
        case "order":
            return _order(fmt, value)
        case "sequence":
            return _sequence(fmt, value)
        case "placement":
            return _placement(fmt, value)
        case "bins":
            return _bins(fmt, value)
