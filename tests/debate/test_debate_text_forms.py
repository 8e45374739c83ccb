"""The fast text forms keep the slow ones' exact shape: timestamps, ids, stored JSON."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agora.toolsets.debate.handlers.common import new_id, new_msg_id
from agora.toolsets.debate.rules import UUID_RE, stamp
from agora.toolsets.debate.sql.writes import _dump

MOMENTS = [
    pytest.param(dt.datetime(2026, 11, 30, 17, 5, 9, 42, tzinfo=dt.UTC), id="utc"),
    pytest.param(dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), id="whole-second"),
    pytest.param(
        dt.datetime(2026, 12, 31, 23, 30, 0, 999999, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        id="other-zone",
    ),
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_stamp_is_fixed_width_utc_with_microseconds(moment):
    assert stamp(moment) == moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert len(stamp(moment)) == 27


@given(
    st.datetimes(
        min_value=dt.datetime(2, 1, 1),
        max_value=dt.datetime(9998, 12, 31),
        timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=9))]),
    )
)
def test_stamp_is_isoformat_in_utc(moment):
    # Any aware moment, in UTC or not: the text isoformat gives, cut at the microseconds.
    utc = moment.astimezone(dt.UTC)
    assert stamp(moment) == utc.isoformat(timespec="microseconds")[:26] + "Z"


def test_new_ids_are_random_version_4_uuids():
    ids = {new_id() for _ in range(2000)}
    assert len(ids) == 2000
    for text in ids:
        assert UUID_RE.fullmatch(text)
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"b": 1, "a": [None, True, 2.5, "x"], "c": {"z": 1, "y": 2}}, id="nested"),
        pytest.param(["role:A", "session:5e55"], id="list"),
        pytest.param({}, id="empty"),
    ],
)
def test_stored_json_is_compact_with_sorted_keys(value):
    assert _dump(value) == json.dumps(value, separators=(",", ":"), sort_keys=True)
    assert json.loads(_dump({"é": "ü"})) == {"é": "ü"}


def test_message_ids_are_time_ordered_version_7_uuids():
    before = time.time_ns() // 1_000_000
    ids = [new_msg_id() for _ in range(2000)]
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == 2000
    for text in ids:
        assert UUID_RE.fullmatch(text)
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (7, uuid.RFC_4122)
        assert str(parsed) == text
        assert before <= parsed.int >> 80 <= after  # the leading 48 bits: Unix milliseconds
    stamps = [uuid.UUID(text).int >> 80 for text in ids]
    assert stamps == sorted(stamps)
