"""Transcript records: the fast encoder must give exactly the RFC 8785 bytes."""

from __future__ import annotations

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from agora.toolsets.chamber.transcript import canonical_record

_scalars = (
    st.text(max_size=12)
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.lists(st.text(max_size=8), max_size=4)
)
_records = st.dictionaries(st.text(min_size=1, max_size=8), _scalars, max_size=6)


@given(_records)
def test_records_encode_to_their_rfc8785_bytes(record):
    try:
        expected = rfc8785.dumps(record)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        with pytest.raises((rfc8785.CanonicalizationError, UnicodeEncodeError)):
            canonical_record(record)
        return
    assert canonical_record(record) == expected


@pytest.mark.parametrize(
    "record",
    [
        pytest.param({"at": "2026-11-30T12:00:00Z", "i": 0, "op": "look"}, id="look"),
        pytest.param(
            {"i": 3, "op": "submit_order", "value": ["b", "a"], "accepted": False}, id="submit"
        ),
        pytest.param({"op": "inspect", "object": "caf\u00e9", "i": 1}, id="non-ascii"),
        pytest.param({"op": 'x\u2028\n"\\', "i": 2**53 - 1}, id="escapes-and-big-int"),
    ],
)
def test_typical_and_awkward_records(record):
    assert canonical_record(record) == rfc8785.dumps(record)
