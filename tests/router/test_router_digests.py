"""The router's canonical JSON is RFC 8785 byte for byte, whichever encoder writes it.

`digests.canonical` encodes plain JSON with msgspec and leaves the rest to ``rfc8785``; every
event id, evidence digest and profile digest depends on the two agreeing, so any value must
give the reference library's bytes, or fail where it fails.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from agora.toolsets.router.digests import canonical, digest
from agora.toolsets.router.progress import evidence_digest
from agora.toolsets.router.sql import stamp

SAFE = 2**53 - 1

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-SAFE - 3, max_value=SAFE + 3),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(max_codepoint=0x7F)),
)
keys = st.one_of(
    st.text(max_size=6),
    st.text(alphabet=st.characters(min_codepoint=0xE000, max_codepoint=0x10FFFF), max_size=3),
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


def _reference(value: object) -> bytes | type[Exception]:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


def _ours(value: object) -> bytes | type[Exception]:
    try:
        return canonical(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


@settings(max_examples=600, deadline=None)
@given(value=values)
def test_canonical_is_rfc8785_for_any_json(value):
    assert _ours(value) == _reference(value)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": {"d": [True, None], "c": "x"}},  # nested keys sorted too
        {"\uffff": 1, "\U00010000": 2, "a": 3},  # UTF-16 order differs from code points
        {"é": 1, "e": 2, "z": 3},
        [SAFE, -SAFE, 0, -1],
        'quote " backslash \\ slash / nul \x00 del \x7f line \u2028 tab \t',
        {"k": "\ud800"},  # a lone surrogate has no canonical form
        [SAFE + 1],
        {"k": 1.0, "n": 1e21, "m": -0.0, "s": 5e-324},
        {1: "non-string key"},
        ("tuple", "of", "strings"),
    ],
)
def test_canonical_edge_cases_match_rfc8785(value):
    assert _ours(value) == _reference(value)


def test_digest_of_an_event_is_unchanged():
    # The id the router gave the first passing plan-check event of a run before msgspec
    # wrote plain values: a stored event id must keep resolving after an upgrade.
    event = {
        "workflow_run_id": "run-0123456789abcdef0123456789abcdef",
        "seq": 1,
        "phase_id": "plan",
        "observation": {"check_id": "plan-ready", "outcome": "passed"},
    }
    body = (
        b'{"observation":{"check_id":"plan-ready","outcome":"passed"},"phase_id":"plan",'
        b'"seq":1,"workflow_run_id":"run-0123456789abcdef0123456789abcdef"}'
    )
    assert canonical(event) == body
    assert digest(event) == "sha256:" + hashlib.sha256(body).hexdigest()
    refs = ["sha256:b", "sha256:a", "sha256:b"]
    assert (
        evidence_digest(refs)
        == "sha256:" + hashlib.sha256(rfc8785.dumps(sorted(set(refs)))).hexdigest()
    )


@pytest.mark.parametrize("offset", [0, 2, -5])
def test_a_stamp_is_fixed_width_utc_whatever_the_zone(offset):
    zone = dt.UTC if offset == 0 else dt.timezone(dt.timedelta(hours=offset))
    for micro in (0, 7, 999_999):
        when = dt.datetime(2026, 11, 30, 15, 0, 0, micro, tzinfo=zone)
        utc = when.astimezone(dt.UTC)
        assert stamp(when) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
