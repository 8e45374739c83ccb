"""The debate vocabulary and its pure rules: ids, roles, kinds, lifecycle, lanes, time stamps.

Everything here is a constant or a pure function over plain values, shared by the handlers
(shape checks before any actor is asked), the topic entity and the read paths. Errors are
`DebateError` carrying the structured body a model reads. This module must not import trio,
touch SQL or know about callers and ownership (see `access`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Final

import msgspec

from agora.mcp.guard import MAX_DEPTH
from agora.mcp.jsonrpc import bracket_shape, decode_problem, nested_deeper

UUID_RE: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ROLE_RE: Final = re.compile(r"^[A-Z][A-Z0-9_]+$")
EXECUTOR_RE: Final = re.compile(r"^EXECUTOR_[1-9][0-9]*$")
PROJECT_RE: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ISO_RE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?Z$")
LANE_RE: Final = re.compile(r"^P[0-7]$")
OODA_RE: Final = re.compile(r"\bOBSERVE\b.*\bORIENT\b.*\bDECIDE\b.*\bACT\b", re.DOTALL | re.I)
STATE_BODY_RE: Final = re.compile(r"^(INIT|ACTIVE|RESOLVED|ARCHIVED)( \[reason: .+\])?$")

#: The stored project of a legacy topic whose project was never set: it denies everyone.
SENTINEL_PROJECT: Final = "*unset*"
DEFERRED_PREFIX: Final = "[DEFERRED:"
PROTOCOL_V1: Final = "debate/v1"
PRIORITY_RANK: Final = {"H": 3, "M": 2, "L": 1, "INFO": 0}
STATES: Final = ("INIT", "ACTIVE", "RESOLVED", "ARCHIVED")
#: Every message kind: the legacy and control kinds, then debate/v1's semantic kinds.
KINDS: Final = (
    *("Q", "A", "STATUS", "DECISION", "PING", "WATERMARK", "STATE", "COMPACTION", "INFO"),
    *("CLAIM", "CHALLENGE", "EVIDENCE", "REBUT", "CONCEDE", "VERIFY", "DISSENT", "ESCALATE"),
)
TRANSITIONS: Final = {"INIT": "ACTIVE", "ACTIVE": "RESOLVED", "RESOLVED": "ARCHIVED"}
OPEN_STATES: Final = ("INIT", "ACTIVE")
DEFAULT_VEHICLE: Final = "analysis"
READ_LIMIT, READ_MAX = 200, 1000
SIGNAL_LIMIT, SIGNAL_MAX = 200, 1000
SEARCH_LIMIT, SEARCH_MAX = 50, 200
#: A cursor before every message: compound (ts, msg_id) comparisons start here.
START: Final = ("", "")
#: Sorts after every msg_id: ``(ts, AFTER_ALL_IDS)`` is a cursor past everything at ``ts``
#: (``since_ts`` is exclusive; message timestamps are unique within a topic).
AFTER_ALL_IDS: Final = "~"


#: Each session's inbox, a resource a client can subscribe to.
INBOX_URI: Final = "debate://inbox/{session_id}"


def inbox_uri(session_id: str) -> str:
    """The URI of a session's inbox resource."""
    return f"debate://inbox/{session_id}"


