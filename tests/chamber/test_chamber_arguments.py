"""Arguments refused by the inputSchema still get a chamber envelope with a contract code."""

from __future__ import annotations

import pytest
from chamber_agent import ENTRY, VALIDATORS

from agora.mcp.contracts import load_contract
from agora.mcp.validation import compile_validator
from agora.toolsets.chamber import toolset
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.replies import argument_rejection, not_found

HANDLE = "chl-0123456789abcdef"
INPUTS = {name: spec.input_schema for name, spec in load_contract("chamber").tools.items()}


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        pytest.param("enter_open_challenge", {**ENTRY, "product": "GPT 5"}, "product_id_invalid",
                     id="product-pattern"),
        pytest.param("enter_open_challenge", {k: v for k, v in ENTRY.items() if k != "host"}
                     | {"host_claim": "cursor"}, "host_required", id="host-claim-only"),
        pytest.param("enter_open_challenge", {k: v for k, v in ENTRY.items() if k != "model_claim"},
                     "identity_incomplete", id="model-missing"),
        pytest.param("enter_open_challenge", {**ENTRY, "suite": "chambre-x"}, "suite_unknown",
                     id="suite-enum"),
        pytest.param("enter_open_challenge", {**ENTRY, "origin": "teleported"}, "identity_invalid",
                     id="origin-enum"),
        pytest.param("enter_open_challenge", {**ENTRY, "preflight": {"tools_visible": "yes"}},
                     "identity_invalid", id="preflight-type"),
        pytest.param("enter_open_challenge", {**ENTRY, "email": "a@b.c"}, "value_format_invalid",
                     id="unknown-field"),
        pytest.param("chamber_action", {"challenge_handle": "sia_0123", "op": "look"},
                     "attempt_not_found", id="sia-handle"),
        pytest.param("chamber_action", {"challenge_handle": HANDLE, "op": "dance"},
                     "op_not_allowed", id="op-enum"),
        pytest.param("chamber_action", {"challenge_handle": HANDLE, "op": "inspect",
                                        "object": "x" * 41}, "object_not_available", id="object"),
        pytest.param("chamber_action", {"challenge_handle": HANDLE, "op": "submit_bolt",
                                        "value": ["1"] * 17}, "value_format_invalid", id="value"),
        pytest.param("chamber_action", {"challenge_handle": HANDLE, "op": "look",
                                        "expected_action_index": 65}, "value_format_invalid",
                     id="index-range"),
        pytest.param("call_for_help", {"challenge_handle": HANDLE, "ally": "Claude 5"},
                     "product_id_invalid", id="ally"),
        pytest.param("seal_attempt", {"challenge_handle": HANDLE, "next_candidate": "x" * 81},
                     "identity_invalid", id="next-candidate"),
        pytest.param("observe_chamber", {"challenge_handle": HANDLE}, "object_not_available",
                     id="observe-object-missing"),
    ],
)  # fmt: skip
def test_schema_refusals_speak_the_chamber_vocabulary(tool, args, code):
    problems = compile_validator(INPUTS[tool]).errors(args)
    assert problems
    body = argument_rejection(problems)
    assert body["code"] == code
    assert body["code"] in default_contract().error_codes
    VALIDATORS[tool].validate(body)


def test_the_toolset_hands_its_rejection_builder_to_the_server():
    assert toolset().reject_issues is argument_rejection


def test_a_rejection_without_problems_is_still_an_envelope():
    assert argument_rejection([])["code"] == "value_format_invalid"


def _rejection(tool: str, args: dict) -> dict:
    return argument_rejection(compile_validator(INPUTS[tool]).errors(args))


def test_a_missing_ally_is_named_not_the_entry_identity():
    body = _rejection("call_for_help", {"challenge_handle": HANDLE})
    assert body["code"] in default_contract().error_codes
    assert body["code"] != "identity_incomplete"
    assert "ally" in body["recovery_hint"]
    assert "provider_claim" not in body["recovery_hint"]


def test_a_missing_handle_is_said_to_be_missing():
    body = _rejection("chamber_action", {"op": "look"})
    assert body["code"] == "attempt_not_found"
    assert "missing" in body["recovery_hint"]
    assert "challenge_handle" in body["recovery_hint"]
    assert "sia_" not in body["recovery_hint"]


def test_a_number_sent_as_a_json_number_is_told_to_send_its_digits_as_a_string():
    # The lock says "a whole number ... written in digits"; value is a string or an array.
    args = {"challenge_handle": HANDLE, "op": "submit_number", "value": 1430}
    body = _rejection("chamber_action", args)
    assert body["code"] == "value_format_invalid"
    assert "got integer" in body["error"]
    assert "JSON string" in body["recovery_hint"]
    assert "digits" in body["recovery_hint"]


def test_an_op_the_schema_refuses_is_told_where_the_allowed_ops_are_for_free():
    # The schema's refusal knows no attempt, so it cannot list the allowed ops itself.
    body = _rejection("chamber_action", {"challenge_handle": HANDLE, "op": "open"})
    assert body["code"] == "op_not_allowed"
    assert "observe_chamber shows them and spends no action" in body["recovery_hint"]


@pytest.mark.parametrize(
    "hint",
    [
        pytest.param(_rejection("chamber_action", {"op": "look"})["recovery_hint"], id="missing"),
        pytest.param(_rejection("chamber_action", {"challenge_handle": "sia_0123", "op": "look"})
                     ["recovery_hint"], id="malformed"),
        pytest.param(not_found(HANDLE).body["recovery_hint"], id="unknown"),
        pytest.param(not_found("sia_0123").body["recovery_hint"], id="sia"),
    ],
)  # fmt: skip
def test_a_handle_hint_names_the_field_entry_returns(hint):
    # enter_open_challenge returns the handle as attempt_handle and the other tools take it as
    # challenge_handle: a hint naming only challenge_handle sent an agent looking for a field
    # of that name in the entry's reply.
    assert "attempt_handle" in hint
    assert "challenge_handle" in hint
    assert len(hint) <= 240  # the contract's recovery_hint maxLength


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param({"next_candidate": "x"}, "next_candidate", id="next-candidate"),
        pytest.param({"preflight": {"tools_visible": True, "foo": 1}}, "preflight.foo",
                     id="preflight-field"),
        pytest.param({"email": "a@b.c"}, "email", id="email"),
    ],
)  # fmt: skip
def test_an_unknown_field_gets_one_code_retryable_and_a_hint_to_drop_it(extra, field):
    """Tester finding: next_candidate at entry got identity_invalid, retryable false and a
    warning about emails and secrets, while email got value_format_invalid, retryable."""
    body = _rejection("enter_open_challenge", {**ENTRY, **extra})
    assert (body["code"], body["retryable"]) == ("value_format_invalid", True)
    assert body["recovery_hint"].startswith(f"Drop {field}: it is not an argument here")
    assert "secrets" not in body["recovery_hint"]
    VALIDATORS["enter_open_challenge"].validate(body)
