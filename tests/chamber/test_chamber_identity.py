"""Entry validation: the contract's identity codes, in the contract's vocabulary."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agora.errors import ToolError
from agora.toolsets.chamber.contract import contract_from_data, default_contract
from agora.toolsets.chamber.identity import (
    HOST_NAMES,
    check_entry_notice,
    looks_personal,
    validate_entry,
)

BASE = {
    "provider_claim": "acme",
    "model_claim": "acme-2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}


def entry(**changes):
    args = {**BASE, **changes}
    return {k: v for k, v in args.items() if v is not None}


def code_of(args, operator=False):
    with pytest.raises(ToolError) as info:
        validate_entry(default_contract(), args, operator=operator)
    body = info.value.body
    assert body["ok"] is False
    assert body["retryable"] is False
    assert body["recovery_hint"]
    return body["code"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(entry(suite="chambre-nope-v0"), "suite_unknown", id="suite"),
        pytest.param(entry(product="GPT 5"), "product_id_invalid", id="product-pattern"),
        pytest.param(entry(product="gpt-5-"), "product_id_invalid", id="product-trailing"),
        pytest.param(entry(product="gpt..5"), "product_id_invalid", id="product-dots"),
        pytest.param(entry(product=None), "identity_incomplete", id="product-missing"),
        pytest.param(entry(product="cursor"), "host_is_not_a_product", id="host-as-product"),
        pytest.param(entry(product="grok.com"), "host_is_not_a_product", id="grok.com"),
        pytest.param(entry(product="myide", host="myide"), "host_is_not_a_product", id="same"),
        pytest.param(entry(host=None), "host_required", id="host-missing"),
        pytest.param(entry(host="   "), "host_required", id="host-blank"),
        pytest.param(entry(host_claim="vscode"), "claim_conflict", id="host-conflict"),
        pytest.param(
            entry(origin="relayed", origin_claim="uninvited"),
            "claim_conflict",
            id="origin-conflict",
        ),
        pytest.param(entry(provider_claim=" "), "identity_incomplete", id="provider-blank"),
        pytest.param(entry(model_claim=None), "identity_incomplete", id="model-missing"),
        pytest.param(entry(model_claim="me@example.com"), "identity_invalid", id="email"),
        pytest.param(entry(host="https://cursor.sh"), "identity_invalid", id="url"),
        pytest.param(entry(host_version="www.example.org"), "identity_invalid", id="www"),
        pytest.param(
            entry(product_plan="sk-ant-api03-abcdefghijklmnop"), "identity_invalid", id="api-key"
        ),
        pytest.param(
            entry(provider_claim="ghp_abcdefghijklmnop1234"), "identity_invalid", id="github-token"
        ),
        pytest.param(
            entry(model_claim="0123456789abcdef0123456789abcdef"),
            "identity_invalid",
            id="hex-secret",
        ),
        pytest.param(entry(model_claim="call +33 6 12 34 56 78"), "identity_invalid", id="phone"),
        pytest.param(entry(model_claim="token=abc"), "identity_invalid", id="token"),
        pytest.param(entry(model_claim="a\nb"), "identity_invalid", id="control"),
        pytest.param(entry(host="john\uff20example.com"), "identity_invalid", id="full-width-@"),
        pytest.param(
            entry(model_claim="\uff4a\uff4f\uff48\uff4e@example.com"),
            "identity_invalid",
            id="full-width-email",
        ),
        pytest.param(entry(model_claim="x\u202etxt.exe"), "identity_invalid", id="bidi-override"),
        pytest.param(entry(host="a\u200bb"), "identity_invalid", id="zero-width-space"),
        pytest.param(entry(model_claim="a\u2066b\u2069"), "identity_invalid", id="bidi-isolate"),
        pytest.param(entry(model_claim="a\ufeffb"), "identity_invalid", id="byte-order-mark"),
        pytest.param(entry(model_claim="a\x85b"), "identity_invalid", id="c1-control"),
        pytest.param(entry(model_claim="x" * 121), "identity_invalid", id="too-long"),
        pytest.param(entry(origin="summoned"), "identity_invalid", id="summoned-community"),
        pytest.param(entry(origin="teleported"), "identity_invalid", id="origin-unknown"),
    ],
)
def test_bad_entries_get_the_contract_code(args, code):
    assert code_of(args) == code


def test_unknown_is_accepted_everywhere():
    d = validate_entry(
        default_contract(),
        {"provider_claim": "unknown", "model_claim": "unknown", "product": "unknown",
         "host": "unknown"},
        operator=False,
    )  # fmt: skip
    assert d.identity["product"] == "unknown"
    assert d.assurance == "participant_claimed"
    assert d.suite.id == "chambre-chrono-v0"


def test_host_claim_alone_or_matching_is_the_host():
    args = entry(host=None, host_claim="Cursor")
    assert validate_entry(default_contract(), args, operator=False).identity["host"] == "Cursor"
    same = entry(host="cursor", host_claim="CURSOR", origin="relayed", origin_claim="relayed")
    d = validate_entry(default_contract(), same, operator=False)
    assert d.identity["origin"] == "relayed"


def test_summoned_is_for_operators_and_earns_controlled_assurance():
    d = validate_entry(default_contract(), entry(origin_claim="summoned"), operator=True)
    assert d.assurance == "scoreia_controlled"
    assert d.identity["origin"] == "summoned"


def test_preflight_is_recorded_never_judged():
    pre = {"tools_visible": False, "publication_understood": False}
    d = validate_entry(default_contract(), entry(preflight=pre), operator=False)
    assert d.preflight == pre


def test_versions_and_model_names_are_not_mistaken_for_secrets():
    for text in (
        "1.2.3",
        "2025.11.25-1",
        "claude-opus-4-5-20251101",
        "grok.com",
        "v0.45.2 (arm64)",
    ):
        assert not looks_personal(text), text


def test_known_hosts_include_the_contract_examples():
    assert {
        "cursor",
        "vscode",
        "claude-desktop",
        "hermes-agent",
        "openclaw",
        "grok.com",
    } <= HOST_NAMES


def test_a_contract_without_the_notice_admits_nobody():
    doc = copy.deepcopy(dict(default_contract().document))
    del doc["identity"]["publication_notice"]
    with pytest.raises(ToolError) as info:
        check_entry_notice(contract_from_data(doc))
    assert info.value.body["code"] == "publication_notice_missing"
    assert check_entry_notice(default_contract())["fr"]


def outcome(args) -> str:
    try:
        validate_entry(default_contract(), args, operator=False)
    except ToolError as exc:
        return exc.body["code"]
    return "admitted"


@given(st.text(max_size=60))
def test_validation_never_crashes_on_any_text(text):
    for name in ("product", "host", "model_claim", "provider_claim", "product_plan"):
        assert outcome(entry(**{name: text})) in default_contract().error_codes | {"admitted"}


def test_a_host_conflict_says_host_is_the_field_to_send():
    # The schema requires host: "send host or host_claim once" promised what it refuses.
    with pytest.raises(ToolError) as info:
        validate_entry(default_contract(), entry(host_claim="vscode"), operator=False)
    assert info.value.body["recovery_hint"] == (
        "Send host; host_claim, if you send it too, must be the same value."
    )
    with pytest.raises(ToolError) as info:
        validate_entry(
            default_contract(), entry(origin="relayed", origin_claim="uninvited"), operator=False
        )
    assert "Send origin or origin_claim once" in info.value.body["recovery_hint"]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("\u062f\u0633\u062a\u06cc\u0627\u0631\u200c\u0645\u0646", id="persian-zwnj"),
        pytest.param("\u0915\u094d\u200d\u0937", id="devanagari-zwj"),
        pytest.param("bot \U0001f468\u200d\U0001f469\u200d\U0001f467", id="emoji-zwj-sequence"),
        pytest.param("love \u2764\ufe0f", id="emoji-variation-selector"),
        pytest.param("\u6a21\u578b\u4e00\u53f7", id="cjk"),
    ],
)
def test_joiners_and_variation_selectors_are_part_of_a_name(name):
    d = validate_entry(default_contract(), entry(model_claim=name), operator=False)
    assert d.identity["model_claim"] == name


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a\U000e0020b", id="tag-character"),
        pytest.param("a\u2028b", id="line-separator"),
        pytest.param("a\u180eb", id="mongolian-vowel-separator"),
        pytest.param("sk\u200d-abcdefghijklmnop", id="joiner-inside-a-secret"),
        pytest.param("call +1 555\u200c 123 4567", id="joiner-inside-a-phone-number"),
    ],
)
def test_hidden_text_and_secrets_split_by_joiners_are_refused(name):
    assert code_of(entry(model_claim=name)) == "identity_invalid"
