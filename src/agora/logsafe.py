"""Caller-supplied values as agora logs them: escaped and cut, so none forges a log line.

Every value a client chose (an entity key such as a run id it named, the router's
``correlation_id``, an error text a client's ``roots/list`` answer carried) goes through
`loggable` before it reaches a log call: control and format characters (newline, carriage
return, ESC, NEL, U+2028/U+2029, bidi overrides, lone surrogates) and the backslash are
written as escapes, so one call makes at most one line and cannot paint the terminal, and a
value longer than `MAX_LOGGED` characters is cut with a marker saying how much was left out.
`one_line` does the same for a library's error text (psycopg's span several lines), and
`shown_url` leaves out a URL's or path's query, where a seat token travels.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import logging

#: Most characters of one caller-supplied value in a log line (before escaping).
MAX_LOGGED: Final = 160
#: Unicode categories written as escapes: control, format, surrogate, line/paragraph separator.
_ESCAPED: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(ch: str) -> str:
    if ch == "\\":
        return "\\\\"
    if unicodedata.category(ch) not in _ESCAPED:
        return ch
    code = ord(ch)
    if ch in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def loggable(value: object, limit: int = MAX_LOGGED) -> str:
    """``value`` (its ``str``) safe for one log line: escaped, and cut to ``limit`` characters
    with a ``...[+N chars]`` marker when longer."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit and text.isprintable() and "\\" not in text:
        return text  # the common case: a short printable id
    cut = len(text) - limit
    head = text[:limit] if cut > 0 else text
    escaped = "".join(map(_escape, head))
    return f"{escaped}...[+{cut} chars]" if cut > 0 else escaped


#: Most characters of a library's error text in a log line.
MAX_ERROR: Final = 1000


#: A path segment shown as it is: a name (a toolset's, a chess table's: 1 to 40 lower-case
#: letters, digits, ``_`` or ``-``). Anything else (a token typed after ``&`` or ``/`` instead
#: of ``?``, or in place of a table's name: agora's tokens hold capitals) is shown as ``…``,
#: with all after it.
NAME_SEGMENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


def shown_url(url: str) -> str:
    """``url`` (or a path) as a log line or a refusal shows it: its query, which may hold a
    seat token, as ``?…``, and from the first path segment that is no name (`NAME_SEGMENT`)
    on, ``…``, so a token typed in the path is not shown either."""
    base, mark, _ = url.partition("?")
    head = ""
    if "://" in base:  # scheme://host:port stays as it is
        scheme, _, rest = base.partition("://")
        netloc, slash, path = rest.partition("/")
        head, base = f"{scheme}://{netloc}", slash + path
    shown: list[str] = []
    for part in base.split("/"):
        if part and not NAME_SEGMENT.fullmatch(part):
            shown.append("…")
            break
        shown.append(part)
    return head + "/".join(shown) + ("?…" if mark else "")


def one_line(error: object) -> str:
    """A library's error text (``str(error)``) for one log line: every run of whitespace,
    line breaks included, made one space (libpq puts its hint on a line of its own, tab
    first), then escaped and cut like `loggable`."""
    return loggable(" ".join(str(error).split()), MAX_ERROR)


def entity_failed(
    log: logging.Logger, kind: str, key: Any, what: str, *, trace: bool = True
) -> None:
    """Log, at ERROR on ``log``, that ``what`` went wrong with entity ``key`` of ``kind``
    (with the traceback being handled, if ``trace``), the key escaped (callers choose keys)
    and ``what`` one line (it may quote a library's error: `one_line`)."""
    log.error("%s %s %s", kind, loggable(key), one_line(what), exc_info=trace)


def peer_name(sock: Any) -> str:
    """A connected socket's peer as the log names it (``host:port``; ``?`` once it is gone)."""
    try:
        name = sock.getpeername()
    except OSError:
        return "?"
    return f"{name[0]}:{name[1]}" if isinstance(name, tuple) else str(name) or "?"
