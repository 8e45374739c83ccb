"""Submitted values: every format's parsing, canonical form and refusals."""

from __future__ import annotations

import pytest

from agora.toolsets.chamber.lock_order import SLOTS
from agora.toolsets.chamber.values import ValueFormat, ValueFormatError, parse_value

ORDER = ValueFormat("order", items=("oslo", "lima", "cairo"))
SEQ = ValueFormat("sequence", items=("red", "green"), length=3)
PLACE = ValueFormat(
    "placement", items=("awl", "saw", "file", "rasp", "tongs", "gauge"), slots=SLOTS
)
BINS = ValueFormat("bins", items=("jug", "bowl"), slots=("east", "west"))
DIAL = ValueFormat("digits", length=4, low=1, high=6)
NUMBER = ValueFormat("number", low=100, high=999)
TIME = ValueFormat("time")


@pytest.mark.parametrize(
    ("fmt", "value", "canonical"),
    [
        pytest.param(TIME, "07:05", ("07:05",), id="time"),
        pytest.param(TIME, " 7:05 ", ("07:05",), id="time-short-hour"),
        pytest.param(NUMBER, "517", ("517",), id="number"),
        pytest.param(DIAL, "3512", ("3", "5", "1", "2"), id="dial"),
        pytest.param(DIAL, "3-5-1-2", ("3", "5", "1", "2"), id="dial-dashes"),
        pytest.param(DIAL, ["3", "5", "1", "2"], ("3", "5", "1", "2"), id="dial-array"),
        pytest.param(ORDER, ["Lima", "oslo", "CAIRO"], ("lima", "oslo", "cairo"), id="order"),
        pytest.param(ORDER, "lima, oslo, cairo", ("lima", "oslo", "cairo"), id="order-string"),
        pytest.param(SEQ, ["red", "red", "green"], ("red", "red", "green"), id="sequence"),
        pytest.param(BINS, ["bowl=west", "jug = east"], ("east", "west"), id="bins"),
        pytest.param(BINS, ["west:bowl", "east=jug"], ("east", "west"), id="bins-reversed"),
        pytest.param(
            PLACE,
            [f"{s}={n}" for s, n in zip(SLOTS, PLACE.items, strict=True)][::-1],
            PLACE.items,
            id="placement",
        ),
    ],
)
def test_well_formed_values_parse_to_their_canonical_form(fmt, value, canonical):
    assert parse_value(fmt, value) == canonical


@pytest.mark.parametrize(
    ("fmt", "value"),
    [
        pytest.param(TIME, None, id="missing"),
        pytest.param(TIME, "24:00", id="time-hour"),
        pytest.param(TIME, "12:60", id="time-minute"),
        pytest.param(TIME, ["12:00"], id="time-array"),
        pytest.param(NUMBER, "12", id="number-range"),
        pytest.param(NUMBER, "five", id="number-words"),
        pytest.param(DIAL, "351", id="dial-short"),
        pytest.param(DIAL, "3517", id="dial-digit"),
        pytest.param(ORDER, ["lima", "oslo"], id="order-missing"),
        pytest.param(ORDER, ["lima", "oslo", "oslo"], id="order-repeat"),
        pytest.param(ORDER, ["lima", "oslo", "rome"], id="order-unknown"),
        pytest.param(SEQ, ["red", "red"], id="sequence-short"),
        pytest.param(SEQ, ["red", "red", "blue"], id="sequence-unknown"),
        pytest.param(BINS, ["jug=east"], id="bins-missing"),
        pytest.param(BINS, ["jug=east", "jug=west"], id="bins-repeat"),
        pytest.param(BINS, ["jug=east", "bowl=north"], id="bins-unknown-bin"),
        pytest.param(BINS, ["jug", "bowl=east"], id="bins-no-pair"),
        pytest.param(PLACE, [f"top-left={n}" for n in PLACE.items], id="placement-slot-twice"),
    ],
)
def test_malformed_values_are_refused(fmt, value):
    with pytest.raises(ValueFormatError):
        parse_value(fmt, value)


def test_format_descriptions_never_show_an_example_value():
    for fmt in (TIME, NUMBER, DIAL, ORDER, SEQ, PLACE, BINS):
        text = fmt.describe()
        assert "e.g." not in text
        assert "example" not in text
