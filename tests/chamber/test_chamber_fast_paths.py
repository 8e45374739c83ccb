"""The entry path's shortcuts give exactly what the long way gives.

Entering is on the hot path of a burst of agents, so a few of its steps remember or format
by hand: admitted entries (`EntryChecks`), the stored identity JSON, the fixed-width
timestamps. Each must answer byte for byte as before, refuse what was refused, and never
let one caller's copy change another's.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agora.errors import ToolError
from agora.toolsets.chamber import store
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.identity import EntryChecks, validate_entry
from agora.toolsets.chamber.schema import stamp, unstamp

BASE = {
    "provider_claim": "acme",
    "model_claim": "acme-2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
    "suite": "chambre-chrono-v0",
}


def test_admitted_entries_are_remembered_but_each_caller_gets_its_own_identity():
    checks = EntryChecks(default_contract())
    first = checks(BASE, operator=False)
    assert first == validate_entry(default_contract(), BASE, operator=False)
    first.identity["product"] = "changed-by-a-caller"
    again = checks(dict(BASE), operator=False)
    assert again.identity["product"] == "gpt-5.6-sol"
    assert again == validate_entry(default_contract(), BASE, operator=False)


def test_a_remembered_entry_does_not_admit_what_differs_from_it():
    checks = EntryChecks(default_contract())
    summoned = {**BASE, "origin": "summoned"}
    assert checks(summoned, operator=True).assurance != checks(BASE, operator=False).assurance
    # The same arguments from a caller who is not an operator are still refused.
    with pytest.raises(ToolError) as info:
        checks(summoned, operator=False)
    assert info.value.body["code"] == "identity_invalid"
    # Refusals are checked every time, never remembered as admissions.
    with pytest.raises(ToolError):
        checks({**BASE, "host": "someone@example.com"}, operator=False)
    with pytest.raises(ToolError):
        checks({**BASE, "host": "someone@example.com"}, operator=False)
    # An unhashable value is refused as validate_entry refuses it.
    with pytest.raises(ToolError) as info:
        checks({**BASE, "host": ["cursor"]}, operator=False)
    assert info.value.body["code"] == "identity_invalid"
    preflight = {**BASE, "preflight": {"read_notice": True}}
    assert checks(preflight, operator=False).preflight == {"read_notice": True}


def test_the_cache_stays_bounded():
    checks = EntryChecks(default_contract(), size=3)
    for n in range(10):
        checks({**BASE, "model_claim": f"m{n}"}, operator=False)
    assert len(checks._admitted) <= 3


def test_identity_json_is_the_sorted_json_whatever_the_order():
    identity = {"product": "p", "host": "h", "model_claim": "m", "provider_claim": "é"}
    reordered = dict(reversed(list(identity.items())))
    expected = json.dumps(identity, sort_keys=True)
    assert store.identity_json(identity) == expected
    assert store.identity_json(reordered) == expected
    assert store.identity_json(identity) is store.identity_json(dict(identity))


@given(st.datetimes(timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-7))])))
def test_stamps_are_strftimes_text(when):
    text = stamp(when)
    assert text == when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if when.astimezone(dt.UTC).year >= 1000:
        assert unstamp(text) == when