class DebateError(ValueError):
    """A rejected debate call: ``body`` is the structured error the model reads."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.body: dict[str, Any] = {"ok": False, "error": code, "message": message, **details}


def reject(code: str, message: str, **details: Any) -> DebateError:
    """A `DebateError` with ``code`` (a stable snake_case name) and a hint."""
    return DebateError(code, message, **details)


def stamp(moment: dt.datetime) -> str:
    """Fixed-width UTC text with microseconds: sorts as text in time order."""
    global _LAST
    last = _LAST
    if moment is last[0]:
        # The same reading again: the commands an actor runs in one turn share one clock
        # reading (a post, the waits it wakes, the receipts queued behind it), so most
        # stamps repeat the one before. Identity, not equality: a datetime is immutable.
        return last[1]
    m = moment
    if m.tzinfo is not dt.UTC and m.utcoffset() != _NO_OFFSET:
        m = m.astimezone(dt.UTC)
    # %-formatting of the fields: 40% faster than isoformat (which formats the offset it
    # then had to cut off), several times faster than strftime; every post, check and
    # receipt stamps at least once.
    text = _STAMP % (m.year, m.month, m.day, m.hour, m.minute, m.second, m.microsecond)
    _LAST = (moment, text)  # one tuple: a reader in another thread sees a matching pair
    return text


_NO_OFFSET: Final = dt.timedelta(0)
_STAMP: Final = "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ"
_LAST: tuple[dt.datetime | None, str] = (None, "")


def parse_iso(text: str) -> dt.datetime:
    """A strict ISO-8601 UTC string (``...Z``) as an aware datetime.

    Raises:
        DebateError: ``invalid_timestamp`` if ``text`` is not strict UTC ISO-8601.
    """
    if not isinstance(text, str) or not ISO_RE.fullmatch(text):
        raise reject("invalid_timestamp", f"{text!r} is not ISO-8601 UTC (e.g. 2026-05-09T16:35Z)")
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise reject("invalid_timestamp", f"{text!r} is not a real date and time") from None


def normalise_ts(text: str) -> str:
    """``text`` (strict ISO-8601 UTC) in the stored fixed-width form."""
    return stamp(parse_iso(text))


def next_stamp(now: dt.datetime, last: str) -> str:
    """The authoritative ts of a new message: now, but always after ``last``."""
    current = stamp(now)
    if current > last:
        return current
    bumped = dt.datetime.fromisoformat(last.replace("Z", "+00:00")) + dt.timedelta(microseconds=1)
    return stamp(bumped)


def split_csv(text: str | None) -> list[str]:
    """Items of a comma-separated list, stripped, empties dropped, order kept, no repeats."""
    out: list[str] = []
    for item in (text or "").split(","):
        item = item.strip()
        if item and item not in out:
            out.append(item)
    return out


def check_role(role: str, field: str = "role") -> str:
    """``role`` if it has the role shape.

    Raises:
        DebateError: ``invalid_role``.
    """
    if not isinstance(role, str) or not ROLE_RE.fullmatch(role) or len(role) > 64:
        raise reject("invalid_role", f"{field} {role!r} must match {ROLE_RE.pattern}")
    return role


def check_uuid(value: str, field: str) -> str:
    """``value`` if it is a lowercase UUID.

    Raises:
        DebateError: ``invalid_id``.
    """
    if not isinstance(value, str) or not UUID_RE.fullmatch(value):
        raise reject("invalid_id", f"{field} must be a lowercase UUID")
    return value


def check_roster_role(role: str) -> str:
    """A declarable role: the role shape, and executors numbered EXECUTOR_1, EXECUTOR_2, ...

    Raises:
        DebateError: ``invalid_role`` or ``executor_role_not_numbered``.
    """
    check_role(role)
    if role.startswith("EXECUTOR") and not EXECUTOR_RE.fullmatch(role):
        raise reject("executor_role_not_numbered", f"{role}: use EXECUTOR_1, EXECUTOR_2, ...")
    return role


def parse_lane(lane: str) -> tuple[str, int]:
    """A lane (``p3`` or ``P3``) uppercased, with its rank (0 is the most urgent).

    Raises:
        DebateError: ``invalid_lane``.
    """
    upper = str(lane).strip().upper()
    if not LANE_RE.fullmatch(upper):
        raise reject("invalid_lane", f"lane {lane!r} must be one of P0..P7")
    return upper, int(upper[1])


#: Deepest nesting of a JSON text argument (``payload_json``, ``roles_json``, ...): a request's
#: own arguments may nest no deeper.
MAX_JSON_DEPTH: Final = MAX_DEPTH


def loads(text: str, field: str, code: str = "invalid_json") -> Any:
    """``text`` (the JSON text argument ``field``) decoded, as strictly as a request is.

    The request's own decoder, not ``json.loads``, which takes what no JSON reply can carry:
    a lone surrogate escape (``"\\ud800"``: its text could be stored but never sent back, and
    every read of the topic would fail), ``NaN`` and ``Infinity``, and ``1e999`` (read as
    infinity, stored as null).

    Raises:
        DebateError: ``code`` if it is not JSON (the message says where and why) or nests
            deeper than `MAX_JSON_DEPTH`.
    """
    deep = f"{field} nests deeper than {MAX_JSON_DEPTH} levels"
    # Each level opens a bracket, so a text with few brackets is shallow enough (nearly all);
    # the others are measured on their brackets before anything is decoded or walked.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and nested_deeper(
        bracket_shape(text), MAX_JSON_DEPTH
    ):
        raise reject(code, deep)
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise reject(code, f"{field} is not valid JSON: {decode_problem(text, exc)}") from None
    except RecursionError:  # brackets that never close, thousands deep: the decoder gave up
        raise reject(code, deep) from None
    return value


def parse_json_object(text: str, field: str) -> dict[str, Any]:
    """The JSON object in ``text``.

    Raises:
        DebateError: ``invalid_json`` if it is not JSON, nests too deep or is not an object.
    """
    value = loads(text, field)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        raise reject(
            "invalid_json",
            f"{field} must be a JSON object, and a string holding JSON arrived: the object was"
            " encoded twice (json.dumps of text that already was JSON); send the object's JSON"
            " text itself, encoded once",
        )
    if not isinstance(value, dict):
        raise reject("invalid_json", f"{field} must be a JSON object")
    return value


def initial_lane(metadata: dict[str, Any]) -> dict[str, Any]:
    """The priority lane a new topic must carry: ``priority_lane`` + ``priority_reason``, or
    ``conductor_priority: {lane, reason}``; returned as the stored ``conductor_priority``.

    Raises:
        DebateError: ``priority_lane_required`` or ``invalid_lane``.
    """
    nested = metadata.get("conductor_priority")
    if isinstance(nested, dict):
        lane, reason = nested.get("lane"), nested.get("reason")
    else:
        lane, reason = metadata.get("priority_lane"), metadata.get("priority_reason")
    if not isinstance(lane, str) or not isinstance(reason, str) or not reason.strip():
        raise reject(
            "priority_lane_required",
            "metadata_json must carry priority_lane (P0..P7) and a non-blank priority_reason",
        )
    upper, rank = parse_lane(lane)
    return {"lane": upper, "rank": rank, "reason": reason.strip()}


def check_transition(old: str, new: str) -> None:
    """Only the next forward state is a legal move.

    Raises:
        DebateError: ``illegal_transition``, whose message says what is wrong with the move
            (a skip names the states it skips; a repeat, a backward move, a move from the
            last state) and which move is allowed from ``old``.
    """
    allowed = TRANSITIONS.get(old)
    if allowed == new:
        return
    raise reject(
        "illegal_transition",
        _transition_problem(old, new, allowed),
        old_state=old,
        new_state=new,
        allowed=[allowed] if allowed else [],
    )


def _transition_problem(old: str, new: str, allowed: str | None) -> str:
    """What is wrong with the move ``old -> new``, and the move that is allowed instead."""
    chain = " -> ".join(STATES)
    if allowed is None:
        already = "already " if new == old else ""
        return f"the topic is {already}{old}: {old} is the last state ({chain}), no move is left"
    then = f"the only move from {old} is {old} -> {allowed}"
    if new == old:
        return f"the topic is already {old}; {then}"
    if new not in STATES:
        return f"{new} is not a lifecycle state ({chain}); {then}"
    if STATES.index(new) < STATES.index(old):
        return f"{old} -> {new} is backward: the lifecycle only moves forward ({chain}); {then}"
    skipped = STATES[STATES.index(old) + 1 : STATES.index(new)]
    return (
        f"{old} -> {new} skips {' and '.join(skipped)}: the lifecycle moves one state at a "
        f"time ({chain}), so {then}"
    )


def state_body(state: str, reason: str | None) -> str:
    """The body of the synthetic STATE message."""
    reason = " ".join((reason or "").split())
    return f"{state} [reason: {reason}]" if reason else state


def check_ooda(body: str) -> None:
    """A COMPACTION body must hold OBSERVE, ORIENT, DECIDE and ACT, in that order.

    Raises:
        DebateError: ``compaction_sections_missing``.
    """
    if not OODA_RE.search(body):
        raise reject(
            "compaction_sections_missing",
            "a COMPACTION body needs OBSERVE / ORIENT / DECIDE / ACT sections, in that order",
        )


def like_pattern(query: str) -> str:
    """A LIKE pattern matching ``query`` literally as a substring (escape character ``\\``)."""
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts_phrase(query: str) -> str:
    """An FTS5 phrase that matches ``query`` literally (quotes doubled, nothing special)."""
    return '"' + query.replace('"', '""') + '"'
