"""What the bench entry points share to answer an operator's mistake with one line, not a
traceback: argparse types that refuse a count, a duration, a rate, a port or a name out of
range (exit 2, the usage naming the flag), a ``--url`` that is not ``ws://HOST:PORT/...``
(exit 2), and `OperatorError`
for what only shows once the bench runs (a server that cannot be reached, one that refuses
the bench's token): `operator_errors` turns it into one line on stderr and exit status 1.
Any other exception is a bug of the bench or the server and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import trio
from wsload import LeanWebSocket

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

#: What ``python -m bench config DIR`` writes: the file a ``--url`` server must be started
#: with (``agora serve --config``) so that it knows the bench's principal.
START_WITH_CONFIG = (
    "start the server with --config on the agora.toml that `python -m bench config DIR` writes"
)


N = TypeVar("N", int, float)

#: The largest count, duration or rate a flag takes: anything above is a typo (``1e300``
#: seconds would run for ever, ``10**12`` agents would be allocated before any started).
MOST = 10**9

#: The values of SQLite's ``synchronous`` pragma that ``agora serve`` takes (`agora.config`).
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


class OperatorError(Exception):
    """A mistake of the operator's that shows only once the bench runs; its message is the
    whole line the operator gets."""


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = _number(int, text, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return _at_most(value, text)


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    value = _number(int, text, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return _at_most(value, text)


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (a duration, a rate)."""
    value = _number(float, text, "a number")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, not {text}")
    return _at_most(value, text)


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number of at least 0."""
    value = _number(float, text, "a number")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return _at_most(value, text)


def fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1 (a share)."""
    value = _number(float, text, "a number")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, not {text}")
    return value


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (a port: 0 to 65535).

    Args:
        low: The least value taken.
        high: The greatest value taken.

    Returns:
        The type, for ``add_argument(type=...)``.
    """

    def parse(text: str) -> int:
        value = _number(int, text, "an integer")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {text}")
        return value

    return parse


def positive_ints(text: str) -> list[int]:
    """An argparse type: comma-separated integers, each at least 1 (``1,10,100``)."""
    return [positive_int(item) for item in text.split(",")]


def positive_floats(text: str) -> list[float]:
    """An argparse type: comma-separated numbers, each above 0 (``5,1,0.5``)."""
    return [positive_float(item) for item in text.split(",")]


def names(choices: Iterable[str], *, none_ok: bool = False) -> Callable[[str], list[str]]:
    """An argparse type: comma-separated names, each one of ``choices``.

    Args:
        choices: The names taken.
        none_ok: Whether an empty list (``''``) is taken.

    Returns:
        The type, for ``add_argument(type=...)``.
    """
    known = tuple(choices)

    def parse(text: str) -> list[str]:
        given = [name for name in text.split(",") if name]
        unknown = [name for name in given if name not in known]
        if unknown or not (given or none_ok):
            what = f"unknown {', '.join(unknown)}" if unknown else "none given"
            raise argparse.ArgumentTypeError(f"{what}; give some of {','.join(known)}")
        return given

    return parse


def _number(kind: type[N], text: str, what: str) -> N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}") from None


def _at_most(value: N, text: str) -> N:
    """``value`` if it is finite and at most `MOST` (infinity and NaN are left to the
    callers' own checks, which name the range they take)."""
    if value > MOST and value != float("inf"):
        raise argparse.ArgumentTypeError(f"must be at most {MOST:,}, not {text}")
    return value


def ws_url(text: str) -> str:
    """An argparse type: ``ws://HOST:PORT/PATH``, the WebSocket endpoint the benches load."""
    example = "give ws://HOST:PORT/mcp"
    if not text.startswith("ws://"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a ws:// URL; {example}")
    host = text.removeprefix("ws://").partition("/")[0]
    name, colon, port = host.rpartition(":")
    if not (colon and name and port.isdigit() and 0 < int(port) < 65536):
        raise argparse.ArgumentTypeError(f"{text!r} names no HOST:PORT; {example}")
    return text


async def check_reachable(urls: list[str], token: str) -> None:
    """Open a WebSocket to each of ``urls`` with ``token``, so that a server that is not
    there, or does not know the bench's principal, is one `OperatorError` before the load
    starts rather than a traceback from each of its sessions."""
    for url in urls:
        try:
            with trio.fail_after(10):
                socket = await LeanWebSocket.connect(url, token)
        except trio.TooSlowError:
            raise OperatorError(f"{url}: no WebSocket handshake within 10 s") from None
        except ConnectionError as e:
            status = str(e)
            if " 401 " in f"{status} ":
                raise OperatorError(
                    f"{url} refused the bench's token ({status}): {START_WITH_CONFIG}"
                ) from None
            raise OperatorError(f"{url} refused the WebSocket handshake: {status}") from None
        except OSError as e:
            raise OperatorError(f"cannot connect to {url}: {_reason(e)}") from None
        await socket.aclose()


def _reason(error: OSError) -> str:
    """Why a connection failed: trio's "all attempts ... failed" names no cause; the
    attempts' own errors (its ``__cause__``) do."""
    cause = error.__cause__
    if isinstance(cause, BaseExceptionGroup):
        causes = {getattr(e, "strerror", None) or str(e) for e in cause.exceptions}
        return f"{error} ({'; '.join(sorted(causes))}): is the server running there?"
    return str(error)


@contextmanager
def operator_errors(prog: str) -> Iterator[None]:
    """Turn an `OperatorError` (alone, or the only kind in an exception group, as a trio
    nursery raises it) into one line on stderr and exit status 1."""
    try:
        yield
    except OperatorError as e:
        sys.exit(f"{prog}: {e}")
    except BaseExceptionGroup as group:
        mine, rest = group.split(OperatorError)
        if mine is None or rest is not None:
            raise
        first: BaseException = mine
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        sys.exit(f"{prog}: {first}")
